//! Claims are decided from the results: a value outside the tolerance
//! fails, one inside passes, and a claim that needs a full run is skipped
//! in short mode whatever the value, never passed.

use pep_exp::experiment::Point;
use pep_exp::reproduce::{
    evaluate, registry, Check, Claim, Figure, Kind, Tally, Tolerance, Verdict,
};
use pep_exp::results::{Results, Row};
use pep_exp::Mode;

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
                let eps = (hi - lo) * 1e-3;
                for (ours, want) in [
                    (lo + eps, Verdict::Pass),
                    (hi - eps, Verdict::Pass),
                    (lo - eps, Verdict::Fail),
                    (hi + eps, Verdict::Fail),
                ] {
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

/// Shekhar's Table 1 tolerances stay within the downlink's payload
/// ceiling (8 Mbit/s × 1000 B of payload per 1040 B packet), so a claim
/// there can fail from above too.
#[test]
fn shekhar_table1_tolerances_stay_under_the_payload_ceiling() {
    let ceiling = 8.0 * 1000.0 / 1040.0;
    let paper = pep_exp::reproduce::find("shekhar").unwrap();
    let mut n = 0;
    for c in (paper.claims)() {
        if let Check::Value {
            figure: Figure::Reported { value, .. },
            tolerance,
            ..
        } = &c.check
        {
            if c.id.starts_with("T1") {
                assert!(tolerance.bounds(*value).1 <= ceiling + 1e-12, "{}", c.id);
                n += 1;
            }
        }
    }
    assert_eq!(n, 10);
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
