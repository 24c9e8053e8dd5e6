//! `pep reproduce johnson` in short mode: every claim is decided from the
//! runs as docs/johnson.md reports (the thesis's figures, the 4 KB
//! window's flat ACK count, the adaptive interval not worse than N = 2;
//! the 4 KB gain of N = 3 not reproduced; "no difference" on the distant
//! path not checked, for too few runs).

use pep_exp::reproduce::{find, Verdict};

use crate::reproduce::short_report;

#[test]
fn short_reproduction_decides_every_claim() {
    let out = tempfile::tempdir().unwrap();
    let report = short_report(find("johnson").unwrap(), out.path());
    assert_eq!(report.claims.len(), 10);
    let verdict = |id: &str| {
        let c = report.claims.iter().find(|c| c.id == id).unwrap();
        (c.verdict.clone(), c.observed.clone())
    };
    for id in ["A1", "A2s", "G1", "G1-6", "N1", "X1", "X2"] {
        assert_eq!(verdict(id).0, Verdict::Pass, "{id}: {:?}", verdict(id).1);
    }
    // The thesis's 4 KB result (N = 3 above N = 2) is not ours: with 2.8
    // segments per window N = 2 and N = 3 ACK alike (docs/johnson.md).
    assert_eq!(verdict("A2").0, Verdict::Fail);
    // The short runs on the lossy distant path cannot detect a 10%
    // difference: "no difference" is not checked there, never passed.
    for id in ["D1", "X3"] {
        assert!(matches!(verdict(id).0, Verdict::Skipped(_)), "{id}");
    }
}
