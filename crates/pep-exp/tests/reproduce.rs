//! Claims are decided from the results: a value outside the tolerance
//! fails, one inside passes, and a claim that needs a full run is skipped
//! in short mode whatever the value, never passed.

use pep_exp::experiment::Point;
use pep_exp::reproduce::{evaluate, Check, Claim, Figure, Tolerance, Verdict};
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
