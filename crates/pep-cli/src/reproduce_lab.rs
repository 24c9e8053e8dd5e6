//! `pep reproduce leo --lab`: each of the study's base files (one bulk
//! download, end to end, no PEP) also in the lab, with CUBIC and with
//! BBR, as `pep lab compare` runs them: the simulator with Linux's TCP
//! (the `linux` profile) beside real Linux TCP over the emulated links.
//! The table goes into the study's report.

use std::fmt::Write as _;
use std::path::Path;

use pep_core::Duration;
use pep_exp::reproduce::Report;
use pep_sim::scenario::CcKind;

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

/// One base file under one congestion control, in both worlds.
#[derive(Clone, Debug)]
pub struct Row {
    pub path: String,
    pub cc: &'static str,
    pub sim: Side,
    pub lab: Side,
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

/// Runs every experiment's base file of `report` with CUBIC and with BBR
/// for `duration` (the file's own when `None`) in the simulator and the
/// lab, writing the runs under `<report dir>/lab/`, and adds the table to
/// `report.md` and `report.html`. Returns the table as markdown.
pub fn run(report: &Report, duration: Option<Duration>) -> Result<String, String> {
    let mut rows = vec![];
    for exp in &report.experiments {
        let base = &exp.experiment.base_path;
        for (cc, kind) in [("cubic", CcKind::Cubic), ("bbr", CcKind::Bbr)] {
            let out = report.dir.join("lab").join(format!("{}-{cc}", exp.stem));
            eprintln!("lab: {} with {cc} ...", base.display());
            let (sim, lab) = lab_cmd::sim_and_lab(base, kind, duration, &out)?;
            rows.push(Row {
                path: exp.stem.clone(),
                cc,
                sim: sim_side(&sim),
                lab: lab_side(&lab),
            });
        }
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

fn sim_side(s: &pep_sim::output::Summary) -> Side {
    let name = format!("{}->{}", HOP.0, HOP.1);
    let hop = s.links.iter().find(|l| l.name == name).map(|l| {
        let drops = l.queue_drops + l.lost_packets;
        (drops, l.p50_queue_delay_ms, l.p95_queue_delay_ms)
    });
    side(s.total_goodput_mbps, s.total_retransmitted_segments, hop)
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
    "cc",
    "goodput sim",
    "goodput lab",
    "retx sim",
    "retx lab",
    "drops sim",
    "drops lab",
    "queue delay p50 sim / lab (ms)",
    "p95 sim / lab (ms)",
    "lab/sim goodput",
];

fn cells(r: &Row) -> [String; 11] {
    [
        r.path.clone(),
        r.cc.into(),
        format!("{:.2}", r.sim.goodput_mbps),
        format!("{:.2}", r.lab.goodput_mbps),
        r.sim.retransmissions.to_string(),
        r.lab.retransmissions.to_string(),
        r.sim.drops.to_string(),
        r.lab.drops.to_string(),
        format!("{} / {}", ms(r.sim.delay_p50_ms), ms(r.lab.delay_p50_ms)),
        format!("{} / {}", ms(r.sim.delay_p95_ms), ms(r.lab.delay_p95_ms)),
        if r.sim.goodput_mbps > 0.0 {
            format!("{:.3}", r.lab.goodput_mbps / r.sim.goodput_mbps)
        } else {
            "-".into()
        },
    ]
}

fn about(duration: Option<Duration>) -> String {
    let len = duration.map_or_else(|| "the base file's duration".into(), |d| format!("{d}"));
    format!(
        "Each experiment's base file (one download, end to end, no PEP) with CUBIC and with \
         BBR, for {len}, one seed: the simulator with Linux's TCP (the `linux` profile, as \
         `pep lab compare` runs it) and real Linux TCP in the lab (`pep lab run`). Goodput in \
         Mbit/s; retransmissions; drops at the {}->{} hop (queue + loss model); the packets' \
         queueing delay at that hop. The split and two-node PEP points are simulator-only here.",
        HOP.0, HOP.1
    )
}

fn markdown(rows: &[Row], duration: Option<Duration>) -> String {
    let mut o = format!("\n## Simulator and lab\n\n{}\n\n", about(duration));
    let _ = writeln!(o, "| {} |", HEAD.join(" | "));
    let _ = writeln!(o, "|{}", " --- |".repeat(HEAD.len()));
    for r in rows {
        let _ = writeln!(o, "| {} |", cells(r).join(" | "));
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
    for r in rows {
        o.push_str("<tr>");
        for c in cells(r) {
            let _ = write!(o, "<td>{}</td>", esc(&c));
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table>\n");
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

    #[test]
    fn lab_runs_are_refused_for_other_papers() {
        let e = check("shekhar").unwrap_err();
        assert!(e.contains("only `pep reproduce leo`"), "{e}");
    }

    #[test]
    fn the_table_sits_before_the_html_end_and_names_both_worlds() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("report.html");
        std::fs::write(&f, "<html><body><p>x</p></body></html>").unwrap();
        let row = Row {
            path: "leo".into(),
            cc: "bbr",
            sim: Side {
                goodput_mbps: 90.0,
                delay_p50_ms: Some(4.25),
                ..Side::default()
            },
            lab: Side {
                goodput_mbps: 93.0,
                ..Side::default()
            },
        };
        append(&f, &html(std::slice::from_ref(&row), None), Some("</body>")).unwrap();
        let body = std::fs::read_to_string(&f).unwrap();
        assert!(body.ends_with("</table>\n</body></html>"), "{body}");
        let md = markdown(&[row], Some(Duration::from_secs(10)));
        assert!(md.contains("| leo | bbr | 90.00 | 93.00 |"), "{md}");
        assert!(
            md.contains("| 4.2 / - |") || md.contains("| 4.3 / - |"),
            "{md}"
        );
        assert!(md.contains("1.033"), "{md}");
    }
}
