//! `pep reproduce johnson` in short mode: every claim is decided from the
//! runs and none fails (the thesis's figures, the 4 KB window's flat ACK
//! count, the distant network's overlapping intervals, the adaptive
//! interval not worse than N = 2).

use std::path::PathBuf;

use pep_exp::experiment::Mode;
use pep_exp::reproduce::{find, load, reproduce, Options, Verdict};

#[test]
fn short_reproduction_passes_every_claim() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::env::temp_dir().join(format!("pep-johnson-{}", std::process::id()));
    let opts = Options {
        scenarios: root.join("scenarios"),
        out: out.clone(),
        mode: Mode::Short,
        jobs: 2,
    };
    let paper = find("johnson").unwrap();
    let report = reproduce(paper, load(paper, &opts).unwrap(), &opts, &mut |_, _| {}).unwrap();
    let _ = std::fs::remove_dir_all(&out);
    assert_eq!(report.claims.len(), 8);
    for c in &report.claims {
        assert_eq!(
            c.verdict,
            Verdict::Pass,
            "{}: {} ({:?})",
            c.id,
            c.statement,
            c.observed
        );
    }
}
