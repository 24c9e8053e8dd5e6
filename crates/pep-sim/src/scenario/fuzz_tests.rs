//! Mutated scenarios never panic, only error: syntax-level mutations of
//! the shipped files, and well-formed documents with hostile values.

use std::path::Path;

use super::tests::BASE;
use super::*;
use proptest::prelude::*;

fn corpus() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/examples");
    let mut v = vec![BASE.to_string(), DEFAULT_SCENARIO_TOML.to_string()];
    for f in ["dumbbell.toml", "asymmetric.toml", "scripted-drops.toml"] {
        v.push(std::fs::read_to_string(dir.join(f)).unwrap());
    }
    v
}

/// Fragments that make interesting mutations.
const BITS: &[&str] = &[
    "0",
    "-1",
    "\"0s\"",
    "\"\"",
    "[",
    "]",
    "{",
    "}",
    "=",
    "\n",
    "\"",
    ".",
    "[[link]]",
    "[[flow]]",
    "count = 99999999",
    "kind = \"drop\"",
    "1e308",
    "nan",
    "\"unlimited\"",
    "\u{b5}",
    "between = [\"a\",\"a\"]",
    "x",
    "4294967296",
    "9223372036854775807",
];

const VALUES: &[&str] = &[
    "\"0bps\"",
    "\"-1ms\"",
    "\"1MB/s\"",
    "\"0\"",
    "\"unlimited\"",
    "\"\"",
    "\"r1\"",
    "\"every\"",
    "\"delayed\"",
    "\"drop\"",
    "\"1ns\"",
    "\"5000h\"",
    "\"4GiB\"",
    "0",
    "-1",
    "1",
    "4294967296",
    "9223372036854775807",
    "0.5",
    "-0.5",
    "nan",
    "inf",
    "true",
    "[]",
    "[\"a\", \"a\"]",
    "[\"x\", \"y\", \"z\"]",
    "{}",
    "{ kind = 5 }",
    "{ kind = \"drop\", flow = \"f1\", segments = [0] }",
    "{ kind = \"delayed\", count = 0 }",
    "{ kind = \"bernoulli\", p = 2.0 }",
    "{ limit = 0 }",
    "{ name = \"n\" }",
    "[{ name = \"n\" }]",
];

/// Every table and leaf, in override syntax.
fn collect_paths(t: &toml::Table, prefix: &str, out: &mut Vec<String>) {
    for (k, v) in t {
        let p = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(inner) => collect_paths(inner, &p, out),
            toml::Value::Array(items) if items.iter().all(toml::Value::is_table) => {
                for (i, item) in items.iter().enumerate() {
                    let ip = format!("{p}[{i}]");
                    out.push(ip.clone());
                    if let Some(inner) = item.as_table() {
                        collect_paths(inner, &ip, out);
                    }
                }
            }
            _ => {}
        }
        out.push(p);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn never_panics(doc in 0usize..5, edits in prop::collection::vec((any::<prop::sample::Index>(), 0usize..3, 0..BITS.len(), 1usize..20), 1..6)) {
        let corpus = corpus();
        let mut text = corpus[doc].clone();
        for (at, op, bit, len) in edits {
            let mut i = at.index(text.len() + 1);
            while !text.is_char_boundary(i) {
                i -= 1;
            }
            match op {
                0 => text.insert_str(i, BITS[bit]),
                1 => {
                    let mut j = (i + len).min(text.len());
                    while !text.is_char_boundary(j) {
                        j -= 1;
                    }
                    text.replace_range(i..j, "");
                }
                _ => {
                    let mut j = (i + len).min(text.len());
                    while !text.is_char_boundary(j) {
                        j -= 1;
                    }
                    text.replace_range(i..j, BITS[bit]);
                }
            }
        }
        let _ = Scenario::from_toml_str(&text, "fuzz.toml").map_err(|e| e.to_string());
    }

    /// Valid syntax, hostile values: every leaf and table of a good
    /// document is a target, so validation itself is exercised.
    #[test]
    fn hostile_values_never_panic(doc in 0usize..5, edits in prop::collection::vec((any::<prop::sample::Index>(), 0..VALUES.len()), 1..5)) {
        let mut table = parse_document(&corpus()[doc], "f").unwrap();
        let mut paths = Vec::new();
        collect_paths(&table, "", &mut paths);
        for (at, v) in edits {
            let value: toml::Value = toml::from_str::<toml::Table>(&format!("v = {}", VALUES[v])).unwrap()["v"].clone();
            let _ = apply_override(&mut table, at.get(&paths).as_str(), value);
        }
        let _ = Scenario::from_table(table, "fuzz.toml").map_err(|e| e.to_string());
    }

    #[test]
    fn overrides_never_panic(path in "[a-z\\[\\]0-9.\" ]{0,24}", v in -3i64..3) {
        let mut doc = parse_document(BASE, "t.toml").unwrap();
        if apply_override(&mut doc, &path, v.into()).is_ok() {
            let _ = Scenario::from_table(doc, "t.toml");
        }
    }
}
