//! Observability as operators run it (issue 38 item 4): a real Prometheus
//! (Debian's `prometheus`, `.ci/run` installs it) in the proxy's namespace
//! scrapes the daemon on loopback every second while clients relay through
//! it, with `contrib/prometheus-alerts.yml` loaded. Then, through
//! Prometheus' HTTP API:
//! * the scrape target is up;
//! * every query of every panel of `contrib/grafana-dashboard.json`
//!   (Grafana's `$__rate_interval` as `1m`) evaluates without error and
//!   returns data;
//! * every alert rule is healthy as Prometheus evaluated it, its query
//!   evaluates, and every series it reads has data (a rule that does not
//!   fire returns nothing by design);
//! * `promtool check rules` passes the rules file and `promtool check
//!   metrics` finds nothing to say about a live scrape (the naming guide's
//!   lint: `_total` counters, base units; the OpenMetrics scrape put in
//!   the text format promtool reads).
//!
//! Prometheus is stopped at the end.
//!
//! `cargo test -p pep-daemon --test root prometheus:: -- --include-ignored --nocapture`

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration as StdDuration, Instant};

use common::*;
use pep_lab::{netns, Lab};

const METRICS: &str = "127.0.0.1:9187";
const PROM: &str = "127.0.0.1:9390";
const PORT: u16 = 7400;
/// Clients at once; more than `max_per_client`, so some are refused.
const CLIENTS: usize = 12;
const MAX_PER_CLIENT: usize = 8;

fn lab() -> Lab {
    wired_three("dmn-prom")
}

fn contrib(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../contrib")
        .join(name)
}

/// Stops Prometheus when dropped, whatever happened.
struct Prometheus(Child);

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_prometheus(ns: &str, dir: &Path) -> Prometheus {
    let cfg = dir.join("prometheus.yml");
    std::fs::write(
        &cfg,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             rule_files:\n  - {}\n\
             scrape_configs:\n  - job_name: pep\n    static_configs:\n      - targets: [\"{METRICS}\"]\n",
            contrib("prometheus-alerts.yml").display()
        ),
    )
    .unwrap();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let child = Command::new("ip")
        .args(["netns", "exec", ns, "prometheus"])
        .arg(format!("--config.file={}", cfg.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={PROM}"))
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("prometheus: install Debian's prometheus package (.ci/run does)");
    Prometheus(child)
}

fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// GET `path` from `addr` inside namespace `ns`; the body.
fn get(ns: &str, addr: &str, path: &str) -> Result<String, String> {
    let to: SocketAddr = addr.parse().unwrap();
    let mut s = netns::in_netns(ns, || {
        TcpStream::connect_timeout(&to, StdDuration::from_secs(5))
            .map_err(|e| pep_lab::LabError::Traffic(e.to_string()))
    })
    .map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(StdDuration::from_secs(10)))
        .unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").map_err(|e| e.to_string())?;
    let mut r = Vec::new();
    s.read_to_end(&mut r).map_err(|e| e.to_string())?;
    let r = String::from_utf8_lossy(&r).to_string();
    match r.split_once("\r\n\r\n") {
        Some((head, body))
            if head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200") =>
        {
            Ok(body.to_string())
        }
        _ => Err(format!("GET {path}: {}", r.lines().next().unwrap_or(""))),
    }
}

/// Evaluates `q` now; the number of series it returns.
fn query(ns: &str, q: &str) -> Result<usize, String> {
    let body = get(ns, PROM, &format!("/api/v1/query?query={}", encode(q)))?;
    let v: serde_json::Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
    if v["status"] != "success" {
        return Err(format!("{q}: {body}"));
    }
    Ok(v["data"]["result"].as_array().map_or(0, |r| r.len()))
}

/// The metric names a PromQL expression reads.
fn series_names(q: &str) -> Vec<String> {
    let mut names: Vec<String> = q
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("pep_") || w.starts_with("process_") || *w == "up")
        .map(String::from)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// An OpenMetrics exposition as the 0.0.4 text format `promtool check
/// metrics` reads (Debian's promtool 2.42 parses only that): a counter
/// family's HELP and TYPE named as its `_total` samples, no `# UNIT`, no
/// `# EOF`. The samples themselves are untouched, so the lint still sees
/// what Prometheus stores.
fn text_format(openmetrics: &str) -> String {
    let mut counters = Vec::new();
    for l in openmetrics.lines() {
        if let Some(name) = l
            .strip_prefix("# TYPE ")
            .and_then(|t| t.strip_suffix(" counter"))
        {
            counters.push(name.to_string());
        }
    }
    let mut out = String::new();
    for l in openmetrics.lines() {
        if l.starts_with("# UNIT ") || l == "# EOF" {
            continue;
        }
        let mut line = l.to_string();
        for kind in ["# HELP ", "# TYPE "] {
            if let Some(rest) = l.strip_prefix(kind) {
                let name = rest.split(' ').next().unwrap_or("");
                if counters.iter().any(|c| c == name) {
                    line = format!("{kind}{name}_total{}", &rest[name.len()..]);
                }
            }
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

#[test]
#[ignore = "needs root"]
fn prometheus_scrapes_and_every_panel_and_alert_query_has_data() {
    let _g = root_test("prometheus");
    for args in [
        vec!["check", "rules"],
        vec!["--version"], // present before anything starts
    ] {
        let mut c = Command::new("promtool");
        c.args(&args);
        if args[0] == "check" {
            c.arg(contrib("prometheus-alerts.yml"));
        }
        let out = c.output().expect("promtool (Debian's prometheus package)");
        assert!(
            out.status.success(),
            "promtool {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let lab = lab();
    let n = nodes(&lab);
    let cfg = config(
        &proxy_if(0),
        &format!("{}/32", n.client.addr),
        &format!(
            "metrics = \"{METRICS}\"\nmemory_budget = \"2GiB\"\nmax_per_client = {MAX_PER_CLIENT}"
        ),
    );
    let daemon = start_proxy(&n.proxy, &cfg).expect("daemon");
    let dir = tempfile::tempdir().unwrap();
    let prom = start_prometheus(&n.proxy.netns, dir.path());

    let l = listen(&n.server, PORT);
    let stop = AtomicBool::new(false);
    let (done, refused) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let t0 = Instant::now();
    let mut problems = Vec::new();
    let mut checked = 0;
    std::thread::scope(|s| {
        // The server: 1 MiB to each connection, over about half a second.
        s.spawn(|| {
            for c in l.incoming() {
                if stop.load(Relaxed) {
                    return;
                }
                let Ok(mut c) = c else { continue };
                std::thread::spawn(move || {
                    let chunk = vec![7u8; 64 * 1024];
                    for _ in 0..16 {
                        if c.write_all(&chunk).is_err() {
                            return;
                        }
                        std::thread::sleep(StdDuration::from_millis(30));
                    }
                });
            }
        });
        for _ in 0..CLIENTS {
            let (ns, stop, done, refused) = (&n.client.netns, &stop, &done, &refused);
            let to = SocketAddr::from((n.server.addr, PORT));
            s.spawn(move || {
                netns::enter(ns).unwrap();
                while !stop.load(Relaxed) {
                    let r = TcpStream::connect_timeout(&to, StdDuration::from_secs(5)).and_then(
                        |mut c| {
                            let mut v = Vec::new();
                            c.read_to_end(&mut v).map(|_| v.len())
                        },
                    );
                    match r {
                        Ok(n) if n == 1 << 20 => done.fetch_add(1, Relaxed),
                        _ => refused.fetch_add(1, Relaxed),
                    };
                    // A refused client backs off a little.
                    std::thread::sleep(StdDuration::from_millis(50));
                }
            });
        }

        // Whatever fails below, the traffic stops (or the scope would wait
        // for it forever).
        let checks = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // Scraped for a while, with traffic: until the target is up and
            // every rule has been evaluated, and at least 15 s.
            let ready = wait_for(60, || {
                let rules_ok = get(&n.proxy.netns, PROM, "/api/v1/rules")
                    .ok()
                    .and_then(|b| serde_json::from_str::<serde_json::Value>(&b).ok())
                    .is_some_and(|v| {
                        let rules: Vec<&serde_json::Value> = v["data"]["groups"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .flat_map(|g| g["rules"].as_array().into_iter().flatten())
                            .collect();
                        !rules.is_empty() && rules.iter().all(|r| r["health"] != "unknown")
                    });
                rules_ok && t0.elapsed() > StdDuration::from_secs(15)
            });
            assert!(
                ready,
                "Prometheus did not evaluate the rules: {}",
                std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default()
            );
            let ns = &n.proxy.netns;

            // The target.
            let targets = get(ns, PROM, "/api/v1/targets").unwrap();
            let v: serde_json::Value = serde_json::from_str(&targets).unwrap();
            let t = &v["data"]["activeTargets"][0];
            if t["health"] != "up" {
                problems.push(format!("scrape target: {t}"));
            }

            // Every dashboard panel's every query: no error, some data.
            let dash: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(contrib("grafana-dashboard.json")).unwrap(),
            )
            .unwrap();
            for p in dash["panels"].as_array().unwrap() {
                for target in p["targets"].as_array().unwrap() {
                    let q = target["expr"]
                        .as_str()
                        .unwrap()
                        .replace("$__rate_interval", "1m");
                    checked += 1;
                    match query(ns, &q) {
                        Ok(0) => problems.push(format!("panel {:?}: no data for {q}", p["title"])),
                        Ok(_) => {}
                        Err(e) => problems.push(format!("panel {:?}: {e}", p["title"])),
                    }
                }
            }

            // Every alert rule: healthy as evaluated, its query evaluates, its
            // series have data.
            let rules = get(ns, PROM, "/api/v1/rules").unwrap();
            let v: serde_json::Value = serde_json::from_str(&rules).unwrap();
            let mut alerts = 0;
            for g in v["data"]["groups"].as_array().unwrap() {
                for r in g["rules"].as_array().unwrap() {
                    alerts += 1;
                    let (name, q) = (r["name"].as_str().unwrap(), r["query"].as_str().unwrap());
                    if r["health"] != "ok" {
                        problems.push(format!("rule {name}: {} {}", r["health"], r["lastError"]));
                    }
                    checked += 1;
                    if let Err(e) = query(ns, q) {
                        problems.push(format!("rule {name}: {e}"));
                    }
                    for s in series_names(q) {
                        match query(ns, &s) {
                            Ok(0) => problems.push(format!("rule {name}: no data for {s}")),
                            Ok(_) => {}
                            Err(e) => problems.push(format!("rule {name}: {s}: {e}")),
                        }
                    }
                }
            }
            assert_eq!(alerts, 11, "the rules file has 11 rules");

            // The exposition itself, linted.
            let text = get(ns, METRICS, "/metrics").unwrap();
            let mut lint = Command::new("promtool")
                .args(["check", "metrics"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            lint.stdin
                .take()
                .unwrap()
                .write_all(text_format(&text).as_bytes())
                .unwrap();
            let out = lint.wait_with_output().unwrap();
            let said = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            if !out.status.success() || !said.trim().is_empty() {
                problems.push(format!("promtool check metrics: {said}"));
            }
        }));

        stop.store(true, Relaxed);
        let _ = netns::in_netns(&n.server.netns, || {
            let _ = TcpStream::connect((n.server.addr, PORT));
            Ok(())
        });
        if let Err(p) = checks {
            std::panic::resume_unwind(p);
        }
    });
    drop(prom);
    let m = daemon.metrics().clone();
    daemon.shutdown().unwrap();
    println!(
        "{checked} queries checked; {} transfers, {} refused or cut; the daemon refused \
         {} at max_per_client, {} over memory_budget",
        done.load(Relaxed),
        refused.load(Relaxed),
        m.refused(pep_daemon::metrics::Refusal::ClientLimit),
        m.refused(pep_daemon::metrics::Refusal::Memory),
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(done.load(Relaxed) > 0);
    assert!(m.refused(pep_daemon::metrics::Refusal::ClientLimit) > 0);
}
