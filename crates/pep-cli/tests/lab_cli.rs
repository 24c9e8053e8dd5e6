//! `pep lab` from the command line: bad flags refused by name before
//! anything is built, `down` of an unknown lab, and exit codes of `run`
//! and `compare` when flows fail. The tests that build labs need root
//! (`#[ignore = "needs root"]`: as root add `-- --include-ignored`); each
//! uses its own lab id.

mod common;
use common::*;

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

fn run(args: &[&str]) -> Output {
    pep().args(args).output().expect("run pep")
}

/// `pep lab <cmd> <scenario> --id <id> --out <out>`, run to its end.
fn lab(cmd: &str, sc: &str, lab_id: &str, out: &Path) -> Output {
    pep()
        .args(["lab", cmd, sc, "--id", &id(lab_id), "--out"])
        .arg(out)
        .output()
        .unwrap()
}

/// Two hosts on one 10 Mbit/s link; `forward` goes into the link table.
fn scenario(dir: &Path, forward: &str, output: &str) -> String {
    let text = format!(
        r#"
[scenario]
name = "lab-cli"
duration = "2s"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
between = ["a", "b"]
rate = "10Mbps"
delay = "5ms"
{forward}
[[flow]]
name = "bulk"
from = "a"
to = "b"
[output]
{output}
"#
    );
    let path = dir.join("lab-cli.toml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn bad_lab_flags_are_refused_by_name_before_anything_runs() {
    for (args, flag, says) in [
        (
            &["ping", "a", "b", "-c", "4294967295"][..],
            "--count",
            "not in 1..=65536",
        ),
        (
            &["ping", "a", "b", "-c", "0"],
            "--count",
            "not in 1..=65536",
        ),
        (
            &["ping", "a", "b", "-s", "18446744073709551615"],
            "--size",
            "0..=65507",
        ),
        (&["ping", "a", "b", "-s", "65508"], "--size", "0..=65507"),
        (
            &["ping", "a", "b", "-i", "0s"],
            "--interval",
            "must be positive",
        ),
        (&["ping", "a", "b", "-i", "0"], "--interval", "add a unit"),
        (
            &["traffic", "--from", "a", "--to", "b", "--bytes", "0B"],
            "--bytes",
            "must be positive",
        ),
        (
            &["traffic", "--from", "a", "--to", "b", "--duration", "0s"],
            "--duration",
            "must be positive",
        ),
        (
            &["traffic", "--from", "a", "--to", "b", "--rcvbuf", "0B"],
            "--rcvbuf",
            "must be positive",
        ),
        (
            &[
                "traffic",
                "--from",
                "a",
                "--to",
                "b",
                "--window-clamp",
                "5GB",
            ],
            "--window-clamp",
            "at most 2147483647",
        ),
        (
            &["traffic", "--from", "a", "--to", "b", "--mss", "20B"],
            "--mss",
            "88 to 32767",
        ),
        (
            &["traffic", "--from", "a", "--to", "b", "--interval", "0s"],
            "--interval",
            "must be positive",
        ),
        (
            &["run", "--duration", "0s"],
            "--duration",
            "must be positive",
        ),
        (
            &["compare", "--duration", "0s"],
            "--duration",
            "must be positive",
        ),
        (
            &["run", "--spin-us", "18446744073709551615"],
            "--spin-us",
            "0..=1000",
        ),
        (&["up", "--id", "BAD!"], "--id", "a-z, 0-9"),
        (
            &["traffic", "--from", "a", "--to", "b", "--lab", "../x"],
            "--lab",
            "a-z, 0-9",
        ),
        (&["down", "BAD!"], "[ID]", "a-z, 0-9"),
    ] {
        let mut all = vec!["lab"];
        all.extend_from_slice(args);
        let o = run(&all);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{all:?}: {t}");
        assert!(t.contains(&format!("for '{flag}")), "{all:?}: {t}");
        assert!(t.contains(says), "{all:?}: {t}");
    }
}

#[test]
fn down_of_a_lab_that_does_not_exist_fails() {
    let o = run(&["lab", "down", &id("nosuch")]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains(&format!("no lab {}", id("nosuch"))), "{t}");
    assert!(!t.contains("removed"), "{t}");
}

#[test]
#[ignore = "needs root"]
fn an_unknown_congestion_control_is_refused_before_the_lab_is_built() {
    let _guard = root_test("an_unknown_congestion_control_is_refused_before_the_lab_is_built");
    let dir = tempfile::tempdir().unwrap();
    let sc = scenario(dir.path(), "", "");
    let lab = id("cc");
    for cmd in ["run", "compare"] {
        let out = dir.path().join(cmd);
        let o = pep()
            .args(["lab", cmd, &sc, "--id", &lab, "--cc", "nosuchcc", "--out"])
            .arg(&out)
            .output()
            .unwrap();
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "{t}");
        assert!(t.contains("--cc \"nosuchcc\""), "{t}");
        assert!(t.contains("available: ") && t.contains("reno"), "{t}");
        // Refused before anything: no lab, and no simulation either.
        assert!(!out.exists(), "{cmd} wrote results");
        assert!(pep_lab::state::namespaces_of(&lab).unwrap().is_empty());
    }
}

/// A sampling period longer than the run: the run still ends at its
/// duration (the sampler used to sleep the whole period).
#[test]
#[ignore = "needs root"]
fn run_ends_at_its_duration_whatever_the_sampling_period() {
    let _guard = root_test("run_ends_at_its_duration_whatever_the_sampling_period");
    let dir = tempfile::tempdir().unwrap();
    let sc = scenario(dir.path(), "", "sample = \"40s\"");
    let started = Instant::now();
    let o = lab("run", &sc, "sample", &dir.path().join("out"));
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(started.elapsed() < Duration::from_secs(20), "{t}");
}

/// Every packet lost: the flow cannot connect. `run` and `compare` exit 1
/// and say why (the connect failure), not only that the CSV is empty.
#[test]
#[ignore = "needs root"]
fn failed_flows_make_run_and_compare_fail_with_their_error() {
    let _guard = root_test("failed_flows_make_run_and_compare_fail_with_their_error");
    let dir = tempfile::tempdir().unwrap();
    let sc = scenario(
        dir.path(),
        "forward = { loss = { kind = \"bernoulli\", p = 1.0 } }",
        "",
    );
    for cmd in ["run", "compare"] {
        let o = lab(cmd, &sc, cmd, &dir.path().join(cmd));
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {t}");
        let stderr = String::from_utf8_lossy(&o.stderr);
        let error = stderr.lines().find(|l| l.starts_with("error: "));
        assert!(
            error.is_some_and(|e| e.contains("not byte-exact: bulk (") && e.contains("connect to")),
            "{cmd}: {t}"
        );
    }
}

/// `compare` draws both sides' goodput even when the scenario's `series`
/// leaves goodput out (the simulator used to write none, and the chart
/// failed with every flow fine).
#[test]
#[ignore = "needs root"]
fn compare_charts_goodput_whatever_the_series() {
    let _guard = root_test("compare_charts_goodput_whatever_the_series");
    let dir = tempfile::tempdir().unwrap();
    let sc = scenario(dir.path(), "", "series = []");
    let out = dir.path().join("out");
    let o = lab("compare", &sc, "series", &out);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let goodput = std::fs::read_to_string(out.join("sim/goodput.csv")).unwrap();
    assert!(goodput.lines().count() > 1, "{goodput}");
    assert!(out.join("compare-goodput.svg").is_file(), "{t}");
}
