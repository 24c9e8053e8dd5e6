//! `pep reproduce shikama`: its experiment files resolve at every point,
//! and the mitigation claim (S1) is decided by real runs.

use std::path::PathBuf;

use pep_exp::reproduce::{evaluate, find, Verdict};
use pep_exp::{sweep, Experiment, Mode, SweepConfig};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/shikama")
}

#[test]
fn every_experiment_point_is_a_valid_scenario() {
    let paper = find("shikama").unwrap();
    for file in paper.experiments {
        let exp = Experiment::load(&dir().join(file)).unwrap_or_else(|e| panic!("{e}"));
        for mode in [Mode::Short, Mode::Full] {
            let pts = exp.resolve(mode).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert!(pts.len() >= 20, "{file}: {} points", pts.len());
        }
    }
}

#[test]
fn shaping_claim_is_decided_by_the_runs() {
    // The mitigations experiment cut to P_L = 0.001, one seed, 150 s.
    let tmp = std::env::temp_dir().join(format!("shikama-s1-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let text = std::fs::read_to_string(dir().join("mitigations.toml")).unwrap();
    let base = dir().join("pep.toml");
    let text = text
        .replace(
            "base = \"pep.toml\"",
            &format!("base = {:?}", base.display().to_string()),
        )
        .replace("[0.0001, 0.001, 0.002, 0.01, 0.1]", "[0.001]")
        .replace("seeds = 12", "seeds = 1")
        .replace("\"1500s\"", "\"150s\"");
    let exp = Experiment::parse(&text, "mitigations.toml", Some(&tmp)).unwrap();
    let cfg = SweepConfig {
        out: tmp.join("out"),
        jobs: 2,
        mode: Mode::Full,
        fresh: true,
        cancel: None,
    };
    let outcome = sweep(&exp, &cfg, &mut |_| {}).unwrap();
    assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
    let results = outcome.results.expect("results");
    let claims = (find("shikama").unwrap().claims)();
    let s1 = claims.iter().find(|c| c.id == "S1").unwrap();
    let out = evaluate(s1, &results, &[], Mode::Full).unwrap();
    assert_eq!(out.verdict, Verdict::Pass, "{:?}", out.observed);
    std::fs::remove_dir_all(&tmp).ok();
}
