//! `pep reproduce leo --lab`: the study's four configurations on each of
//! its paths (every point of every experiment: end-to-end CUBIC,
//! end-to-end BBR, the split PEP with BBR on the satellite leg, the
//! two-node PEP) also in the lab, as `pep lab compare` runs them: the
//! simulator with Linux's TCP (the `linux` profile) beside real Linux TCP
//! over the emulated links, the points' agents as the daemon
//! (`crate::lab_pep`). A point the daemon cannot run keeps its row, with
//! the simulator's figures and the refusal that names the setting. The
//! table goes into the study's report.

use std::fmt::Write as _;
use std::path::Path;

use pep_core::Duration;
use pep_exp::reproduce::Report;
use pep_exp::{Experiment, Mode};
use pep_sim::scenario::Scenario;

use crate::lab_cmd;

/// One world's figures for one run.
#[derive(Clone, Debug, Default)]
pub struct Side {
    pub goodput_mbps: f64,
    pub retransmissions: u64,
    /// Drops at the studied hop (gw -> term): queue and loss model.
    pub drops: u64,
    pub delay_p50_ms: Option<f64>,
    pub delay_p95_ms: Option<f64>,
}

/// One configuration on one path, in both worlds.
#[derive(Clone, Debug)]
pub struct Row {
    pub path: String,
    /// The point's `scenario.description` ("end-to-end CUBIC", ...).
    pub config: String,
    pub sim: Side,
    /// The lab's figures, or why the lab could not run the point.
    pub lab: Result<Side, String>,
}

/// One configuration on one path, as the study runs it in each world.
#[derive(Clone, Debug)]
pub struct Planned {
    pub path: String,
    pub config: String,
    /// The point's scenario (seed set), which the simulator runs.
    pub sim: Scenario,
    /// The scenario the lab runs (see [`for_lab`]), or the setting the
    /// daemon lacks, named.
    pub lab: Result<Scenario, String>,
}

/// The hop the study measures (the base files' satellite or cellular
/// link, forward).
const HOP: (&str, &str) = ("gw", "term");

/// Refuses `--lab` before anything runs: only the leo study has lab runs,
/// and the lab needs root.
pub fn check(paper: &str) -> Result<(), String> {
    if paper != "leo" {
        return Err(format!(
            "--lab: only `pep reproduce leo` runs its scenarios in the lab, not {paper:?}"
        ));
    }
    pep_lab::error::require_root().map_err(|e| {
        format!("pep reproduce leo --lab builds network namespaces: {e} (run it with sudo)")
    })
}

/// Every point of every experiment (`(stem, experiment)`), in order, with
/// its first seed of `mode`, and whether the lab can run it: its network
/// and its agents mapped onto the daemon as `pep lab compare` maps them.
/// Needs no root; builds nothing.
pub fn plan<'a>(
    experiments: impl IntoIterator<Item = (&'a str, &'a Experiment)>,
    mode: Mode,
) -> Result<Vec<Planned>, String> {
    let mut out = vec![];
    for (stem, exp) in experiments {
        let seed = exp.seeds(mode).first().copied();
        for r in exp.resolve(mode).map_err(|e| e.to_string())? {
            let sim = match seed {
                Some(s) => r.scenario.with_seed(s),
                None => r.scenario,
            };
            let config = if sim.description.is_empty() {
                exp.describe(&r.point)
            } else {
                sim.description.clone()
            };
            let lab = lab_of(&sim);
            out.push(Planned {
                path: stem.to_string(),
                config,
                sim,
                lab,
            });
        }
    }
    Ok(out)
}

/// The scenario the lab runs for `sim` ([`for_lab`]) if the lab can run
/// it: its network, and its agents mapped onto the daemon as `pep lab
/// compare` maps them; else the refusal, naming the setting.
fn lab_of(sim: &Scenario) -> Result<Scenario, String> {
    let lab = for_lab(sim);
    let topo = lab_cmd::topology_from_scenario(&lab)?;
    crate::lab_pep::plan(&lab, &topo)?;
    Ok(lab)
}

/// The scenario the lab runs for a point: the same, except for two
/// things the daemon does without being told. A `meter` agent (the
/// end-to-end points' placeholder, which only counts arrivals) is left
/// out: the lab's receiver counts them. A split-pair agent's
/// `credit_charge = "stall-proof"` is left out: that value is the
/// simulator's model of the daemon's own credit (docs/gschwandtner.md),
/// and `crate::lab_pep` refuses the field whatever its value. Any other
/// `credit_charge` stays, and the lab refuses it by name.
fn for_lab(sc: &Scenario) -> Scenario {
    let mut lab = sc.clone();
    lab.agents.retain(|a| a.kind != "meter");
    for a in &mut lab.agents {
        let daemons = a.params.get("credit_charge").and_then(|v| v.as_str()) == Some("stall-proof");
        if a.kind == "split-pair" && daemons {
            a.params.remove("credit_charge");
        }
    }
    lab
}

/// Runs every configuration of every path of `report` (see [`plan`]) for
/// `duration` (the file's own when `None`) in the simulator and, where
/// the daemon can run it, the lab, writing the runs under
/// `<report dir>/lab/`, and adds the table to `report.md` and
/// `report.html`. Returns the table as markdown.
pub fn run(report: &Report, duration: Option<Duration>) -> Result<String, String> {
    let planned = plan(
        report
            .experiments
            .iter()
            .map(|e| (e.stem.as_str(), &e.experiment)),
        report.mode,
    )?;
    let mut rows = vec![];
    for (i, p) in planned.into_iter().enumerate() {
        let out = report
            .dir
            .join("lab")
            .join(format!("{}-{}", p.path, slug(&p.config, i)));
        let (lab, refused) = match p.lab {
            Ok(lab) => (Some(lab), None),
            Err(e) => (None, Some(e)),
        };
        match &refused {
            None => eprintln!("lab: {} / {} ...", p.path, p.config),
            Some(e) => eprintln!("lab: {} / {}: simulator only: {e}", p.path, p.config),
        }
        let (sim, lab) = lab_cmd::sim_and_lab(p.sim, lab, duration, &out)?;
        rows.push(Row {
            path: p.path,
            config: p.config,
            sim: sim_side(&sim.summary, sim.rx_goodput_mbps.iter().sum()),
            lab: match (lab, refused) {
                (Some(lab), _) => Ok(lab_side(&lab)),
                (None, e) => Err(e.unwrap_or_default()),
            },
        });
    }
    let md = markdown(&rows, duration);
    append(&report.dir.join("report.md"), &md, None)?;
    append(
        &report.dir.join("report.html"),
        &html(&rows, duration),
        Some("</body>"),
    )?;
    std::fs::write(report.dir.join("lab.md"), &md)
        .map_err(|e| format!("writing {}: {e}", report.dir.join("lab.md").display()))?;
    Ok(md)
}

/// A directory name for a configuration: its words joined by `-`.
fn slug(config: &str, i: usize) -> String {
    let s: String = config
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let s = s.split('-').filter(|w| !w.is_empty()).collect::<Vec<_>>();
    if s.is_empty() {
        format!("point{i}")
    } else {
        s.join("-")
    }
}

/// A side from a run's totals and its hop's (drops, delay p50, p95).
fn side(
    goodput_mbps: f64,
    retransmissions: u64,
    hop: Option<(u64, Option<f64>, Option<f64>)>,
) -> Side {
    let (drops, delay_p50_ms, delay_p95_ms) = hop.unwrap_or_default();
    Side {
        goodput_mbps,
        retransmissions,
        drops,
        delay_p50_ms,
        delay_p95_ms,
    }
}

/// `goodput_mbps`: measured at the receiver, as the lab measures it
/// (`lab_cmd::SimRun`).
fn sim_side(s: &pep_sim::output::Summary, goodput_mbps: f64) -> Side {
    let name = format!("{}->{}", HOP.0, HOP.1);
    let hop = s.links.iter().find(|l| l.name == name).map(|l| {
        let drops = l.queue_drops + l.lost_packets;
        (drops, l.p50_queue_delay_ms, l.p95_queue_delay_ms)
    });
    side(goodput_mbps, s.total_retransmitted_segments, hop)
}

/// The lab names a link's directions `<a>-<b>/fwd` and `/rev`.
fn lab_side(s: &pep_lab::report::Summary) -> Side {
    let name = format!("{}-{}/fwd", HOP.0, HOP.1);
    let hop = s.links.iter().find(|l| l.name == name).map(|l| {
        let drops = l.queue_drops + l.lost_packets;
        (drops, l.p50_queue_delay_ms, l.p95_queue_delay_ms)
    });
    side(s.total_goodput_mbps, s.total_retransmitted_segments, hop)
}

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.1}"))
}

const HEAD: [&str; 11] = [
    "path",
    "configuration",
    "goodput sim",
    "goodput lab",
    "retx sim",
    "retx lab",
    "drops sim",
    "drops lab",
    "queueing delay p50 sim / lab (ms)",
    "p95 sim / lab (ms)",
    "lab/sim goodput",
];

/// A row's cells; a point the lab did not run shows `-` on the lab's
/// side and `not in the lab (N)`, N numbering the refusals under the
/// table.
fn cells(r: &Row, refusal: usize) -> [String; 11] {
    let sim = &r.sim;
    let (lab, ratio) = match &r.lab {
        Ok(lab) => (
            lab.clone(),
            if sim.goodput_mbps > 0.0 {
                format!("{:.3}", lab.goodput_mbps / sim.goodput_mbps)
            } else {
                "-".into()
            },
        ),
        Err(_) => (Side::default(), format!("not in the lab ({refusal})")),
    };
    let ran = r.lab.is_ok();
    let lab_v = |v: String| if ran { v } else { "-".into() };
    [
        r.path.clone(),
        r.config.clone(),
        format!("{:.2}", sim.goodput_mbps),
        lab_v(format!("{:.2}", lab.goodput_mbps)),
        sim.retransmissions.to_string(),
        lab_v(lab.retransmissions.to_string()),
        sim.drops.to_string(),
        lab_v(lab.drops.to_string()),
        format!("{} / {}", ms(sim.delay_p50_ms), ms(lab.delay_p50_ms)),
        format!("{} / {}", ms(sim.delay_p95_ms), ms(lab.delay_p95_ms)),
        ratio,
    ]
}

/// Each row's cells, and the refusals they number: `(path, config, why)`.
fn table(rows: &[Row]) -> (Vec<[String; 11]>, Vec<String>) {
    let mut refusals = vec![];
    let mut out = vec![];
    for r in rows {
        if let Err(e) = &r.lab {
            refusals.push(format!("{} / {}: {e}", r.path, r.config));
        }
        out.push(cells(r, refusals.len()));
    }
    (out, refusals)
}

fn about(duration: Option<Duration>) -> String {
    let len = duration.map_or_else(|| "the base file's duration".into(), |d| format!("{d}"));
    format!(
        "Every configuration of every path (the study's points) for {len}, one seed: the \
         simulator with Linux's TCP (the `linux` profile, as `pep lab compare` runs it) and \
         real Linux TCP in the lab (`pep lab run`), the split and two-node PEPs as the daemon \
         (`pep proxy`: the TPROXY split proxy, split-start/split-end with the QUIC tunnel). \
         Goodput in Mbit/s at the receiver; retransmissions of the flow's sender (in both \
         worlds the server's socket: with a PEP, its leg to the PEP; the PEP's own legs' \
         losses show as the hop's drops); drops at the {}->{} hop (queue + loss model); the \
         packets' queueing delay at that hop. The lab runs the two-node point \
         without `credit_charge = \"stall-proof\"`: that is the simulator's model of the \
         daemon's own credit.",
        HOP.0, HOP.1
    )
}

fn markdown(rows: &[Row], duration: Option<Duration>) -> String {
    let mut o = format!("\n## Simulator and lab\n\n{}\n\n", about(duration));
    let _ = writeln!(o, "| {} |", HEAD.join(" | "));
    let _ = writeln!(o, "|{}", " --- |".repeat(HEAD.len()));
    let (cells, refusals) = table(rows);
    for c in cells {
        let _ = writeln!(o, "| {} |", c.join(" | "));
    }
    if !refusals.is_empty() {
        o.push_str("\nNot in the lab (the simulator's figures only):\n\n");
        for (i, r) in refusals.iter().enumerate() {
            let _ = writeln!(o, "{}. {r}", i + 1);
        }
    }
    o
}

fn html(rows: &[Row], duration: Option<Duration>) -> String {
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut o = format!(
        "<h2>Simulator and lab</h2>\n<p>{}</p>\n<table>\n<tr>",
        esc(&about(duration))
    );
    for h in HEAD {
        let _ = write!(o, "<th>{}</th>", esc(h));
    }
    o.push_str("</tr>\n");
    let (cells, refusals) = table(rows);
    for row in cells {
        o.push_str("<tr>");
        for c in row {
            let _ = write!(o, "<td>{}</td>", esc(&c));
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table>\n");
    if !refusals.is_empty() {
        o.push_str("<p>Not in the lab (the simulator's figures only):</p>\n<ol>\n");
        for r in &refusals {
            let _ = writeln!(o, "<li>{}</li>", esc(r));
        }
        o.push_str("</ol>\n");
    }
    o
}

/// Adds `text` to `file`: before the last `before` if given and found,
/// else at the end.
fn append(file: &Path, text: &str, before: Option<&str>) -> Result<(), String> {
    let mut body =
        std::fs::read_to_string(file).map_err(|e| format!("reading {}: {e}", file.display()))?;
    match before.and_then(|b| body.rfind(b)) {
        Some(at) => body.insert_str(at, text),
        None => body.push_str(text),
    }
    std::fs::write(file, body).map_err(|e| format!("writing {}: {e}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The study's experiments as `pep reproduce leo` loads them.
    fn leo() -> Vec<(String, Experiment)> {
        let opts = pep_exp::reproduce::Options {
            scenarios: Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios"),
            out: std::env::temp_dir(),
            mode: Mode::Short,
            jobs: 1,
        };
        let paper = pep_exp::reproduce::find("leo").unwrap();
        let exps = pep_exp::reproduce::load(paper, &opts).unwrap();
        paper
            .experiments
            .iter()
            .map(|f| f.trim_end_matches(".toml").to_string())
            .zip(exps)
            .collect()
    }

    #[test]
    fn the_lab_plan_holds_the_four_configurations_on_every_path() {
        let exps = leo();
        let planned = plan(exps.iter().map(|(s, e)| (s.as_str(), e)), Mode::Short).unwrap();
        let configs = [
            "end-to-end CUBIC",
            "end-to-end BBR",
            "split PEP, BBR leg",
            "two-node PEP, BBR tunnel",
        ];
        let paths = ["geo", "leo", "verizon", "tmobile"];
        let got: Vec<(&str, &str)> = planned
            .iter()
            .map(|p| (p.path.as_str(), p.config.as_str()))
            .collect();
        let want: Vec<(&str, &str)> = paths
            .iter()
            .flat_map(|p| configs.iter().map(move |c| (*p, *c)))
            .collect();
        assert_eq!(got, want);
        for p in &planned {
            // Every configuration runs in the lab: the daemon maps each.
            let lab = p
                .lab
                .as_ref()
                .unwrap_or_else(|e| panic!("{} / {}: {e}", p.path, p.config));
            let kinds: Vec<&str> = lab.agents.iter().map(|a| a.kind.as_str()).collect();
            let want: &[&str] = match p.config.as_str() {
                "split PEP, BBR leg" => &["split"],
                "two-node PEP, BBR tunnel" => &["split-pair"],
                _ => &[],
            };
            assert_eq!(kinds, want, "{} / {}", p.path, p.config);
            let cc = format!("{:?}", lab.flows[0].tcp.cc).to_lowercase();
            let want_cc = if p.config == "end-to-end BBR" {
                "bbr"
            } else {
                "cubic"
            };
            assert_eq!(cc, want_cc, "{} / {}", p.path, p.config);
            assert_eq!(p.sim.seed, 1, "{} / {}", p.path, p.config);
        }
    }

    #[test]
    fn only_the_daemons_own_credit_is_left_to_the_daemon() {
        let exps = leo();
        let planned = plan(exps.iter().map(|(s, e)| (s.as_str(), e)), Mode::Short).unwrap();
        let two = planned
            .iter()
            .find(|p| p.config.starts_with("two-node"))
            .unwrap();
        assert_eq!(
            two.sim.agents[0].params["credit_charge"].as_str(),
            Some("stall-proof"),
            "the simulator keeps the daemon's credit"
        );
        assert!(!two.lab.as_ref().unwrap().agents[0]
            .params
            .contains_key("credit_charge"));
        // Another credit is the daemon's lack: refused, by name.
        let mut thesis = two.sim.clone();
        thesis.agents[0]
            .params
            .insert("credit_charge".into(), "admitted".into());
        let e = lab_of(&thesis).unwrap_err();
        assert!(e.contains("credit_charge"), "{e}");
    }

    #[test]
    fn lab_runs_are_refused_for_other_papers() {
        let e = check("shekhar").unwrap_err();
        assert!(e.contains("only `pep reproduce leo`"), "{e}");
    }

    fn row(config: &str, lab: Result<Side, String>) -> Row {
        Row {
            path: "leo".into(),
            config: config.into(),
            sim: Side {
                goodput_mbps: 90.0,
                delay_p50_ms: Some(4.25),
                ..Side::default()
            },
            lab,
        }
    }

    #[test]
    fn the_table_sits_before_the_html_end_and_names_both_worlds() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("report.html");
        std::fs::write(&f, "<html><body><p>x</p></body></html>").unwrap();
        let lab = Side {
            goodput_mbps: 93.0,
            ..Side::default()
        };
        let r = row("end-to-end BBR", Ok(lab));
        append(&f, &html(std::slice::from_ref(&r), None), Some("</body>")).unwrap();
        let body = std::fs::read_to_string(&f).unwrap();
        assert!(body.ends_with("</table>\n</body></html>"), "{body}");
        let md = markdown(&[r], Some(Duration::from_secs(10)));
        assert!(
            md.contains("| leo | end-to-end BBR | 90.00 | 93.00 |"),
            "{md}"
        );
        assert!(
            md.contains("| 4.2 / - |") || md.contains("| 4.3 / - |"),
            "{md}"
        );
        assert!(md.contains("1.033"), "{md}");
    }

    #[test]
    fn a_point_the_lab_refuses_keeps_its_row_and_says_why() {
        let rows = [
            row("end-to-end CUBIC", Ok(Side::default())),
            row(
                "two-node PEP",
                Err("agent[0].x: no daemon setting for it".into()),
            ),
        ];
        let md = markdown(&rows, None);
        assert!(
            md.contains("| leo | two-node PEP | 90.00 | - | 0 | - | 0 | - |"),
            "{md}"
        );
        assert!(md.contains("| not in the lab (1) |"), "{md}");
        assert!(
            md.contains("1. leo / two-node PEP: agent[0].x: no daemon setting for it"),
            "{md}"
        );
        let h = html(&rows, None);
        assert!(h.contains("<li>leo / two-node PEP: agent[0].x"), "{h}");
    }
}
