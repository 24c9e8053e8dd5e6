//! `pep reproduce shekhar` in short mode: every experiment file loads and
//! runs, and each claim's verdict is what the runs show (Tables 2 and 5,
//! which our model does not reproduce, are reported as failed, not hidden).

use pep_exp::reproduce::{self, Options, Verdict};
use pep_exp::Mode;

#[test]
fn shekhar_reproduction_decides_every_claim() {
    let out = tempfile::tempdir().unwrap();
    let opts = Options {
        scenarios: reproduce::default_scenarios_dir(),
        out: out.path().to_path_buf(),
        mode: Mode::Short,
        jobs: 2,
    };
    let paper = reproduce::find("shekhar").unwrap();
    let report = reproduce::reproduce(
        paper,
        reproduce::load(paper, &opts).unwrap(),
        &opts,
        &mut |_, _| {},
    )
    .unwrap();
    let verdict = |id: &str| {
        report
            .claims
            .iter()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("no claim {id}"))
            .verdict
            .clone()
    };
    for id in [
        "T1-64", "T1S-64", "T1-128", "T1S-128", "T1-256", "T1S-256", "T1-640", "T1S-640", "T1-784",
        "T1S-784", "T1-SAD", "T3-64", "T3-640", "T3-up", "C2", "C2-FR",
    ] {
        assert_eq!(verdict(id), Verdict::Pass, "{id}");
    }
    // Window-limited at 20 packets and 10 ms, regeneration cannot shorten
    // the round trip; Table 3's 256k downstream is 32% low in 20 s runs;
    // Table 5's numbers and its rise with g are not met (our two-class
    // uplink gives the data class the whole uplink whatever g is): see
    // docs/shekhar.md. Chart 3's gain at every delay (C3) is not met at 50
    // and 100 ms, where both are window-limited.
    for id in [
        "T2", "T2-R1", "T2-R2", "T2-R3", "T2-R4", "T3-256", "T5-64", "T5U-64", "T5-256", "T5U-256",
        "T5-640", "T5U-640", "T5-G", "C3",
    ] {
        assert_eq!(verdict(id), Verdict::Fail, "{id}");
    }
    assert_eq!(report.claims.len(), 30);
    assert!(out.path().join("shekhar/short/report.md").is_file());
}
