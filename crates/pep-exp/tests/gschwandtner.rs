//! `pep reproduce gschwandtner`: every experiment point is a valid
//! scenario in both modes, and the 50-flow qualitative claims (flat PEP
//! utilisation across local queues, the PEP's gain against Q, fairer with
//! the PEP) are decided by real runs.

use std::path::PathBuf;

use pep_exp::reproduce::{evaluate, find, Verdict};
use pep_exp::{sweep, Experiment, Mode, SweepConfig};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/gschwandtner")
}

#[test]
fn every_experiment_point_is_a_valid_scenario() {
    let paper = find("gschwandtner").unwrap();
    // The Pareto experiment is not in the paper's list (too long for
    // short runs) but is documented: it must resolve too.
    for file in paper.experiments.iter().chain(&["fig49-pareto750.toml"]) {
        let exp = Experiment::load(&dir().join(file)).unwrap_or_else(|e| panic!("{e}"));
        for mode in [Mode::Short, Mode::Full] {
            let pts = exp.resolve(mode).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert!(pts.len() >= 4, "{file}: {} points", pts.len());
            // Half the points run the PEP, the others leave it off with a
            // RED link queue: the switch really reaches the scenario.
            let red = pts
                .iter()
                .filter(|p| {
                    let pep = p.scenario.agents.iter().find(|a| a.name == "pep");
                    pep.unwrap().params.get("enabled") == Some(&toml::Value::Boolean(false))
                })
                .count();
            assert!(red >= 3 && red < pts.len(), "{file}: {red} no-PEP points");
        }
    }
}

#[test]
fn fifty_flow_claims_are_decided_by_the_runs() {
    // The 50-flow experiment at full scale, 120 s instead of 2000 s.
    let tmp = std::env::temp_dir().join(format!("gsch-n50-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let text = std::fs::read_to_string(dir().join("fig48-n50.toml")).unwrap();
    let base = dir().join("ftp50.toml");
    let text = text
        .replace(
            "base = \"ftp50.toml\"",
            &format!("base = {:?}", base.display().to_string()),
        )
        .replace("\"200s\"", "\"120s\"");
    let exp = Experiment::parse(&text, "fig48-n50.toml", Some(&tmp)).unwrap();
    let cfg = SweepConfig {
        out: tmp.join("out"),
        jobs: 2,
        mode: Mode::Short,
        fresh: true,
        cancel: None,
    };
    let outcome = sweep(&exp, &cfg, &mut |_| {}).unwrap();
    assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
    let results = outcome.results.expect("results");
    let claims = (find("gschwandtner").unwrap().claims)();
    // The PEP's gain does not grow as Q shrinks in our model (no-PEP
    // utilisation hardly depends on Q): GAIN50 fails, in 200 s and 2000 s
    // runs alike (docs/gschwandtner.md).
    for (id, want) in [
        ("FLAT", Verdict::Pass),
        ("GAIN50", Verdict::Fail),
        ("FAIR", Verdict::Pass),
    ] {
        let c = claims.iter().find(|c| c.id == id).unwrap();
        let out = evaluate(c, &results, &[], Mode::Short).unwrap();
        eprintln!("{id}: {:?}", out.observed);
        assert_eq!(out.verdict, want, "{id}: {:?}", out.observed);
    }
    std::fs::remove_dir_all(&tmp).ok();
}
