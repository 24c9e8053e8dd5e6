//! `[[repeat]]`: a group written once loads as the tables written out, in
//! the same order; its errors sit on the template's line and name the copy.

use super::repeat::fill;
use super::tests::{line_of, load};
use super::*;

/// Two routers, then per i a sender, a receiver, their access links and a
/// flow, then one more host: the group sits between plain tables.
const GROUP: &str = r#"[scenario]
name = "t"
duration = "10s"
[[node]]
name = "a"
kind = "router"
[[node]]
name = "b"
kind = "router"
[[link]]
between = ["a", "b"]
rate = "10Mbps"
delay = "50ms"

# The senders' access delays differ: 1, 3, 5 ms.
[[repeat]]
count = 3
[[repeat.node]]
name = "s{i}"
[[repeat.node]]
name = "r{i}"
[[repeat.link]]
between = ["s{i}", "a"]
rate = "100Mbps"
delay = "{1 + 2*i}ms"
[[repeat.link]]
between = ["b", "r{i}"]
rate = "100Mbps"
delay = "5ms"
[repeat.link.reverse]
rate = "{i + 1}Mbps"
[[repeat.flow]]
name = "f{i}"
from = "s{i}"
to = "r{i}"
start = "{(i * 400) % 1000}ms"
source = { kind = "finite", size = "{150000 + 37123 * i}B" }

[[node]]
name = "z"
[[link]]
between = ["z", "b"]
rate = "10Mbps"
delay = "1ms"
"#;

/// [`GROUP`] as a generator would write it.
fn written_out() -> String {
    written_out_n(3)
}

/// [`GROUP`] with `n` copies, as a generator would write it.
fn written_out_n(n: usize) -> String {
    let mut t = GROUP[..GROUP.find("# The senders'").unwrap()].to_string();
    for i in 0..n {
        t += &format!(
            r#"[[node]]
name = "s{i}"
[[node]]
name = "r{i}"
[[link]]
between = ["s{i}", "a"]
rate = "100Mbps"
delay = "{}ms"
[[link]]
between = ["b", "r{i}"]
rate = "100Mbps"
delay = "5ms"
[link.reverse]
rate = "{}Mbps"
[[flow]]
name = "f{i}"
from = "s{i}"
to = "r{i}"
start = "{}ms"
source = {{ kind = "finite", size = "{}B" }}
"#,
            1 + 2 * i,
            i + 1,
            (i * 400) % 1000,
            150000 + 37123 * i
        );
    }
    t + &GROUP[GROUP.find("[[node]]\nname = \"z\"").unwrap()..]
}

#[test]
fn a_group_loads_as_its_tables_written_out_in_order() {
    let sc = load(GROUP).unwrap_or_else(|e| panic!("{e}"));
    let flat = load(&written_out()).unwrap_or_else(|e| panic!("{e}"));
    assert!(sc == flat);
    let names: Vec<&str> = sc.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "s0", "r0", "s1", "r1", "s2", "r2", "z"]);
    let links: Vec<&str> = sc.links.iter().map(|l| l.name.as_str()).collect();
    let order = ["a-b", "s0-a", "b-r0", "s1-a", "b-r1", "s2-a", "b-r2", "z-b"];
    assert_eq!(links, order);
    assert_eq!(
        sc.links[5].forward.delay,
        pep_core::Duration::from_millis(5)
    );
    assert_eq!(sc.links[6].reverse.rate, pep_core::Rate::mbps(3));
    assert_eq!(sc.flows[2].start, pep_core::Duration::from_millis(800));
    // The document an experiment changes has the copies too.
    let doc = parse_document(GROUP, "t.toml").unwrap();
    assert_eq!(doc, parse_document(&written_out(), "t.toml").unwrap());
    assert!(!doc.contains_key("repeat"));
}

#[test]
fn overrides_reach_the_copies() {
    let set = [("link[b-r1].rate".to_string(), "2Mbps".into())];
    let sc = Scenario::from_toml_str_with(GROUP, "t.toml", &set).unwrap();
    assert_eq!(sc.links[4].forward.rate, pep_core::Rate::mbps(2));
    assert_eq!(sc.links[2].forward.rate, pep_core::Rate::mbps(100));
}

#[test]
fn placeholders_are_integer_arithmetic_on_i() {
    assert_eq!(fill("s{i}", 7).unwrap(), "s7");
    assert_eq!(fill("{1 + 2*i}ms", 4).unwrap(), "9ms");
    assert_eq!(fill("{ -(i - 10) / 3 % 2 }", 1).unwrap(), "1");
    assert_eq!(fill("{{i}} {i}{i}", 2).unwrap(), "{i} 22");
    assert_eq!(fill("no braces", 2).unwrap(), "no braces");
    for (t, says) in [
        ("{j}", "unknown name `j`"),
        ("{i / (i - 2)}", "division by zero"),
        ("{i * 9223372036854775807}", "too large"),
        ("{i +}", "ends too soon"),
        ("{(i}", "without its `)`"),
        ("{i i}", "unexpected `i`"),
        ("s{i", "without its `}`"),
        ("s}", "a lone `}`"),
        ("{1.5 * i}", "unexpected `.`"),
    ] {
        let e = fill(t, 2).unwrap_err();
        assert!(e.contains(says), "{t}: {e}");
    }
}

/// The diagnostics of `text`, which must not load.
fn diags(text: &str) -> Vec<Diagnostic> {
    match load(text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.diagnostics().to_vec(),
    }
}

#[test]
fn an_error_in_a_copy_is_placed_in_the_template_and_names_the_copy() {
    // Every copy's rate is bad: one error, at the template, counting them.
    let text = GROUP.replacen(
        "rate = \"100Mbps\"\ndelay = \"5ms\"",
        "rate = \"0Mbps\"\ndelay = \"5ms\"",
        1,
    );
    let d = &diags(&text)[0];
    assert_eq!(d.pos.unwrap().line, line_of(&text, "\"0Mbps\""), "{d}");
    assert_eq!(d.field, "link[2].rate", "{d}");
    assert!(
        d.message
            .ends_with("(in copy i = 0 of a [[repeat]], and in 2 more copies)"),
        "{d}"
    );
    // Only some copies are wrong; the column is the written one, after a
    // filled-in string on the same line.
    let text = GROUP.replacen(
        "between = [\"b\", \"r{i}\"]",
        "between = [\"r{i}\", \"x{i % 2}\"]",
        1,
    );
    let all = diags(&text);
    let line = line_of(&text, "x{i % 2}");
    let column = text.lines().nth(line - 1).unwrap().find("\"x{").unwrap() + 1;
    let at = |d: &Diagnostic| d.pos.map(|p| (p.line, p.column));
    let x0 = all.iter().find(|d| d.message.contains("\"x0\"")).unwrap();
    let x1 = all.iter().find(|d| d.message.contains("\"x1\"")).unwrap();
    assert_eq!(
        (at(x0), at(x1)),
        (Some((line, column)), Some((line, column)))
    );
    assert!(
        x0.message
            .ends_with("(in copy i = 0 of a [[repeat]], and in 1 more copy)"),
        "{x0}"
    );
    assert!(
        x1.message.ends_with("(in copy i = 1 of a [[repeat]])"),
        "{x1}"
    );
    assert_eq!(x1.field, "link[4].between[1]");
    // An unknown field or a bad unit stops the reading, at the first copy's.
    let text = GROUP.replacen("delay = \"5ms\"", "delay = \"5ms\"\nlag = 1", 1);
    let d = &diags(&text)[0];
    assert_eq!(d.pos.unwrap().line, line_of(&text, "lag = 1"), "{d}");
    assert!(d.message.contains("unknown field `lag`"), "{d}");
    assert!(
        d.message.ends_with("(in copy i = 0 of a [[repeat]])"),
        "{d}"
    );
    // Tables after the group keep their own lines.
    let text = GROUP.replacen("delay = \"1ms\"", "delay = \"1 ms s\"", 1);
    let d = &diags(&text)[0];
    assert_eq!(
        (d.field.as_str(), d.pos.unwrap().line),
        ("link[7].delay", line_of(&text, "1 ms s"))
    );
    assert!(!d.message.contains("repeat"), "{d}");
}

#[test]
fn many_copies_with_different_problems_at_one_place_are_counted_not_listed() {
    // 50 copies, each naming a different unknown node at the same place:
    // the first SHOWN_PER_PLACE are listed, the rest counted in the last.
    let text = GROUP.replacen("count = 3", "count = 50", 1).replacen(
        "between = [\"b\", \"r{i}\"]",
        "between = [\"b\", \"y{i}\"]",
        1,
    );
    let all = diags(&text);
    let line = line_of(&text, "y{i}");
    let here: Vec<_> = all
        .iter()
        .filter(|d| d.pos.is_some_and(|p| p.line == line))
        .collect();
    assert_eq!(here.len(), super::error::SHOWN_PER_PLACE, "{all:#?}");
    for (i, d) in here.iter().enumerate() {
        assert!(d.message.contains(&format!("\"y{i}\"")), "{d}");
    }
    let hidden = 50 - super::error::SHOWN_PER_PLACE;
    assert!(
        here[0].message.ends_with("(in copy i = 0 of a [[repeat]])"),
        "{}",
        here[0]
    );
    let last = here[super::error::SHOWN_PER_PLACE - 1];
    assert!(
        last.message.ends_with(&format!(
            "(in copy i = 2 of a [[repeat]]); {hidden} other problems of other copies here not shown"
        )),
        "{last}"
    );
    // Fewer than that many more: each copy still listed.
    let text = GROUP.replacen(
        "between = [\"b\", \"r{i}\"]",
        "between = [\"b\", \"y{i}\"]",
        1,
    );
    let listed = diags(&text)
        .iter()
        .filter(|d| d.pos.is_some_and(|p| p.line == line_of(&text, "y{i}")))
        .count();
    assert_eq!(listed, 3);
}

#[test]
fn a_placeholder_that_fails_is_reported_once_at_its_string() {
    let text = GROUP.replacen("delay = \"{1 + 2*i}ms\"", "delay = \"{10 / (2 - i)}ms\"", 1);
    let all = diags(&text);
    assert_eq!(all.len(), 1, "{all:#?}");
    let d = &all[0];
    assert_eq!(d.field, "repeat[0].link[0].delay");
    assert_eq!(d.pos.unwrap().line, line_of(&text, "{10 / (2 - i)}"));
    assert!(
        d.message
            .ends_with("division by zero (in copy i = 2 of a [[repeat]])"),
        "{d}"
    );
}

#[test]
fn a_group_must_be_well_formed() {
    let cases = [
        (
            "count = 3\n",
            "",
            "repeat[0]",
            "[[repeat]]",
            "missing field `count`",
        ),
        (
            "count = 3\n",
            "count = 0\n",
            "repeat[0].count",
            "count = 0",
            "from 1 to 10000000",
        ),
        (
            "count = 3\n",
            "count = \"3\"\n",
            "repeat[0].count",
            "count = \"3\"",
            "integer",
        ),
        (
            "count = 3\n",
            "count = 3\nfrom = 1\n",
            "repeat[0].from",
            "from = 1",
            "unknown field `from`",
        ),
        (
            "[[repeat.flow]]",
            "[repeat.flow]",
            "repeat[0].flow",
            "[repeat.flow]",
            "write [[repeat.flow]]",
        ),
        (
            "[[repeat.flow]]",
            "[[repeat.flows]]",
            "repeat[0].flows",
            "[[repeat.flows]]",
            "repeats only",
        ),
        (
            "count = 3\n",
            "count = 3\ntrace = { link = \"a-b\" }\n",
            "repeat[0].trace",
            "trace = {",
            "as [[repeat.trace]]",
        ),
    ];
    for (from, to, field, line, says) in cases {
        let text = GROUP.replacen(from, to, 1);
        let all = diags(&text);
        let d = all
            .iter()
            .find(|d| d.field == field)
            .unwrap_or_else(|| panic!("{to}: {all:#?}"));
        assert_eq!(d.pos.unwrap().line, line_of(&text, line), "{d}");
        assert!(d.message.contains(says), "{d}");
    }
    // A member after another table: it would belong to the group above.
    let text = format!("{GROUP}[[repeat.node]]\nname = \"late{{i}}\"\n");
    let d = &diags(&text)[0];
    assert_eq!(d.pos.unwrap().line, line_of(&text, "late") - 1, "{d}");
    assert!(d.message.contains("other tables come between"), "{d}");
    // A group with nothing in it, and `repeat` as a plain value.
    let text = format!("{GROUP}[[repeat]]\ncount = 2\n");
    assert!(diags(&text)[0].message.contains("nothing to repeat"));
    let text = written_out().replacen("[scenario]", "repeat = 2\n[scenario]", 1);
    assert!(diags(&text)[0]
        .message
        .contains("write each group as a [[repeat]]"));
}

#[test]
fn a_syntax_error_beside_a_group_keeps_its_line() {
    let text = GROUP.replacen("name = \"z\"", "name = \"z", 1);
    let d = &diags(&text)[0];
    assert_eq!(d.pos.unwrap().line, line_of(&text, "name = \"z"), "{d}");
}

#[test]
fn braces_outside_a_group_are_text() {
    let text = GROUP.replacen(
        "name = \"t\"",
        "name = \"t\"\ndescription = \"{i} and }\"",
        1,
    );
    assert_eq!(load(&text).unwrap().description, "{i} and }");
}

#[test]
fn the_docs_example_means_what_it_says() {
    let docs = include_str!("../../../../docs/scenario-format.md");
    let section = &docs[docs.find("## `[[repeat]]`").unwrap()..];
    let start = section.find("```toml\n").unwrap() + "```toml\n".len();
    let example = &section[start..start + section[start..].find("```").unwrap()];
    let text = format!("[scenario]\nname = \"t\"\nduration = \"10s\"\n{example}");
    let sc = load(&text).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = sc.nodes.iter().take(6).map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "s0", "r0", "s1", "r1"]);
    assert_eq!(
        (sc.nodes.len(), sc.links.len(), sc.flows.len()),
        (102, 101, 50)
    );
    let links: Vec<&str> = sc.links.iter().take(4).map(|l| l.name.as_str()).collect();
    assert_eq!(links, ["bottleneck", "s0-a", "b-r0", "s1-a"]);
    let ms = pep_core::Duration::from_millis;
    assert_eq!(sc.links[99].forward.delay, ms(99));
    assert_eq!(sc.flows[49].name, "f49");
    assert_eq!(sc.flows[49].start, ms(490));
}

/// Two groups among plain tables, each array (nodes, links, flows) with
/// tables written before, between and after them.
const TWO_GROUPS: &str = r#"[scenario]
name = "t"
duration = "10s"
[[node]]
name = "a"
kind = "router"
[[node]]
name = "b"
kind = "router"
[[link]]
between = ["a", "b"]
rate = "10Mbps"
delay = "50ms"
[[repeat]]
count = 2
[[repeat.node]]
name = "s{i}"
[[repeat.link]]
between = ["s{i}", "a"]
rate = "100Mbps"
delay = "{1 + i}ms"
[[node]]
name = "m"
[[link]]
between = ["m", "b"]
rate = "100Mbps"
delay = "1ms"
[[repeat]]
count = 3
[[repeat.node]]
name = "r{i}"
[[repeat.link]]
between = ["b", "r{i}"]
rate = "100Mbps"
delay = "5ms"
[[repeat.flow]]
name = "f{i}"
from = "s{i % 2}"
to = "r{i}"
start = "{i * 100}ms"
[[flow]]
name = "g"
from = "m"
to = "a"
"#;

/// [`TWO_GROUPS`] written out by hand.
const TWO_WRITTEN: &str = r#"[scenario]
name = "t"
duration = "10s"
[[node]]
name = "a"
kind = "router"
[[node]]
name = "b"
kind = "router"
[[link]]
between = ["a", "b"]
rate = "10Mbps"
delay = "50ms"
[[node]]
name = "s0"
[[link]]
between = ["s0", "a"]
rate = "100Mbps"
delay = "1ms"
[[node]]
name = "s1"
[[link]]
between = ["s1", "a"]
rate = "100Mbps"
delay = "2ms"
[[node]]
name = "m"
[[link]]
between = ["m", "b"]
rate = "100Mbps"
delay = "1ms"
[[node]]
name = "r0"
[[link]]
between = ["b", "r0"]
rate = "100Mbps"
delay = "5ms"
[[flow]]
name = "f0"
from = "s0"
to = "r0"
start = "0ms"
[[node]]
name = "r1"
[[link]]
between = ["b", "r1"]
rate = "100Mbps"
delay = "5ms"
[[flow]]
name = "f1"
from = "s1"
to = "r1"
start = "100ms"
[[node]]
name = "r2"
[[link]]
between = ["b", "r2"]
rate = "100Mbps"
delay = "5ms"
[[flow]]
name = "f2"
from = "s0"
to = "r2"
start = "200ms"
[[flow]]
name = "g"
from = "m"
to = "a"
"#;

#[test]
fn copies_go_in_their_place_among_tables_before_between_and_after() {
    // The copies are read apart from the rest of the file and put in
    // place; the result is the file written out.
    let sc = load(TWO_GROUPS).unwrap_or_else(|e| panic!("{e}"));
    assert!(sc == load(TWO_WRITTEN).unwrap_or_else(|e| panic!("{e}")));
    let names: Vec<&str> = sc.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "s0", "s1", "m", "r0", "r1", "r2"]);
    let flows: Vec<&str> = sc.flows.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(flows, ["f0", "f1", "f2", "g"]);
    let doc = parse_document(TWO_GROUPS, "t.toml").unwrap();
    assert_eq!(doc, parse_document(TWO_WRITTEN, "t.toml").unwrap());
}

#[test]
fn an_error_names_the_field_the_file_written_out_would() {
    // Each mistake made in the group (or beside it) and in the same place
    // of the file written out: the same field path and message, and the
    // group's placed on the template's line, naming the copy.
    let cases = [
        // An unknown field in the second group's first copy: link[4].
        (
            "delay = \"5ms\"",
            "delay = \"5ms\"\nlag = 1",
            "lag = 1",
            Some(0),
        ),
        // A bad unit in a copy: the first copy's flow.
        (
            "start = \"{i * 100}ms\"",
            "start = \"{i * 100}xs\"",
            "xs",
            Some(0),
        ),
        // A table after both groups: flow[3], not the flow[0] it is
        // among the tables outside the groups.
        ("to = \"a\"", "to = \"a\"\nwindow = 3", "window = 3", None),
        // A bad unit in a plain table between the groups: link[3].
        (
            "delay = \"1ms\"\n[[repeat]]",
            "delay = \"1 ms s\"\n[[repeat]]",
            "1 ms s",
            None,
        ),
        // Validation after reading: a flow to a node no one wrote.
        ("to = \"r{i}\"", "to = \"q{i}\"", "q{i}", Some(0)),
    ];
    for (from, to, at, copy) in cases {
        let grouped = TWO_GROUPS.replacen(from, to, 1);
        let written_from = from.replace("{i * 100}", "0").replace("{i}", "0");
        let written_to = to.replace("{i * 100}", "0").replace("{i}", "0");
        let written = TWO_WRITTEN
            .replacen(&written_from, &written_to, 1)
            .replace("delay = \"1ms\"\n[[repeat]]", "");
        let written = if from.contains("[[repeat]]") {
            // The plain link between the groups is m-b, the fourth link.
            TWO_WRITTEN.replacen(
                "between = [\"m\", \"b\"]\nrate = \"100Mbps\"\ndelay = \"1ms\"",
                "between = [\"m\", \"b\"]\nrate = \"100Mbps\"\ndelay = \"1 ms s\"",
                1,
            )
        } else {
            written
        };
        let g = &diags(&grouped)[0];
        let w = &diags(&written)[0];
        assert_eq!(g.field, w.field, "{g}\n{w}");
        let note = copy.map_or(String::new(), |i| {
            format!(" (in copy i = {i} of a [[repeat]]")
        });
        assert!(
            g.message.starts_with(&w.message)
                || g.message.starts_with(&format!("{}{note}", w.message)),
            "{g}\n{w}"
        );
        assert_eq!(g.message.contains("(in copy i = 0"), copy.is_some(), "{g}");
        assert_eq!(g.pos.unwrap().line, line_of(&grouped, at), "{g}");
    }
}

#[test]
fn a_group_too_large_to_hold_is_refused_before_it_is_made() {
    // 10 million copies of 150 bytes: over 512 MiB of tables, refused at
    // once with the count's position, not after making them.
    let text = GROUP.replacen("count = 3", "count = 10000000", 1);
    let d = &diags(&text)[0];
    assert_eq!(d.field, "repeat[0].count");
    assert!(
        d.message.ends_with("would be more than 512 MiB of text"),
        "{d}"
    );
    assert_eq!(d.pos.unwrap().line, line_of(&text, "count = 10000000"));
}

#[test]
fn overrides_outside_the_groups_leave_the_copies_as_written() {
    // Overrides that reach only tables written outside the groups are
    // applied to those alone (the copies are read from the file); the
    // scenario is the one changing the whole document gives.
    let whole = |text: &str, set: &[(String, toml::Value)]| {
        let mut doc = parse_document(text, "t.toml").unwrap();
        for (p, v) in set {
            apply_override(&mut doc, p, v.clone()).unwrap();
        }
        Scenario::from_table(doc, "t.toml")
    };
    let sets: [&[(&str, toml::Value)]; 3] = [
        &[("scenario.duration", "20s".into())],
        &[
            ("link[a-b].rate", "2Mbps".into()),
            ("defaults.tcp.cc", "cubic".into()),
        ],
        &[
            ("flow[g].start", "3s".into()),
            ("output.per_flow", true.into()),
        ],
    ];
    for set in sets {
        let set: Vec<(String, toml::Value)> = set
            .iter()
            .map(|(p, v)| (p.to_string(), v.clone()))
            .collect();
        let fast = super::overridden_outside_groups(TWO_GROUPS, "t.toml", &set)
            .expect("every path reaches a written table")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(fast == whole(TWO_GROUPS, &set).unwrap(), "{set:?}");
        let sc = Scenario::from_toml_str_with(TWO_GROUPS, "t.toml", &set).unwrap();
        assert!(sc == fast);
    }
    // An index counts copies, a name may be a copy's: the whole document.
    for path in ["link[1].rate", "link[b-r1].rate"] {
        let set = [(path.to_string(), "2Mbps".into())];
        assert!(super::overridden_outside_groups(TWO_GROUPS, "t.toml", &set).is_none());
        let sc = Scenario::from_toml_str_with(TWO_GROUPS, "t.toml", &set).unwrap();
        assert!(sc == whole(TWO_GROUPS, &set).unwrap(), "{path}");
    }
    // A bad value set: the same error (the value is not in the file, so
    // it has no position there); one already in the file keeps its line.
    let set = [("link[m-b].delay".to_string(), "5 parsecs".into())];
    let fast = super::overridden_outside_groups(TWO_GROUPS, "t.toml", &set).unwrap();
    let d = fast.unwrap_err().diagnostics()[0].clone();
    let w = whole(TWO_GROUPS, &set).unwrap_err().diagnostics()[0].clone();
    assert_eq!((&d.field, &d.message, d.pos), (&w.field, &w.message, w.pos));
    assert_eq!(d.field, "link[3].delay");
    let text = TWO_GROUPS.replacen("to = \"a\"", "to = \"q\"", 1);
    let set = [("scenario.duration".to_string(), "20s".into())];
    let fast = super::overridden_outside_groups(&text, "t.toml", &set).unwrap();
    let d = fast.unwrap_err().diagnostics()[0].clone();
    assert_eq!(d.pos.unwrap().line, line_of(&text, "to = \"q\""), "{d}");
}

#[test]
fn an_override_that_copies_fail_names_them_as_the_file_would() {
    // `--duration 150ms` on a file whose copies start later: each copy's
    // problem is placed at its template's line, named by copy, and
    // counted past a few, as when the file itself says 150ms; not one
    // position-less line per copy.
    let set = [("scenario.duration".to_string(), "150ms".into())];
    let written = TWO_GROUPS.replacen("duration = \"10s\"", "duration = \"150ms\"", 1);
    let fast = super::overridden_outside_groups(TWO_GROUPS, "t.toml", &set).unwrap();
    let d = fast.unwrap_err().diagnostics().to_vec();
    let line = line_of(TWO_GROUPS, "start = \"{i * 100}ms\"");
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].pos.map(|p| p.line), Some(line));
    assert_eq!(d[0].field, "flow \"f2\".start");
    assert!(
        d[0].message.ends_with("(in copy i = 2 of a [[repeat]])"),
        "{}",
        d[0]
    );
    let w = Scenario::from_toml_str(&written, "t.toml").unwrap_err();
    assert_eq!(d, w.diagnostics());
    // Ten thousand copies that fail differently: three lines, the rest
    // counted.
    let many = TWO_GROUPS
        .replacen("count = 3", "count = 10000", 1)
        .replacen("{i * 100}ms", "{i}ms", 1);
    let set = [("scenario.duration".to_string(), "2s".into())];
    let d = Scenario::from_toml_str_with(&many, "t.toml", &set).unwrap_err();
    let d = d.diagnostics();
    assert_eq!(d.len(), 3, "{d:?}");
    assert_eq!(d[0].field, "flow \"f2000\".start");
    assert!(d[2]
        .message
        .ends_with("; 7997 other problems of other copies here not shown"));
}

#[test]
fn many_copies_are_read_on_every_core_and_in_order() {
    // 5,000 copies: past the count read on one core, so on a machine of
    // two cores or more they are read in runs of 1,024 at once. They load
    // as the file written out, in order.
    let many = GROUP.replacen("count = 3", "count = 5000", 1);
    let sc = load(&many).unwrap_or_else(|e| panic!("{e}"));
    let flat = load(&written_out_n(5000)).unwrap_or_else(|e| panic!("{e}"));
    assert!(sc == flat);
    assert_eq!(sc.flows[4999].name, "f4999");
    assert_eq!(sc.nodes[2 + 2 * 4321].name, "s4321");
    // From copy 4,001 on the delay is negative, which no copy can read:
    // the error names copy 4,001, in the fourth run, whichever run was
    // read first, at the template's line.
    let bad = many.replacen("delay = \"{1 + 2*i}ms\"", "delay = \"{4000 - i}ms\"", 1);
    let e = load(&bad).unwrap_err();
    let e = e.diagnostics();
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(
        e[0].pos.map(|p| p.line),
        Some(line_of(&bad, "{4000 - i}ms"))
    );
    assert!(
        e[0].message.contains("(in copy i = 4001 of a [[repeat]]"),
        "{}",
        e[0]
    );
}
