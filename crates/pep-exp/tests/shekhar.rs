//! `pep reproduce shekhar` in short mode: every experiment file loads and
//! runs, and each claim's verdict is what the runs show (Tables 2 and 5,
//! which our model does not reproduce, are reported as failed, not hidden).

use pep_exp::reproduce::{self, Check, Figure, Verdict};

use crate::reproduce::short_report;

#[test]
fn shekhar_reproduction_decides_every_claim() {
    let out = tempfile::tempdir().unwrap();
    let report = short_report(reproduce::find("shekhar").unwrap(), out.path());
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
        "T1S-784", "T1-SAD", "T3-64", "T3-640", "T3U-256", "T3U-640", "C2", "C2-FR",
    ] {
        assert_eq!(verdict(id), Verdict::Pass, "{id}");
    }
    // Window-limited at 20 packets and 10 ms, regeneration cannot shorten
    // the round trip; Table 3's 256k downstream is 32% low in 20 s runs;
    // Table 5's numbers and its rise with g are not met (our two-class
    // uplink gives the data class the whole uplink whatever g is): see
    // docs/shekhar.md. Chart 3's gain at every delay (C3) is not met at 50
    // and 100 ms, where both are window-limited. Table 3's 64k upstream
    // (60.4 kbit/s) is nearer the uplink's payload ceiling (61.5) than the
    // paper's 58.8.
    for id in [
        "T2", "T2-R1", "T2-R2", "T2-R3", "T2-R4", "T3-256", "T3U-64", "T5-64", "T5U-64", "T5-256",
        "T5U-256", "T5-640", "T5U-640", "T5-G", "C3",
    ] {
        assert_eq!(verdict(id), Verdict::Fail, "{id}");
    }
    assert_eq!(report.claims.len(), 32);
    assert!(out.path().join("shekhar/short/report.md").is_file());
}

/// Every value claim can fail from above: its upper bound lies below the
/// payload ceiling of the link its flow crosses (8 Mbit/s down; the
/// claim's uplink rate up), so a result at the ceiling fails.
#[test]
fn no_value_claim_reaches_the_payload_ceiling() {
    let ceiling = |rate_bps: f64| rate_bps / 1e6 * 1000.0 / 1040.0;
    let mut checked = 0;
    for c in (reproduce::find("shekhar").unwrap().claims)() {
        let Check::Value {
            measure,
            at,
            figure,
            tolerance,
        } = &c.check
        else {
            continue;
        };
        let top = match figure {
            Figure::Reported { value, .. } => *value,
            Figure::Table { values, .. } => values.iter().map(|v| v.1).fold(0.0, f64::max),
            Figure::Analytic { .. } => panic!("{}: no formula expected", c.id),
        };
        let limit = if *measure == "flow.down.goodput_mbps" {
            ceiling(8e6)
        } else {
            let rate = at
                .iter()
                .find(|(k, _)| *k == "link[asym].reverse.rate")
                .unwrap_or_else(|| panic!("{}: no uplink rate", c.id))
                .1;
            ceiling(rate.trim_end_matches("kbit/s").parse::<f64>().unwrap() * 1e3)
        };
        let (lo, hi) = tolerance.bounds(top);
        assert!(lo < top && top < hi, "{}", c.id);
        assert!(
            hi < limit,
            "{}: upper bound {hi} not below the ceiling {limit}",
            c.id
        );
        checked += 1;
    }
    assert_eq!(checked, 26);
}
