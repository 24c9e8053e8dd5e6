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

/// One file per paper run with `--full`, `<paper>.tsv`: its report's
/// `verdicts.tsv`, after `#` lines that say how and when it was run.
const FULL: &str = "tests/data/reproduce-verdicts-full";

/// (paper, id, kind, verdict) per line of the record `rel`.
fn read_record(rel: &str) -> Vec<[String; 4]> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('#'))
        .map(|(i, l)| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 4, "{rel}:{}: {l:?}", i + 1);
            [f[0], f[1], f[2], f[3]].map(String::from)
        })
        .collect()
}

fn record() -> Vec<[String; 4]> {
    read_record(RECORD)
}

/// The full-mode records: (paper, its lines), by file name.
fn full_records() -> Vec<(String, Vec<[String; 4]>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(FULL);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{FULL}: {e}"))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let paper = n
                .strip_suffix(".tsv")
                .unwrap_or_else(|| panic!("{FULL}/{n}: not a .tsv"))
                .to_string();
            let lines = read_record(&format!("{FULL}/{n}"));
            for l in &lines {
                assert_eq!(l[0], paper, "{FULL}/{n}: a line of another paper");
            }
            (paper, lines)
        })
        .collect()
}

/// (reproduced, not reproduced, not checked) per paper of `lines`.
fn counts(lines: &[[String; 4]], rel: &str) -> BTreeMap<String, [usize; 3]> {
    let mut counted: BTreeMap<String, [usize; 3]> = BTreeMap::new();
    for [paper, _, kind, verdict] in lines {
        let c = counted.entry(paper.clone()).or_default();
        if kind == "reproduction" {
            match verdict.as_str() {
                "pass" => c[0] += 1,
                "FAIL" => c[1] += 1,
                "skipped" => c[2] += 1,
                v => panic!("{rel}: verdict {v:?}"),
            }
        }
    }
    counted
}

/// `paper`'s claims as (id, kind), the way a record lists them.
fn claims_of(paper: &str, rel: &str) -> Vec<(String, String)> {
    let paper = find(paper).unwrap_or_else(|e| panic!("{rel}: {e}"));
    (paper.claims)()
        .iter()
        .map(|c| (c.id.to_string(), c.kind.label().to_string()))
        .collect()
}

/// A README verdict table, found by its header line: paper ->
/// (reproduced, not reproduced, not checked), the first number of each
/// cell.
fn readme_table(header: &str) -> BTreeMap<String, [usize; 3]> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    lines
        .find(|l| l.starts_with(header))
        .unwrap_or_else(|| panic!("README.md has no table {header:?}"));
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

/// README's verdict table of short runs.
fn readme_counts() -> BTreeMap<String, [usize; 3]> {
    readme_table("| paper | reproduced | not reproduced | not checked |")
}

#[test]
fn readme_verdict_counts_match_the_recorded_run() {
    let readme = readme_counts();
    assert_eq!(
        readme,
        counts(&record(), RECORD),
        "README.md's verdict table against {RECORD} (reproduced, not reproduced, not checked)"
    );
}

/// README's table of `--full` runs states the full records' counts, for
/// exactly the papers recorded.
#[test]
fn readme_full_verdict_counts_match_the_full_records() {
    let lines: Vec<[String; 4]> = full_records().into_iter().flat_map(|r| r.1).collect();
    assert_eq!(
        readme_table("| paper (`--full`) | reproduced | not reproduced | not checked |"),
        counts(&lines, FULL),
        "README.md's --full verdict table against {FULL}/"
    );
}

/// Each full record lists today's claims, in order: a claim added,
/// removed or relabelled since the run makes it fail (run it again, or
/// re-judge the run's saved results: docs/experiments.md, "Verdicts").
#[test]
fn the_full_records_are_of_todays_claims() {
    let records = full_records();
    assert!(!records.is_empty(), "{FULL}/ holds no record");
    for (paper, lines) in records {
        let got: Vec<(String, String)> =
            lines.iter().map(|l| (l[1].clone(), l[2].clone())).collect();
        assert_eq!(
            got,
            claims_of(&paper, FULL),
            "{FULL}/{paper}.tsv is not of today's claims"
        );
    }
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
        assert_eq!(
            got,
            claims_of(&name, RECORD),
            "{name}: {RECORD} is not of today's claims; record a new run"
        );
    }
}
