//! `scenario.cut`: what may be cut, and the errors that say why not.

use super::tests::{base_with, expect, load, two_routers, BASE};

/// `BASE` (a - r - b) cut at `link`, with `extra` appended.
pub(super) fn cut_at(link: &str, extra: &str) -> String {
    let text = base_with(
        "duration = \"10s\"\n",
        &format!("duration = \"10s\"\ncut = \"{link}\"\n"),
    );
    format!("{text}{extra}")
}

#[test]
fn a_cut_link_splits_the_nodes_by_side() {
    let s = load(&cut_at("r-b", "")).unwrap();
    let c = s.cut.expect("cut");
    assert_eq!(c.link, 1);
    assert_eq!(c.far, vec![false, false, true]);
    assert!(load(BASE).unwrap().cut.is_none());
}

#[test]
fn an_unknown_link_is_named_with_the_known_ones() {
    let t = cut_at("r-c", "");
    expect(
        &t,
        "scenario.cut",
        "cut = ",
        "unknown link \"r-c\"; links are: a-r, r-b",
    );
}

#[test]
fn a_link_with_a_way_around_it_is_not_a_cut() {
    let t = cut_at(
        "r-b",
        "\n[[link]]\nbetween = [\"a\", \"b\"]\nrate = \"1Mbps\"\ndelay = \"5ms\"\n",
    );
    let t = t.replacen("name = \"a\"\n", "name = \"a\"\nkind = \"router\"\n", 1);
    expect(
        &t,
        "scenario.cut",
        "cut = ",
        "does not cut the network in two",
    );
}

#[test]
fn the_cut_link_needs_a_delay_both_ways() {
    let t = cut_at("r-b", "").replacen("delay = \"10ms\"", "delay = \"0s\"", 1);
    expect(&t, "scenario.cut", "cut = ", "needs a delay both ways");
}

#[test]
fn a_half_duplex_link_cannot_be_cut() {
    let t = cut_at("r-b", "").replacen(
        "delay = \"10ms\"",
        "delay = \"10ms\"\nmedium = \"half-duplex\"",
        1,
    );
    expect(&t, "scenario.cut", "cut = ", "half-duplex");
}

#[test]
fn a_trace_of_both_directions_of_the_cut_link_is_refused() {
    let t = cut_at("r-b", "\n[[trace]]\nlink = \"r-b\"\n");
    expect(&t, "scenario.cut", "cut = ", "trace one direction");
    assert!(load(&cut_at("r-b", "\n[[trace]]\nlink = \"r->b\"\n")).is_ok());
}

#[test]
fn an_agent_whose_halves_share_state_cannot_be_cut() {
    let agent = "\n[[agent]]\nkind = \"split-pair\"\nname = \"pep\"\nnodes = [\"r\", \"b\"]\n";
    let base = two_routers();
    let cut = base.replacen(
        "duration = \"10s\"\n",
        "duration = \"10s\"\ncut = \"r-b\"\n",
        1,
    );
    let credit = format!("{agent}end_buffer = 20\nflow_credit = true\n");
    expect(
        &format!("{cut}{credit}"),
        "scenario.cut",
        "cut = ",
        "agent[0] (\"pep\") sits on both sides: per-flow credit",
    );
    assert!(load(&format!("{cut}{agent}")).is_ok());
    assert!(load(&format!("{base}{credit}")).is_ok());
}
