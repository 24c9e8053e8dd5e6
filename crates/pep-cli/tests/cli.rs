//! The `pep` binary: a sweep killed midway resumes with only the missing
//! runs; `pep reproduce` refuses unknown papers by listing the known ones;
//! `pep sim run --pcap --plot` writes a capture and plots; `pep sim ns2`
//! translates a baseline scenario for ns-2 and names what it cannot.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn pep() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pep"))
}

const BASE: &str = r#"
[scenario]
name = "busy"
duration = "120s"
[defaults.tcp]
mss = "1000B"
[defaults.sink]
rwnd = "4MB"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
between = ["a", "b"]
rate = "100Mbps"
delay = "10ms"
queue = { limit = 500 }
[link.forward]
loss = { kind = "bernoulli", p = 0.00001 }
[[flow]]
name = "f"
from = "a"
to = "b"
[output]
series = []
"#;

const EXPERIMENT: &str = r#"
[experiment]
name = "busy"
base = "base.toml"
seeds = 3
measures = ["flow.f.goodput_mbps"]
[vary]
"link[a-b].rate" = ["50Mbps", "100Mbps"]
"link[a-b].delay" = ["5ms", "10ms", "20ms"]
"#;

fn records(out: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(out.join("runs"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".json"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn killed_sweep_resumes_with_only_the_missing_runs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("base.toml"), BASE).unwrap();
    let exp = dir.path().join("busy.toml");
    std::fs::write(&exp, EXPERIMENT).unwrap();
    let out = dir.path().join("out");
    let mut child = pep()
        .args(["sim", "sweep", "--jobs", "1", "--no-plots", "--out"])
        .arg(&out)
        .arg(&exp)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while records(&out).len() < 3 {
        assert!(started.elapsed() < Duration::from_secs(120), "no progress");
        assert!(child.try_wait().unwrap().is_none(), "finished too soon");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = records(&out);
    assert!(
        before.len() < 18,
        "the sweep finished before it could be killed: make runs longer"
    );
    assert!(!out.join("results.csv").exists());

    let rerun = pep()
        .args(["sim", "sweep", "--jobs", "2", "--no-plots", "--out"])
        .arg(&out)
        .arg(&exp)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&rerun.stdout);
    assert!(rerun.status.success(), "{stdout}");
    let want = format!(
        "busy: 6 points x 3 seeds = 18 runs ({} reused, {} ran)",
        before.len(),
        18 - before.len()
    );
    assert!(stdout.contains(&want), "want {want:?} in:\n{stdout}");
    assert_eq!(records(&out).len(), 18);
    let rows = std::fs::read_to_string(out.join("results.csv")).unwrap();
    assert_eq!(rows.lines().count(), 19);
}

#[test]
fn ns2_script_translates_a_baseline_and_refuses_what_it_cannot_express() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.toml");
    std::fs::write(&base, BASE).unwrap();
    let out = pep()
        .args(["sim", "ns2", base.to_str().unwrap(), "--warmup", "1"])
        .output()
        .unwrap();
    // The link has a loss model on one direction only (Bernoulli on all
    // packets is expressible); the script sets up both directions.
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let script = String::from_utf8(out.stdout).unwrap();
    assert_eq!(script.matches("simplex-link").count(), 2, "{script}");
    assert!(script.contains("Agent/TCP"), "{script}");
    assert!(script.contains("$ns at 1.000000000 \"record\""), "{script}");

    let bad = pep()
        .args(["sim", "ns2", base.to_str().unwrap(), "--warmup", "500"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("--warmup 500"), "{stderr}");

    let pareto = dir.path().join("pareto.toml");
    std::fs::write(
        &pareto,
        BASE.replace(
            "from = \"a\"\nto = \"b\"",
            "from = \"a\"\nto = \"b\"\nsource = { kind = \"pareto\" }",
        ),
    )
    .unwrap();
    let refused = pep()
        .args(["sim", "ns2", pareto.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("ns-2 cannot express it"), "{stderr}");

    let with_pep = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/gschwandtner/ftp50-pep.toml"
    );
    let refused = pep().args(["sim", "ns2", with_pep]).output().unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("a PEP; ns-2 runs baselines only"),
        "{stderr}"
    );
}

#[test]
fn unknown_paper_lists_the_known_ones() {
    let out = pep().args(["reproduce", "nope"]).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let known =
        "[possible values: baseline, osada2005, shekhar, johnson, shikama, gschwandtner, leo, all, sim-vs-lab]";
    assert!(
        stderr.contains("invalid value 'nope' for '<PAPER>'"),
        "{stderr}"
    );
    assert!(stderr.contains(known), "{stderr}");
    // --help lists them too.
    let help = pep().args(["reproduce", "--help"]).output().unwrap();
    assert!(String::from_utf8_lossy(&help.stdout).contains(known));
}

/// `pep sim run --quiet <args> --out <out> <scenario>`, which must succeed.
fn sim_run(args: &[&str], out: &Path, scenario: &Path) {
    let res = pep()
        .args(["sim", "run", "--quiet"])
        .args(args)
        .arg("--out")
        .arg(out)
        .arg(scenario)
        .output()
        .unwrap();
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
}

#[test]
fn run_writes_a_pcap_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/examples/scripted-drops.toml");
    let out = dir.path().join("run");
    sim_run(&["--plot", "--pcap", "r1->receiver"], &out, &scenario);
    let pcap = std::fs::read(out.join("r1-to-receiver.pcap")).unwrap();
    let n = pep_wire::PcapReader::new(&pcap[..]).unwrap().count();
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let link = summary["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "r1->receiver")
        .unwrap();
    assert_eq!(n as u64, link["tx_packets"].as_u64().unwrap());
    for p in [
        "goodput.svg",
        "cwnd.png",
        "queues.svg",
        "tseq-r1-to-receiver.svg",
    ] {
        assert!(out.join("plots").join(p).exists(), "{p}");
    }
    let bad = pep()
        .args(["sim", "run", "--pcap", "nowhere", "--out"])
        .arg(dir.path().join("x"))
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown link \"nowhere\""));
}

#[test]
fn a_cut_scenario_says_so_and_takes_one_or_two_threads() {
    let pep_run =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/gschwandtner/ftp50-pep.toml");
    let check = pep().args(["sim", "check"]).arg(&pep_run).output().unwrap();
    assert!(check.status.success());
    let said = String::from_utf8_lossy(&check.stdout);
    assert!(
        said.contains("cut at link \"split\": 51 and 51 nodes"),
        "{said}"
    );
    let bad = pep()
        .args(["sim", "run", "--threads", "3"])
        .arg(&pep_run)
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("--threads"), "{stderr}");
    // A short cut run on one thread records it in run.json.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(&pep_run)
        .unwrap()
        .replace("duration = \"2000s\"", "duration = \"2s\"");
    let short = dir.path().join("short.toml");
    std::fs::write(&short, text).unwrap();
    let out = dir.path().join("run");
    sim_run(&["--threads", "1"], &out, &short);
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["threads"], 1);
}

#[test]
fn check_validates_experiments_point_by_point() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/baseline");
    let good = root.join("random-loss.toml");
    let base = root.join("two-hosts.toml");
    let ok = pep()
        .args(["sim", "check"])
        .arg(&good)
        .arg(&base)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&ok.stdout);
    assert!(
        ok.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(
        said.contains("experiment: 3 point(s) x 10 seed(s)"),
        "{said}"
    );
    assert!(said.contains("two-hosts.toml: ok (2 nodes"), "{said}");
    // A loss probability over 1 at one point: the point and the field named.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&base, dir.path().join("two-hosts.toml")).unwrap();
    let text = std::fs::read_to_string(&good)
        .unwrap()
        .replace("[0.0001, 0.001, 0.01]", "[0.0001, 1.5]");
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, text).unwrap();
    let out = pep().args(["sim", "check"]).arg(&bad).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("point p001"), "{err}");
    assert!(err.contains("loss.p = 1.5"), "{err}");
    assert!(err.contains("1 of 1 file(s) invalid"), "{err}");
}

/// A setting that does nothing is a warning, not an error: `check` still
/// says ok and exits 0, and names the file, line and field on stderr.
#[test]
fn check_warns_of_a_setting_that_does_nothing_and_passes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("long-sample.toml");
    let text = BASE.replace("[output]\n", "[output]\nsample = \"200s\"\n");
    std::fs::write(&file, &text).unwrap();
    let out = pep().args(["sim", "check"]).arg(&file).output().unwrap();
    let (said, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{said}{err}");
    assert!(said.contains("long-sample.toml: ok"), "{said}");
    let line = text[..text.find("sample =").unwrap()].matches('\n').count() + 1;
    let warning = format!(
        "warning: {}:{line}:10: output.sample: 200s is longer than the run (120s)",
        file.display()
    );
    assert!(err.lines().any(|l| l.starts_with(&warning)), "{err}");
}

/// An experiment's points share their base's warning: `check` prints it
/// once, at the base's line, saying how many points have it, and passes.
#[test]
fn check_warns_once_of_what_an_experiments_points_share() {
    let dir = tempfile::tempdir().unwrap();
    let base = BASE.replace("[output]\n", "[output]\nsample = \"200s\"\n");
    std::fs::write(dir.path().join("base.toml"), &base).unwrap();
    let exp = dir.path().join("exp.toml");
    std::fs::write(&exp, EXPERIMENT).unwrap();
    let out = pep().args(["sim", "check"]).arg(&exp).output().unwrap();
    let (said, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{said}{err}");
    assert!(
        said.contains("exp.toml: ok (experiment: 6 point(s)"),
        "{said}"
    );
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    let line = base[..base.find("sample =").unwrap()].matches('\n').count() + 1;
    let at = format!("base.toml:{line}:10: output.sample: 200s is longer than the run (120s)");
    assert!(warnings[0].contains(&at), "{err}");
    assert!(
        warnings[0].ends_with(&format!("(all 6 points of {})", exp.display())),
        "{err}"
    );
}

/// `sweep` warns once, before the runs, of what its points share, and
/// `--short` without a `[short]` table says it changes nothing; `-q` keeps
/// both quiet.
#[test]
fn sweep_warns_once_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let base = BASE
        .replace("duration = \"120s\"", "duration = \"200ms\"")
        .replace("[output]\n", "[output]\nsample = \"1s\"\n");
    std::fs::write(dir.path().join("base.toml"), base).unwrap();
    let text = EXPERIMENT.replace("\"5ms\", \"10ms\", \"20ms\"", "\"5ms\"");
    std::fs::write(dir.path().join("exp.toml"), text).unwrap();
    let sweep = |quiet: bool| {
        let mut args = vec![
            "sim",
            "sweep",
            "exp.toml",
            "--short",
            "--no-plots",
            "-j",
            "2",
        ];
        if quiet {
            args.push("-q");
        }
        let out = pep_within(&args, dir.path(), Duration::from_secs(120));
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}");
        err
    };
    let err = sweep(false);
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 2, "{err}");
    assert!(
        warnings[0]
            .contains("exp.toml: no [short] seeds or set: --short runs the experiment as written"),
        "{err}"
    );
    assert!(
        warnings[1].contains("output.sample: 1s is longer than the run (200ms)")
            && warnings[1].ends_with("(all 2 points of exp.toml)"),
        "{err}"
    );
    let info = std::fs::read_to_string(dir.path().join("out/busy/sweep.json")).unwrap();
    assert!(info.contains("\"mode\": \"full\""), "{info}");
    assert_eq!(sweep(true), "");
}

/// Runs `pep args...` in `cwd`, killing it after `limit`: a hang fails the
/// test instead of stalling it.
fn pep_within(args: &[&str], cwd: &Path, limit: Duration) -> std::process::Output {
    let mut child = pep()
        .args(args)
        .current_dir(cwd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("`pep {}` still running after {limit:?}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn plotting_values_too_wide_for_an_axis_is_an_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    std::fs::write(
        run.join("goodput.csv"),
        "time_s,flow,bytes,goodput_mbps\n1,f,1,1e308\n2,f,1,-1e308\n",
    )
    .unwrap();
    let out = pep_within(
        &["sim", "plot", "run", "--format", "svg"],
        dir.path(),
        Duration::from_secs(60),
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("y axis: the data span -1e308..1e308"), "{err}");
    assert!(err.contains("too wide to draw"), "{err}");
    // ...and says which file holds them.
    assert!(err.contains("plot goodput (from run/goodput.csv)"), "{err}");
}

#[test]
fn bench_flags_are_checked_before_anything_is_built() {
    let dir = tempfile::tempdir().unwrap();
    for (args, want) in [
        (
            &["--seconds", "0"][..],
            "error: --seconds 0: the run must last at least 1 simulated second",
        ),
        (
            &["--flows", "0"][..],
            "error: --flows 0: each count must be at least 1 flow",
        ),
        (
            &["--flows", "10,10000001"][..],
            "error: --flows 10000001: at most 10000000 flows (a scenario's flow limit)",
        ),
        (
            &["--seconds", "18446744073709551615"][..],
            "error: --seconds 18446744073709551615: at most 1000000000 simulated seconds",
        ),
        (&["--cc", "newreno,bbr3"][..], "error: --cc bbr3: "),
        (
            &["--trace", "missing.down"][..],
            "error: --cc newreno --trace missing.down: ",
        ),
    ] {
        let mut a = vec!["sim", "bench"];
        a.extend_from_slice(args);
        let out = pep_within(&a, dir.path(), Duration::from_secs(30));
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with(want), "{args:?}:\n{err}");
        assert!(
            out.stdout.is_empty(),
            "nothing printed before the flags are checked"
        );
    }
}

#[test]
fn ns2_refuses_bidirectional_paced_and_reading_flows() {
    let dir = tempfile::tempdir().unwrap();
    for (extra, want) in [
        (
            "reverse = \"bulk\"",
            "ns-2 cannot express it: flow f: reverse:",
        ),
        (
            "tcp = { pacing = true }",
            "ns-2 cannot express it: flow f: tcp.pacing:",
        ),
        (
            "sink = { app = { kind = \"reader\" } }",
            "ns-2 cannot express it: flow f: sink.app:",
        ),
    ] {
        let p = dir.path().join("s.toml");
        std::fs::write(
            &p,
            BASE.replace(
                "from = \"a\"\nto = \"b\"",
                &format!("from = \"a\"\nto = \"b\"\n{extra}"),
            ),
        )
        .unwrap();
        let out = pep().args(["sim", "ns2"]).arg(&p).output().unwrap();
        assert!(!out.status.success(), "{extra}");
        assert!(out.stdout.is_empty(), "{extra}: no script on stdout");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{extra}:\n{err}");
    }
}

#[test]
fn sweep_refuses_an_experiment_name_that_leaves_out() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("a/b/c");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("base.toml"), BASE).unwrap();
    std::fs::write(
        work.join("exp.toml"),
        EXPERIMENT.replace("name = \"busy\"", "name = \"../../../escaped\""),
    )
    .unwrap();
    let out = pep_within(
        &["sim", "sweep", "exp.toml", "-q"],
        &work,
        Duration::from_secs(60),
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("exp.toml:3: experiment.name: \"../../../escaped\" is not a plain name"),
        "{err}"
    );
    assert!(!dir.path().join("escaped").exists());
    assert!(!work.join("out").exists());
}

#[cfg(unix)]
#[test]
fn check_refuses_devices_instead_of_reading_them_forever() {
    let dir = tempfile::tempdir().unwrap();
    let out = pep_within(
        &["sim", "check", "/dev/zero"],
        dir.path(),
        Duration::from_secs(30),
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/dev/zero: the scenario or experiment file must be a regular file, but this is a device"),
        "{err}"
    );
}

#[cfg(feature = "daemon")]
#[test]
fn proxy_flags_and_config_files_are_checked_by_name() {
    let port = pep()
        .args([
            "proxy",
            "rules",
            "--interface",
            "eth1",
            "--subnet",
            "10.0.0.0/24",
            "--port",
            "0",
        ])
        .output()
        .unwrap();
    assert!(!port.status.success());
    let err = String::from_utf8_lossy(&port.stderr);
    assert!(
        err.contains("'--port <PORT>'") && err.contains("1..=65535"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = pep()
        .args(["proxy", "rules", "-c"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the configuration file must be a regular file, but this is a directory"),
        "{err}"
    );
}

/// `pep proxy <args> -c <file>`, which must fail: its stderr.
#[cfg(feature = "daemon")]
fn proxy_refuses(args: &[&str], file: &Path) -> String {
    let out = pep()
        .arg("proxy")
        .args(args)
        .arg("-c")
        .arg(file)
        .output()
        .unwrap();
    assert!(!out.status.success(), "{args:?} passed");
    String::from_utf8_lossy(&out.stderr).trim().to_string()
}

#[cfg(feature = "daemon")]
#[test]
fn a_bad_proxy_flag_is_blamed_not_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pep.toml");
    let base = "[intercept]\ninterfaces = [\"eth1\"]\nsubnets = [\"10.0.0.0/8\"]\n";
    std::fs::write(&file, base).unwrap();
    let err = proxy_refuses(&["check", "--buffer", "1KiB"], &file);
    assert_eq!(
        err,
        "error: --buffer: proxy.buffer: must be between 4KiB and 1GiB"
    );
    // A mistake in the file itself still names the file.
    std::fs::write(&file, format!("{base}[proxy]\nbuffer = \"1KiB\"\n")).unwrap();
    let err = proxy_refuses(&["check", "--port", "7071"], &file);
    assert!(
        err.contains("pep.toml: proxy.buffer: must be between"),
        "{err}"
    );
}

#[cfg(feature = "daemon")]
#[test]
fn proxy_check_reads_the_tunnel_keys_as_run_would() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a", "b"] {
        let out = pep()
            .args(["proxy", "keygen", "--name", name, "--dir"])
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let file = dir.path().join("pep.toml");
    let conf = |key: &str| {
        let d = dir.path().display();
        format!(
            "[tunnel]\nrole = \"split-end\"\nlisten = \"127.0.0.1:4433\"\nallow = [\"0.0.0.0/0\"]\n\
             cert = \"{d}/a.pem\"\nkey = \"{d}/{key}\"\npeer_cert = \"{d}/b.pem\"\n"
        )
    };
    std::fs::write(&file, conf("a.key")).unwrap();
    let out = pep()
        .args(["proxy", "check", "-c"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // b's key with a's certificate: `run` refused it, and now `check` does.
    std::fs::write(&file, conf("b.key")).unwrap();
    let err = proxy_refuses(&["check"], &file);
    assert!(
        err.contains("tunnel.key does not match tunnel.cert"),
        "{err}"
    );
    // "." would have written the hidden files "..pem" and "..key".
    let out = pep()
        .args(["proxy", "keygen", "--name", ".", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success() && !dir.path().join("..pem").exists());
}

/// Built without the daemon (`--no-default-features`; scripts/deps-check.sh
/// runs this), every `pep proxy` command fails and says why, and the
/// simulator still runs.
#[cfg(not(feature = "daemon"))]
#[test]
fn proxy_without_the_daemon_says_so() {
    for args in [
        &["proxy", "run", "-c", "pep.toml"][..],
        &["proxy", "keygen", "--name", "a"],
        &["proxy"],
    ] {
        let out = pep().args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?} passed");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("this pep was built without the daemon (cargo feature `daemon` off"),
            "{args:?}: {err}"
        );
    }
    let out = pep().args(["sim", "default"]).output().unwrap();
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("[scenario]"));
}

/// A reader that closes the pipe early (`pep sim default | head -1`) ends
/// the command quietly, as it ends any Unix filter: no "Broken pipe"
/// panic, no exit code 101.
#[test]
fn a_closed_pipe_ends_printing_commands_quietly() {
    for args in [&["sim", "default"][..], &["amp"]] {
        let mut child = pep()
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_ne!(o.status.code(), Some(101), "{args:?}: {stderr}");
    }
}

/// `--jobs 0` was taken as 1 and `--jobs 100000` printed as used while 8
/// ran: both are refused by name.
#[test]
fn jobs_are_one_to_1024() {
    let dir = tempfile::tempdir().unwrap();
    for cmd in [&["sim", "sweep", "x.toml"][..], &["reproduce", "baseline"]] {
        for j in ["0", "100000"] {
            let mut a = cmd.to_vec();
            a.extend(["--jobs", j]);
            let out = pep_within(&a, dir.path(), Duration::from_secs(30));
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{a:?}: {err}");
            assert!(
                err.contains("'--jobs <JOBS>'") && err.contains("1..=1024"),
                "{err}"
            );
        }
    }
}

/// An ACK covers at least one packet: `--ack-every 0.5` and `1e30` were
/// tabulated as they were.
#[test]
fn amp_takes_one_to_1000_packets_per_ack() {
    let dir = tempfile::tempdir().unwrap();
    for v in ["0.5", "1e30", "NaN"] {
        let out = pep_within(
            &["amp", "--ack-every", v],
            dir.path(),
            Duration::from_secs(30),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{v}: {err}");
        assert!(err.contains("expected 1 to 1000 packets per ACK"), "{err}");
    }
    let out = pep_within(
        &["amp", "--ack-every", "2"],
        dir.path(),
        Duration::from_secs(30),
    );
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("an ACK every 2 packet(s)"));
}

/// `reproduce sim-vs-lab` is `pep lab validate` on `<scenarios>/validation`:
/// with no such directory it fails naming it, before any lab is built.
#[test]
fn reproduce_sim_vs_lab_reads_the_validation_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = pep_within(
        &[
            "reproduce",
            "sim-vs-lab",
            "--scenarios",
            "none",
            "--out",
            "rep",
        ],
        dir.path(),
        Duration::from_secs(60),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("none/validation"), "{err}");
}

/// `reproduce all` loads every paper's experiments before running any: a
/// missing file of the second paper used to be found after the first
/// paper's whole run.
#[test]
fn reproduce_all_checks_every_paper_first() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let only = dir.path().join("scenarios/baseline");
    std::fs::create_dir_all(&only).unwrap();
    for e in std::fs::read_dir(repo.join("baseline")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), only.join(e.file_name())).unwrap();
    }
    let out = pep_within(
        &[
            "reproduce",
            "all",
            "--scenarios",
            "scenarios",
            "--out",
            "rep",
        ],
        dir.path(),
        Duration::from_secs(60),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("osada2005") && err.contains("cannot read the experiment file"),
        "{err}"
    );
    assert!(
        !dir.path().join("rep/baseline").exists(),
        "baseline ran first"
    );
}
