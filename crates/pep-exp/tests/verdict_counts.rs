//! The verdict counts README.md states per paper are those of a recorded
//! run, and the recorded run is of today's claims. The record is the
//! `verdicts.tsv` files `pep reproduce all` writes, put together
//! (docs/experiments.md, "Verdicts"):
//!
//! ```sh
//! pep reproduce all -o out/reproduce
//! cat out/reproduce/*/short/verdicts.tsv > crates/pep-exp/tests/data/reproduce-verdicts-short.tsv
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use pep_exp::reproduce::find;

use crate::claim_edges::PAPERS;

const RECORD: &str = "tests/data/reproduce-verdicts-short.tsv";

/// (paper, id, kind, verdict) per line of the record.
fn record() -> Vec<[String; 4]> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(RECORD);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{RECORD}: {e}"));
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 4, "{RECORD}:{}: {l:?}", i + 1);
            [f[0], f[1], f[2], f[3]].map(String::from)
        })
        .collect()
}

/// README's verdict table: paper -> (reproduced, not reproduced, not
/// checked), the first number of each cell.
fn readme_counts() -> BTreeMap<String, [usize; 3]> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    lines
        .find(|l| l.starts_with("| paper | reproduced | not reproduced | not checked |"))
        .expect("README.md has the verdict table");
    lines
        .skip(1)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            let n = |c: &str| -> usize {
                c.split_whitespace()
                    .next()
                    .and_then(|w| w.parse().ok())
                    .unwrap_or_else(|| panic!("README verdict row {l:?}"))
            };
            (
                cells[0].to_string(),
                [n(cells[1]), n(cells[2]), n(cells[3])],
            )
        })
        .collect()
}

#[test]
fn readme_verdict_counts_match_the_recorded_run() {
    let mut counted: BTreeMap<String, [usize; 3]> = BTreeMap::new();
    for [paper, _, kind, verdict] in record() {
        let c = counted.entry(paper).or_default();
        if kind == "reproduction" {
            match verdict.as_str() {
                "pass" => c[0] += 1,
                "FAIL" => c[1] += 1,
                "skipped" => c[2] += 1,
                v => panic!("{RECORD}: verdict {v:?}"),
            }
        }
    }
    let readme = readme_counts();
    assert_eq!(
        readme, counted,
        "README.md's verdict table against {RECORD} (reproduced, not reproduced, not checked)"
    );
}

#[test]
fn the_record_is_of_todays_claims() {
    let mut by_paper: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for [paper, id, kind, _] in record() {
        by_paper.entry(paper).or_default().push((id, kind));
    }
    for name in PAPERS {
        assert!(by_paper.contains_key(name), "{RECORD} has no {name}");
    }
    for (name, got) in by_paper {
        let paper = find(&name).unwrap_or_else(|e| panic!("{RECORD}: {e}"));
        let want: Vec<(String, String)> = (paper.claims)()
            .iter()
            .map(|c| (c.id.to_string(), c.kind.label().to_string()))
            .collect();
        assert_eq!(
            got, want,
            "{name}: {RECORD} is not of today's claims; record a new run"
        );
    }
}
