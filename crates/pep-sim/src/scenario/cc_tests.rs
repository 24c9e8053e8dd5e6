//! `tcp.cc` and `tcp.recovery`: which growth and recovery each name means,
//! and the rule that SACK recovery needs a sink sending SACK blocks.

use pep_core::cc::{Growth, Recovery};

use super::tests::BASE;
use super::*;
use crate::build::{sink_config, tcp_config};

/// `BASE` with a flow's `tcp` and `sink` tables, and optional defaults.
fn with(defaults: &str, tcp: &str, sink: &str) -> String {
    let text = BASE.replacen("[[node]]", &format!("{defaults}\n[[node]]"), 1);
    format!("{text}tcp = {{ {tcp} }}\nsink = {{ {sink} }}\n")
}

/// The sender configuration the first flow gets.
fn axes(defaults: &str, tcp: &str, sink: &str) -> (Growth, Recovery) {
    let s = Scenario::from_toml_str(&with(defaults, tcp, sink), "t.toml")
        .unwrap_or_else(|e| panic!("{e}"));
    let f = &s.flows[0];
    let cfg = tcp_config(&f.tcp, &f.sink);
    assert_eq!(sink_config(&f.sink, 40).sack, f.sink.sack);
    (cfg.growth, cfg.recovery)
}

#[test]
fn each_name_maps_to_a_growth_and_a_recovery() {
    let reno = Growth::default();
    let cubic = Growth::Cubic(Default::default());
    let cases = [
        ("cc = \"tahoe\"", "", (reno, Recovery::Tahoe)),
        ("cc = \"reno\"", "", (reno, Recovery::Reno)),
        ("cc = \"newreno\"", "", (reno, Recovery::NewReno)),
        ("cc = \"sack\"", "sack = true", (reno, Recovery::Sack)),
        ("cc = \"cubic\"", "", (cubic, Recovery::NewReno)),
        ("cc = \"cubic\"", "sack = true", (cubic, Recovery::Sack)),
        (
            "cc = \"cubic-ns2\"",
            "",
            (Growth::CubicNs2, Recovery::NewReno),
        ),
        (
            "cc = \"cubic-ns2\"",
            "sack = true",
            (Growth::CubicNs2, Recovery::Sack),
        ),
        (
            "cc = \"westwood\"",
            "",
            (Growth::Westwood, Recovery::NewReno),
        ),
        (
            "cc = \"westwood\"",
            "sack = true",
            (Growth::Westwood, Recovery::Sack),
        ),
        ("cc = \"bbr\"", "", (Growth::Bbr, Recovery::NewReno)),
        ("cc = \"bbr\"", "sack = true", (Growth::Bbr, Recovery::Sack)),
        // An explicit recovery wins, for any cc.
        (
            "cc = \"cubic\", recovery = \"newreno\"",
            "sack = true",
            (cubic, Recovery::NewReno),
        ),
        (
            "cc = \"reno\", recovery = \"tahoe\"",
            "",
            (reno, Recovery::Tahoe),
        ),
        (
            "cc = \"newreno\", recovery = \"sack\"",
            "sack = true",
            (reno, Recovery::Sack),
        ),
        // The sink may send SACK blocks that a NewReno sender ignores.
        ("cc = \"newreno\"", "sack = true", (reno, Recovery::NewReno)),
    ];
    for (tcp, sink, want) in cases {
        assert_eq!(axes("", tcp, sink), want, "{tcp} / {sink}");
    }
    // Layered: the default's recovery applies to a flow that names only cc.
    let d = "[defaults.tcp]\nrecovery = \"reno\"\n";
    assert_eq!(axes(d, "cc = \"cubic\"", ""), (cubic, Recovery::Reno));
}

/// The `ns2` profile's SACK is ns-2's `Sack1`, except for the Linux agent
/// (`cubic-ns2`) and with RACK-TLP, which keep RFC 6675.
#[test]
fn the_ns2_profile_runs_sack1() {
    let ns2 = "profile = \"ns2\", ";
    let packets = Growth::Reno {
        abc: None,
        unit: pep_core::cc::WindowUnit::Packets,
    };
    let recovery = |tcp: &str| axes("", &format!("{ns2}{tcp}"), "sack = true").1;
    assert_eq!(
        axes("", &format!("{ns2}cc = \"sack\""), "sack = true"),
        (packets, Recovery::Sack1)
    );
    assert_eq!(recovery("cc = \"cubic-ns2\""), Recovery::Sack);
    assert_eq!(recovery("cc = \"sack\", rack = true"), Recovery::Sack);
    assert_eq!(axes("", "cc = \"sack\"", "sack = true").1, Recovery::Sack);
}

fn errors(text: &str) -> Vec<Diagnostic> {
    match Scenario::from_toml_str(text, "t.toml") {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.diagnostics().to_vec(),
    }
}

#[test]
fn sack_recovery_without_sack_blocks_is_an_error() {
    let e = errors(&with("", "cc = \"sack\"", ""));
    assert_eq!(e.len(), 1, "{e:#?}");
    assert_eq!(e[0].field, "flow \"f1\".tcp.cc");
    assert!(
        e[0].message.contains("cc = \"sack\" needs SACK blocks"),
        "{}",
        e[0]
    );
    let e = errors(&with(
        "",
        "cc = \"cubic\", recovery = \"sack\"",
        "sack = false",
    ));
    assert_eq!(e[0].field, "flow \"f1\".tcp.recovery");
    assert!(e[0].message.contains("recovery = \"sack\""), "{}", e[0]);
    // Written in the defaults: reported once, at the default, however many
    // flows inherit it.
    let text = with("[defaults.tcp]\ncc = \"sack\"\n", "mss = \"1000B\"", "") + "count = 3\n";
    let e = errors(&text);
    assert_eq!(e.len(), 1, "{e:#?}");
    assert_eq!(e[0].field, "defaults.tcp.cc");
    // A flow that turns SACK off under a SACK default is reported there.
    let d = "[defaults.tcp]\ncc = \"sack\"\n[defaults.sink]\nsack = true\n";
    let e = errors(&with(d, "mss = \"1000B\"", "sack = false"));
    assert_eq!(e[0].field, "flow \"f1\".sink.sack");
    // And the unknown names are still refused by name.
    let e = errors(&with("", "recovery = \"fack\"", ""));
    assert!(e[0].message.contains("unknown variant `fack`"), "{}", e[0]);
}

#[test]
fn bbr_is_a_flow_choice_and_a_choice_over_a_profile() {
    // Over the `linux` profile (SACK, PRR, HyStart++): BBR with SACK
    // recovery; the core then leaves PRR and HyStart++ aside.
    assert_eq!(
        axes("", "profile = \"linux\", cc = \"bbr\"", ""),
        (Growth::Bbr, Recovery::Sack)
    );
    let d = "[defaults.tcp]\nprofile = \"linux\"\ncc = \"bbr\"\n";
    assert_eq!(
        axes(d, "mss = \"1448B\"", ""),
        (Growth::Bbr, Recovery::Sack)
    );
    // A misspelt name is refused at its field, with the names it may take.
    let e = errors(&with("", "cc = \"bbr2\"", ""));
    assert_eq!(e[0].field, "flow[0].tcp.cc", "{e:#?}");
    assert!(e[0].message.contains("unknown variant `bbr2`"), "{}", e[0]);
    assert!(e[0].message.contains("`bbr`"), "{}", e[0]);
}
