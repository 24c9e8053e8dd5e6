//! Reproduction reports: Markdown (plots linked) and one self-contained
//! HTML page (plots inline as SVG). Every figure in them comes from the
//! run; nothing is written by hand. No timestamps, so the same results give
//! the same report.

use std::fmt::Write as _;

use super::{ClaimOutcome, Kind, Report, Verdict};
use crate::experiment::Mode;
use crate::results::Stats;

/// At most `decimals` decimals, trailing zeros dropped: 15, 3.11, 0.02.
pub fn trim(x: f64, decimals: usize) -> String {
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Four significant digits, without exponent for everyday magnitudes.
pub fn sig(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    if x == 0.0 {
        return "0".into();
    }
    let mag = x.abs().log10().floor() as i32;
    if !(-4..=6).contains(&mag) {
        return format!("{x:.3e}");
    }
    let decimals = (3 - mag).max(0) as usize;
    format!("{x:.decimals$}")
}

fn ours(s: &Stats) -> String {
    match (s.mean, s.ci95) {
        (None, _) => "no value".into(),
        (Some(m), Some((lo, hi))) => format!("{} [{}, {}] (n={})", sig(m), sig(lo), sig(hi), s.n),
        (Some(m), None) => format!("{} (n={})", sig(m), s.n),
    }
}

fn mode_line(r: &Report) -> String {
    match r.mode {
        Mode::Short => "**Mode: short** — shortened runs that finish in minutes; claims that \
                        need paper-length runs are *skipped*, not passed. Run with `--full` \
                        to decide them."
            .to_string(),
        Mode::Full => "**Mode: full** — runs at the paper's length.".to_string(),
    }
}

fn tally(r: &Report) -> String {
    r.tally().line()
}

/// The claims in report order: the reproductions, then each kind shown
/// apart, with the heading of each group.
fn groups(r: &Report) -> Vec<(&'static str, Vec<&ClaimOutcome>)> {
    let mut g = vec![(
        "Reproductions (the paper's own numbers and trends)",
        r.claims
            .iter()
            .filter(|c| c.kind == Kind::Reproduction)
            .collect::<Vec<_>>(),
    )];
    for (label, heading) in Kind::APART.iter().zip([
        "Setup checks (our network is the paper's; not results)",
        "Fits (a parameter was chosen to meet the paper here)",
        "Structural properties of our model",
        "Beyond the paper (our results, not the paper's)",
    ]) {
        g.push((
            heading,
            r.claims
                .iter()
                .filter(|c| c.kind.label() == *label)
                .collect(),
        ));
    }
    g.retain(|(_, v)| !v.is_empty());
    g
}

/// What a fitted claim's fit was, else nothing.
fn fitted(c: &ClaimOutcome) -> String {
    match c.kind {
        Kind::Fit(what) => format!(" Fitted: {what}."),
        _ => String::new(),
    }
}

/// Rows of the claims table: one per compared point (or one for a
/// predicate).
fn rows(c: &ClaimOutcome) -> Vec<[String; 6]> {
    let tol = c.tolerance.clone().unwrap_or_default();
    if c.rows.is_empty() {
        let seen = match (&c.verdict, &c.observed) {
            (Verdict::Skipped(why), Some(seen)) => format!("{why}: {seen}"),
            (Verdict::Skipped(why), None) => why.clone(),
            (_, Some(s)) => s.clone(),
            _ => String::new(),
        };
        return vec![[
            c.method.clone(),
            "—".into(),
            seen,
            tol,
            c.verdict.word().into(),
            String::new(),
        ]];
    }
    c.rows
        .iter()
        .map(|row| {
            [
                row.point.clone(),
                sig(row.paper),
                ours(&row.ours),
                tol.clone(),
                row.verdict.word().into(),
                String::new(),
            ]
        })
        .collect()
}

/// The Markdown report; plots are linked as `<experiment>/plots/<name>.png`.
pub fn markdown(r: &Report) -> String {
    let p = r.paper;
    let mut s = String::new();
    let _ = writeln!(s, "# Reproduction: {}\n", p.title);
    let _ = writeln!(s, "**{}**\n", tally(r));
    let _ = writeln!(s, "*{}*\n", p.citation);
    let _ = writeln!(s, "{}\n", p.about);
    let _ = writeln!(s, "{}\n", mode_line(r));
    for (heading, claims) in groups(r) {
        let _ = writeln!(s, "## {heading}\n");
        for c in claims {
            let _ = writeln!(
                s,
                "### {} — {} ({})\n\n{}\n\nChecked on `{}`: {}.{}\n",
                c.id,
                c.verdict.word(),
                c.experiment,
                c.statement,
                c.experiment,
                c.method,
                fitted(c)
            );
            let expected = if c.kind == Kind::Beyond {
                "expected"
            } else {
                "paper"
            };
            let _ = writeln!(
            s,
            "| point | {expected} | ours: mean [95% CI] | tolerance | result |\n| --- | --- | --- | --- | --- |"
        );
            for row in rows(c) {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} |",
                    md(&row[0]),
                    md(&row[1]),
                    md(&row[2]),
                    md(&row[3]),
                    row[4]
                );
            }
            s.push('\n');
        }
    }
    let _ = writeln!(s, "## Experiments\n");
    for e in &r.experiments {
        let x = &e.experiment;
        let _ = writeln!(
            s,
            "### {}\n\n{}\n\n{} points × {} seeds; tables: `{}/results.csv`, `{}/aggregate.csv`.\n",
            x.name,
            x.description,
            x.points.len(),
            x.seeds(r.mode).len(),
            e.stem,
            e.stem
        );
        for c in &e.charts {
            let _ = writeln!(s, "![{}]({}/plots/{}.png)\n", c.name, e.stem, c.name);
        }
    }
    s
}

fn md(t: &str) -> String {
    t.replace('|', "\\|")
}

fn esc(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const STYLE: &str = "body{font-family:sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;\
color:#222;line-height:1.45}table{border-collapse:collapse;margin:.5em 0 1.5em}\
td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}\
th{background:#f3f3f3}.pass{color:#176b2c;font-weight:bold}.FAIL{color:#b00020;\
font-weight:bold}.skipped{color:#8a6d00;font-weight:bold}figure{margin:1em 0}\
figure svg{max-width:100%;height:auto}code{background:#f3f3f3;padding:0 .2em}";

/// The self-contained HTML report: inline CSS, plots inline as SVG.
pub fn html(r: &Report) -> String {
    let p = r.paper;
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>Reproduction: {}</title><style>{STYLE}</style></head><body>\n",
        esc(p.title)
    );
    let _ = writeln!(s, "<h1>Reproduction: {}</h1>", esc(p.title));
    let _ = writeln!(s, "<p><strong>{}</strong></p>", esc(&tally(r)));
    let _ = writeln!(
        s,
        "<p><em>{}</em></p><p>{}</p>",
        esc(p.citation),
        esc(p.about)
    );
    let mode = esc(&mode_line(r)).replace(['*', '`'], "");
    let _ = writeln!(s, "<p>{mode}</p>");
    for (heading, claims) in groups(r) {
        let expected = if claims[0].kind == Kind::Beyond {
            "expected"
        } else {
            "paper"
        };
        let _ = writeln!(s, "<h2>{}</h2>", esc(heading));
        let _ = writeln!(
            s,
            "<table><tr><th>claim</th><th>statement</th><th>point</th><th>{expected}</th>\
         <th>ours: mean [95% CI]</th><th>tolerance</th><th>result</th></tr>"
        );
        for c in claims {
            let rs = rows(c);
            for (i, row) in rs.iter().enumerate() {
                s.push_str("<tr>");
                if i == 0 {
                    let _ = write!(
                    s,
                    "<td rowspan=\"{n}\">{}</td><td rowspan=\"{n}\">{}<br><small>on <code>{}</code>: \
                     {}</small></td>",
                    esc(&c.id),
                    esc(&c.statement),
                    esc(&c.experiment),
                    esc(&format!("{}{}", c.method, fitted(c))),
                    n = rs.len()
                );
                }
                let _ = writeln!(
                    s,
                    "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td></tr>",
                    esc(&row[0]),
                    esc(&row[1]),
                    esc(&row[2]),
                    esc(&row[3]),
                    row[4],
                    row[4]
                );
            }
        }
        s.push_str("</table>\n");
    }
    s.push_str("<h2>Experiments</h2>\n");
    for e in &r.experiments {
        let x = &e.experiment;
        let _ = writeln!(
            s,
            "<h3>{}</h3><p>{}</p><p>{} points × {} seeds; tables: <code>{}/results.csv</code>, \
             <code>{}/aggregate.csv</code>.</p>",
            esc(&x.name),
            esc(&x.description),
            x.points.len(),
            x.seeds(r.mode).len(),
            esc(&e.stem),
            esc(&e.stem)
        );
        for c in &e.charts {
            match pep_plot::render_svg_string(&c.chart) {
                Ok(svg) => {
                    // Drop the XML prolog: the SVG sits inside HTML.
                    let body = svg.find("<svg").map_or(svg.as_str(), |i| &svg[i..]);
                    let _ = writeln!(s, "<figure>{body}</figure>");
                }
                Err(e) => {
                    let _ = writeln!(s, "<p>plot {}: {}</p>", esc(&c.name), esc(&e.to_string()));
                }
            }
        }
    }
    s.push_str("</body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::sig;

    #[test]
    fn significant_digits() {
        assert_eq!(sig(6.25), "6.250");
        assert_eq!(sig(1234.5), "1234");
        assert_eq!(sig(0.01234), "0.01234");
        assert_eq!(sig(0.0), "0");
        assert_eq!(sig(1.5e9), "1.500e9");
        assert_eq!(super::trim(15.000000000000002, 2), "15");
        assert_eq!(super::trim(3.1137, 2), "3.11");
        assert_eq!(super::trim(0.02, 3), "0.02");
    }
}
