//! Claims are decided from the results: a value outside the tolerance
//! fails, one inside passes, and a claim that needs a full run is skipped
//! in short mode whatever the value, never passed.

use pep_exp::experiment::Point;
use pep_exp::reproduce::{
    self, evaluate, registry, Check, Claim, Figure, Kind, Options, Paper, Report, Tally, Tolerance,
    Verdict,
};
use pep_exp::results::{Results, Row, Stats};
use pep_exp::Mode;

/// `pep reproduce <paper>` in short mode, its output under `out`: the
/// set-up the per-paper and browser tests share.
pub(crate) fn short_report(paper: &'static Paper, out: &std::path::Path) -> Report {
    let opts = Options {
        scenarios: reproduce::default_scenarios_dir(),
        out: out.to_path_buf(),
        mode: Mode::Short,
        jobs: 2,
    };
    let experiments = reproduce::load(paper, &opts).unwrap_or_else(|e| panic!("{e}"));
    reproduce::reproduce(paper, experiments, &opts, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("{}: {e}", paper.name))
}

fn results(values: &[f64]) -> Results {
    Results {
        params: vec!["link[0].rate".into()],
        points: vec![Point {
            id: "p000".into(),
            values: vec![Some("10Mbps".into())],
        }],
        measures: vec!["total_goodput_mbps".into()],
        rows: values
            .iter()
            .enumerate()
            .map(|(i, v)| Row {
                point: 0,
                seed: i as u64 + 1,
                values: vec![Some(*v)],
            })
            .collect(),
    }
}

fn claim(paper: f64, needs_full: bool) -> Claim {
    Claim {
        id: "X1",
        kind: Kind::Reproduction,
        statement: "goodput is 9.6 Mbit/s",
        experiment: "e",
        check: Check::Value {
            measure: "total_goodput_mbps",
            at: vec![("link[0].rate", "10Mbps")],
            figure: Figure::Reported {
                value: paper,
                source: "Table 1",
            },
            tolerance: Tolerance::Relative(0.05),
        },
        needs_full,
    }
}

#[test]
fn verdicts_come_from_the_numbers() {
    let r = results(&[9.5, 9.7, 9.6]);
    let pass = evaluate(&claim(9.6, false), &r, &[], Mode::Short).unwrap();
    assert_eq!(pass.verdict, Verdict::Pass);
    assert_eq!(pass.rows[0].ours.n, 3);
    let fail = evaluate(&claim(12.0, false), &r, &[], Mode::Full).unwrap();
    assert_eq!(fail.verdict, Verdict::Fail);
    let skipped = evaluate(&claim(12.0, true), &r, &[], Mode::Short).unwrap();
    assert!(matches!(skipped.verdict, Verdict::Skipped(_)));
    let skipped = evaluate(&claim(9.6, true), &r, &[], Mode::Short).unwrap();
    assert!(
        matches!(skipped.verdict, Verdict::Skipped(_)),
        "never passed in short mode"
    );
    let full = evaluate(&claim(9.6, true), &r, &[], Mode::Full).unwrap();
    assert_eq!(full.verdict, Verdict::Pass);
}

#[test]
fn predicates_and_unknown_points() {
    let r = results(&[1.0]);
    let c = Claim {
        id: "Q",
        kind: Kind::Reproduction,
        statement: "s",
        experiment: "e",
        check: Check::Predicate {
            describe: "goodput above 2",
            eval: |r| Ok((r.stats(0, 0).mean.unwrap() > 2.0, "1.0".into())),
        },
        needs_full: false,
    };
    let o = evaluate(&c, &r, &[], Mode::Full).unwrap();
    assert_eq!(
        (o.verdict, o.observed.as_deref()),
        (Verdict::Fail, Some("1.0"))
    );
    let mut bad = claim(1.0, false);
    if let Check::Value { at, .. } = &mut bad.check {
        *at = vec![("link[0].rate", "99Mbps")];
    }
    let e = evaluate(&bad, &r, &[], Mode::Full).unwrap_err();
    assert!(e.contains("no point matches"), "{e}");
}

/// One point with the parameters `at` (an empty text leaves the
/// parameter unset) and one run whose `measure` is `value`.
fn one_point(at: &[(&str, &str)], measure: &str, value: f64) -> Results {
    Results {
        params: at.iter().map(|(k, _)| k.to_string()).collect(),
        points: vec![Point {
            id: "p000".into(),
            values: at
                .iter()
                .map(|(_, v)| (!v.is_empty()).then(|| toml::Value::String(v.to_string())))
                .collect(),
        }],
        measures: vec![measure.into()],
        rows: vec![Row {
            point: 0,
            seed: 1,
            values: vec![Some(value)],
        }],
    }
}

/// Values just inside and just outside both ends of `lo..=hi`, with the
/// verdict each must get.
pub(crate) fn around(lo: f64, hi: f64) -> [(f64, Verdict); 4] {
    let eps = (hi - lo) * 1e-3;
    [
        (lo + eps, Verdict::Pass),
        (hi - eps, Verdict::Pass),
        (lo - eps, Verdict::Fail),
        (hi + eps, Verdict::Fail),
    ]
}

/// Every value claim of every paper, fed made-up results just inside and
/// just outside its tolerance on both sides of the paper's number: inside
/// passes, outside fails, and the paper's number lies strictly inside
/// (a tolerance that can fail both ways).
#[test]
fn every_value_claim_fails_just_outside_its_tolerance_on_both_sides() {
    let mut checked = 0;
    for paper in registry() {
        for c in (paper.claims)() {
            let Check::Value {
                measure,
                at,
                figure,
                tolerance,
            } = &c.check
            else {
                continue;
            };
            // (the parameters of the point, the paper's number there)
            let cases: Vec<(Vec<(&str, &str)>, f64)> = match figure {
                Figure::Reported { value, .. } => vec![(at.clone(), *value)],
                Figure::Table { param, values, .. } => values
                    .iter()
                    .map(|(text, v)| {
                        let mut a = at.clone();
                        a.push((param, text));
                        (a, *v)
                    })
                    .collect(),
                // Evaluated on a scenario: the baseline tests check them.
                Figure::Analytic { .. } => continue,
            };
            for (a, paper_value) in cases {
                let (lo, hi) = tolerance.bounds(paper_value);
                assert!(
                    lo < paper_value && paper_value < hi,
                    "{} {}: {lo}..{hi} around {paper_value}",
                    paper.name,
                    c.id
                );
                for (ours, want) in around(lo, hi) {
                    let r = one_point(&a, measure, ours);
                    let got = evaluate(&c, &r, &[], Mode::Full)
                        .unwrap_or_else(|e| panic!("{} {}: {e}", paper.name, c.id))
                        .verdict;
                    assert_eq!(got, want, "{} {} at {ours}", paper.name, c.id);
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 40, "{checked} value claims checked");
}

/// Every claim has a kind, and only reproductions are counted: the tally
/// counts them three ways and shows the other kinds apart.
#[test]
fn the_tally_counts_reproductions_and_shows_the_rest_apart() {
    let out = |id: &str, kind, verdict| pep_exp::reproduce::ClaimOutcome {
        id: id.into(),
        kind,
        statement: String::new(),
        experiment: String::new(),
        method: String::new(),
        tolerance: None,
        rows: vec![],
        observed: None,
        verdict,
    };
    let full = || Verdict::Skipped("needs a --full run".into());
    let t = Tally::of(&[
        out("A", Kind::Reproduction, Verdict::Pass),
        out("B", Kind::Reproduction, Verdict::Fail),
        out("C", Kind::Reproduction, full()),
        out("D", Kind::Reproduction, full()),
        out("E", Kind::Setup, Verdict::Pass),
        out("F", Kind::Fit("the delay"), Verdict::Fail),
        out("G", Kind::Beyond, full()),
    ]);
    assert_eq!((t.reproduced, t.not_reproduced, t.not_checked), (1, 1, 2));
    assert_eq!(
        t.line(),
        "1 reproduced, 1 not reproduced, 2 not checked (C, D: needs a --full run). \
         Apart, not counted: setup check 1 pass; fitted 1 fail; beyond the paper 1 skipped."
    );
}

#[test]
fn factor_tolerances_are_symmetric_in_ratio() {
    let t = Tolerance::Factor(2.0);
    assert_eq!(t.bounds(10.0), (5.0, 20.0));
    assert!(t.holds(5.0, 10.0) && t.holds(20.0, 10.0));
    assert!(!t.holds(4.99, 10.0) && !t.holds(20.01, 10.0));
    assert!(!Tolerance::Relative(0.1).holds(0.0, 0.0));
}

#[test]
fn range_tolerances_have_their_own_sides() {
    let t = Tolerance::Range {
        below: 0.15,
        above: 0.02,
    };
    let (lo, hi) = t.bounds(100.0);
    assert!((lo - 85.0).abs() < 1e-9 && (hi - 102.0).abs() < 1e-9);
    assert!(t.holds(85.01, 100.0) && t.holds(101.99, 100.0));
    assert!(!t.holds(84.99, 100.0) && !t.holds(102.01, 100.0));
    assert!(!t.holds(0.0, 0.0));
    assert_eq!(t.describe(), "−15% / +2%");
}

/// Made-up results over a grid: per point its parameter texts and its
/// runs, each run the values of `measures` in order.
pub(crate) fn grid(
    params: &[&str],
    measures: &[&str],
    points: &[(Vec<String>, Vec<Vec<f64>>)],
) -> Results {
    let mut rows = Vec::new();
    for (p, (_, runs)) in points.iter().enumerate() {
        for (seed, run) in runs.iter().enumerate() {
            rows.push(Row {
                point: p,
                seed: seed as u64 + 1,
                values: run.iter().map(|v| Some(*v)).collect(),
            });
        }
    }
    Results {
        params: params.iter().map(|s| s.to_string()).collect(),
        points: points
            .iter()
            .enumerate()
            .map(|(i, (texts, _))| Point {
                id: format!("p{i:03}"),
                values: texts
                    .iter()
                    .map(|t| Some(toml::Value::String(t.clone())))
                    .collect(),
            })
            .collect(),
        measures: measures.iter().map(|s| s.to_string()).collect(),
        rows,
    }
}

pub(crate) fn verdict_of(paper: &str, id: &str, r: &Results) -> Verdict {
    let claims = (pep_exp::reproduce::find(paper).unwrap().claims)();
    let c = claims.iter().find(|c| c.id == id).unwrap();
    evaluate(c, r, &[], Mode::Full)
        .unwrap_or_else(|e| panic!("{paper} {id}: {e}"))
        .verdict
}

pub(crate) fn texts(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Shekhar C2: SAD at least 5% above Reno at every p <= 1%.
#[test]
fn shekhar_chart2_gain_is_five_percent() {
    let r = |sad: f64| {
        let mut pts = Vec::new();
        for p in ["0.0001", "0.001", "0.01", "0.1"] {
            pts.push((texts(&[p, "droptail"]), vec![vec![1.0]]));
            let s = if p == "0.1" { 1.0 } else { sad };
            pts.push((texts(&[p, "sad"]), vec![vec![s]]));
        }
        grid(
            &["link[asym].forward.loss.p", "link[asym].reverse.queue.kind"],
            &["flow.down.goodput_mbps"],
            &pts,
        )
    };
    assert_eq!(verdict_of("shekhar", "C2", &r(1.0501)), Verdict::Pass);
    assert_eq!(verdict_of("shekhar", "C2", &r(1.0499)), Verdict::Fail);
}

/// Shekhar T5-G: at every uplink rate, our rise from g = 0.1 to 0.9
/// between half and twice the paper's, downstream and upstream.
#[test]
fn shekhar_table5_trend_fails_outside_half_to_twice_the_papers_rise() {
    // The paper's rises (down, up) from Table 5.
    let paper = [
        ("64kbit/s", 6.43 / 3.39 - 1.0, 54.0 / 34.4 - 1.0),
        ("256kbit/s", 6.55 / 5.46 - 1.0, 217.2 / 84.4 - 1.0),
        ("640kbit/s", 7.02 / 6.7 - 1.0, 542.8 / 333.6 - 1.0),
    ];
    let r = |fd: f64, fu: f64| {
        let mut pts = Vec::new();
        for (rate, d, u) in paper {
            pts.push((texts(&[rate, "0.1"]), vec![vec![1.0, 1.0]]));
            pts.push((texts(&[rate, "0.5"]), vec![vec![1.0, 1.0]]));
            pts.push((
                texts(&[rate, "0.9"]),
                vec![vec![1.0 + fd * d, 1.0 + fu * u]],
            ));
        }
        grid(
            &[
                "link[asym].reverse.rate",
                "link[asym].reverse.queue.data_share",
            ],
            &["flow.down.goodput_mbps", "flow.up.goodput_mbps"],
            &pts,
        )
    };
    for (fd, fu, want) in [
        (1.0, 1.0, Verdict::Pass),
        (0.51, 1.99, Verdict::Pass),
        (1.99, 0.51, Verdict::Pass),
        (0.49, 1.0, Verdict::Fail),
        (2.01, 1.0, Verdict::Fail),
        (1.0, 0.49, Verdict::Fail),
        (1.0, 2.01, Verdict::Fail),
        (0.0, 0.0, Verdict::Fail),
    ] {
        assert_eq!(verdict_of("shekhar", "T5-G", &r(fd, fu)), want, "{fd} {fu}");
    }
}

/// Shikama F2: the tail KS distance under 0.1 at every P_L.
#[test]
fn shikama_f2_uses_the_tail_distance() {
    let r = |ks: f64| {
        let pts: Vec<_> = ["0.0001", "0.001", "0.01"]
            .iter()
            .map(|p| (texts(&[p, "6Mbit/s", "1"]), vec![vec![0.001, ks]]))
            .collect();
        grid(
            &[
                "link[wireless].forward.loss.p",
                "link[wired].rate",
                "flow[f].count",
            ],
            &[
                "agent.pep.ks_forward_burst",
                "agent.pep.ks_forward_burst_tail",
            ],
            &pts,
        )
    };
    assert_eq!(verdict_of("shikama", "F2", &r(0.0999)), Verdict::Pass);
    assert_eq!(verdict_of("shikama", "F2", &r(0.1001)), Verdict::Fail);
}

/// Ten runs alternating `mean ± d`.
pub(crate) fn runs(mean: f64, d: f64) -> Vec<Vec<f64>> {
    (0..10)
        .map(|i| vec![if i % 2 == 0 { mean + d } else { mean - d }])
        .collect()
}

/// Johnson D1: "no difference" passes only when the runs could detect a
/// 10% one; a real difference fails; noisy runs leave it not checked.
#[test]
fn johnson_no_difference_needs_runs_that_could_see_one() {
    let r = |others: f64, d: f64| {
        let pts: Vec<_> = [("2", 1.0), ("4", others), ("8", others), ("15", others)]
            .iter()
            .map(|(n, m)| (texts(&[n]), runs(*m, d)))
            .collect();
        grid(
            &["defaults.sink.ack.count"],
            &["flow.ftp.goodput_mbps"],
            &pts,
        )
    };
    // ±0.75% intervals: a 1.5% difference is detectable.
    assert_eq!(verdict_of("johnson", "D1", &r(1.0, 0.01)), Verdict::Pass);
    assert_eq!(verdict_of("johnson", "D1", &r(0.9, 0.01)), Verdict::Fail);
    // At the edge, either way: the difference's 95% half-width from the two
    // intervals (√2 × one interval's here), not where they stop overlapping.
    let (lo, hi) = Stats::of(&runs(1.0, 0.01).concat()).ci95.unwrap();
    let edge = (hi - lo) / 2.0 * 2f64.sqrt();
    for sign in [-1.0, 1.0] {
        let at = |k: f64| verdict_of("johnson", "D1", &r(1.0 + sign * edge * k, 0.01));
        assert_eq!(at(0.999), Verdict::Pass, "{sign}");
        assert_eq!(at(1.001), Verdict::Fail, "{sign}");
        // Intervals that still overlap, and yet differ.
        assert_eq!(at(1.3), Verdict::Fail, "{sign}");
    }
    // ±7.5% intervals: only a 15% difference is; overlapping is no proof.
    assert!(matches!(
        verdict_of("johnson", "D1", &r(1.0, 0.1)),
        Verdict::Skipped(_)
    ));
}

/// Johnson A2 as the thesis states it: at 4 KB, N = 3 above N = 2, and no
/// larger N above N = 3.
#[test]
fn johnson_a2_needs_n3_above_n2_and_nothing_above_n3() {
    let r = |n2: f64, n3: f64, n6: f64| {
        let pts: Vec<_> = [
            ("2", n2),
            ("3", n3),
            ("4", n3),
            ("6", n6),
            ("10", n3),
            ("16", n3),
        ]
        .iter()
        .map(|(n, m)| (texts(&["4KiB", n]), runs(*m, 0.01)))
        .collect();
        grid(
            &["defaults.sink.rwnd", "defaults.sink.ack.count"],
            &["flow.ttcp.goodput_mbps"],
            &pts,
        )
    };
    assert_eq!(
        verdict_of("johnson", "A2", &r(1.0, 1.05, 1.05)),
        Verdict::Pass
    );
    // Ours: N = 2 equal to N = 3.
    assert_eq!(
        verdict_of("johnson", "A2", &r(1.0, 1.0, 1.0)),
        Verdict::Fail
    );
    // A gain past N = 3.
    assert_eq!(
        verdict_of("johnson", "A2", &r(1.0, 1.05, 1.1)),
        Verdict::Fail
    );
}

/// A sweep task's scenario text is parsed on its own, with the point id as
/// its origin (`run_task`, perhaps on another machine): a trace path the
/// base gives relative to its own file must reach it absolute, or the
/// study's cellular experiments fail whatever directory they run from.
#[test]
fn a_base_files_relative_trace_path_reaches_the_task_text() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let exp = pep_exp::Experiment::load(&root.join("leo/verizon.toml")).unwrap();
    for r in exp.resolve(Mode::Short).unwrap() {
        let pep_exp::experiment::Source::Document(doc) = &r.source else {
            panic!("{}: the base has no [[repeat]]: one document", r.point.id);
        };
        let text = toml::to_string(doc).unwrap();
        if let Err(e) = pep_sim::Scenario::from_toml_str(&text, &r.point.id) {
            panic!("{}: {e}", r.point.id);
        }
    }
}

/// Every plot of every paper whose x axis is a varied parameter names
/// that axis (a parameter has no human default: the axis would read
/// `link[a-b].rate`).
#[test]
fn every_parameter_axis_has_a_label() {
    let mut checked = 0;
    for paper in registry() {
        for file in paper.experiments {
            let path = reproduce::default_scenarios_dir()
                .join(paper.name)
                .join(file);
            let exp = pep_exp::experiment::Experiment::load(&path).unwrap();
            for plot in &exp.plots {
                if let pep_exp::plotspec::PlotKind::Measure { x, .. } = &plot.kind {
                    assert!(
                        plot.x_label
                            .as_deref()
                            .is_some_and(|l| !l.trim().is_empty()),
                        "{}/{file}: plot {:?} (x = {x}) has no x_label",
                        paper.name,
                        plot.name
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 20, "{checked}");
}
