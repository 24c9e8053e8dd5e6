//! Experiment files: every mistake is reported with the file, the line
//! where it can be placed, the field and what would be right; the points'
//! scenario warnings are gathered once for all that share them. Also: every
//! experiment shipped under scenarios/ loads, and the reproduction registry
//! refuses unknown papers by listing the known ones.

use std::path::Path;

use pep_exp::{Experiment, Mode};

const BASE: &str = r#"
[scenario]
name = "two"
duration = "2s"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
between = ["a", "b"]
rate = "10Mbps"
delay = "10ms"
[[flow]]
name = "f"
from = "a"
to = "b"
"#;

const GOOD: &str = r#"[experiment]
name = "x"
base = "base.toml"
seeds = 2
measures = ["flow.f.goodput_mbps"]

[vary]
"link[0].rate" = ["10Mbps", "20Mbps"]
"#;

fn parse(text: &str) -> Result<Experiment, String> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("base.toml"), BASE).unwrap();
    Experiment::parse(text, "exp.toml", Some(dir.path())).map_err(|e| e.to_string())
}

fn err(text: &str) -> String {
    parse(text).expect_err("should be refused")
}

#[test]
fn a_good_file_parses() {
    let e = parse(GOOD).unwrap();
    assert_eq!(e.params, ["link[0].rate"]);
    assert_eq!(e.points.len(), 2);
    assert_eq!(e.seeds, [1, 2]);
    assert_eq!(e.describe(&e.points[1]), "link[0].rate = 20Mbps");
}

#[test]
fn points_and_grid_combine() {
    let text = format!(
        "{GOOD}\n[[point]]\n\"link[0].delay\" = \"5ms\"\n[[point]]\n\"link[0].delay\" = \"50ms\"\n\"flow[f].start\" = \"1s\"\n"
    );
    let e = parse(&text).unwrap();
    assert_eq!(e.params, ["link[0].rate", "link[0].delay", "flow[f].start"]);
    let d: Vec<String> = e.points.iter().map(|p| e.describe(p)).collect();
    assert_eq!(
        d,
        [
            "link[0].rate = 10Mbps, link[0].delay = 5ms",
            "link[0].rate = 20Mbps, link[0].delay = 5ms",
            "link[0].rate = 10Mbps, link[0].delay = 50ms, flow[f].start = 1s",
            "link[0].rate = 20Mbps, link[0].delay = 50ms, flow[f].start = 1s",
        ]
    );
}

#[test]
fn mistakes_name_the_file_line_and_field() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "\"flow.f.goodput_mbps\"",
            "\"flow.f.goodput\"",
            "exp.toml:5: experiment.measures[0]: \"flow.f.goodput\": unknown flow field \"goodput\"; flow fields are: goodput_mbps,",
        ),
        (
            "\"flow.f.goodput_mbps\"",
            "\"flow.g.goodput_mbps\"",
            "exp.toml:5: experiment.measures[0]: flow.g.goodput_mbps: no flow is named \"g\"; flows are: f",
        ),
        (
            "[\"10Mbps\", \"20Mbps\"]",
            "\"10Mbps\"",
            "exp.toml:8: vary.\"link[0].rate\": expected a non-empty list of values",
        ),
        (
            "\"link[0].rate\" =",
            "\"link[9].rate\" =",
            "exp.toml:8: point p000: <override>: link[9].rate: link[9] does not exist: there are 1 [[link]] tables",
        ),
        (
            "\"link[0].rate\" =",
            "\"scenario.seed\" =",
            "exp.toml:8: vary.\"scenario.seed\": the seed is set by `seeds`, not as a parameter",
        ),
        (
            "\"link[0].rate\" =",
            "link.rate =",
            "exp.toml:8: vary.\"link\": `link` is a whole table: write the full path of a field as a quoted key",
        ),
        (
            "\"link[0].rate\" =",
            "\"\" =",
            "exp.toml:8: vary.\"\": an empty key: write the full path of a field",
        ),
        (
            "seeds = 2",
            "seeds = \"two\"",
            "exp.toml:4: experiment.seeds: expected a count (seeds = 3 runs seeds 1, 2, 3) or a list",
        ),
        (
            "base = \"base.toml\"",
            "base = \"nope.toml\"",
            "exp.toml:3: experiment.base: /",
        ),
        (
            "name = \"x\"",
            "name = \"x\"\nwindow = 3",
            "exp.toml:3: experiment.window: unknown field `window`, expected one of `name`, `description`, `base`, `seeds`, `measures`, `outputs`",
        ),
        (
            "[\"10Mbps\", \"20Mbps\"]",
            "[\"10Mbps\", \"0Mbps\"]",
            "exp.toml: point p001 (link[0].rate = 0Mbps): the base scenario with the point's values is invalid:\n",
        ),
    ];
    for (from, to, want) in cases {
        assert!(GOOD.contains(from), "{from}");
        let got = err(&GOOD.replacen(from, to, 1));
        assert!(got.starts_with(want), "\n got: {got}\nwant: {want}");
    }
    // The base that is not there, by its path.
    let got = err(&GOOD.replacen("base = \"base.toml\"", "base = \"nope.toml\"", 1));
    assert!(
        got.contains("nope.toml: cannot read the base scenario: No such file"),
        "{got}"
    );
}

#[test]
fn plot_mistakes_are_named() {
    let plot = |body: &str| err(&format!("{GOOD}\n[[plot]]\nname = \"p\"\n{body}\n"));
    assert!(plot("kind = \"pie\"")
        .starts_with("exp.toml:12: plot[0].kind: unknown plot kind \"pie\"; kinds are: measure, over_time, histogram, cdf, scatter"));
    assert!(plot("kind = \"measure\"\ny = \"flow.f.goodput_mbps\"")
        .starts_with("exp.toml:11: plot[0].x: a measure plot needs `x`"));
    assert!(plot("kind = \"measure\"\nx = \"link[0].delay\"\ny = \"flow.f.goodput_mbps\"")
        .starts_with("exp.toml:13: plot[0].x: \"link[0].delay\" is not a varied parameter; parameters are: link[0].rate"));
    assert!(plot("kind = \"cdf\"\ny = \"total_goodput_mbps\"")
        .contains("plot[0].y: \"total_goodput_mbps\" is not one of the experiment's measures: flow.f.goodput_mbps"));
    assert!(plot("kind = \"over_time\"\ncsv = \"cwnd\"\nx = \"a\"")
        .contains("plot[0].x: a over_time plot does not use `x`"));
    assert!(
        plot("kind = \"cdf\"\ny = \"flow.f.goodput_mbps\"\nformats = [\"gif\"]")
            .contains("plot[0].formats: expected a non-empty list of \"svg\" and/or \"png\"")
    );
    // Found before the runs, not after every one of them.
    let e = plot("kind = \"over_time\"\ncsv = \"cwnd\"\ny = \"bogus\"");
    assert!(
        e.starts_with("exp.toml:14: plot[0].y: cwnd.csv has no column \"bogus\"; its columns are: cwnd_bytes, ssthresh_bytes"),
        "{e}"
    );
    let e = plot("kind = \"over_time\"\ncsv = \"cwnd\"\nselect = \"nope\"");
    assert!(
        e.starts_with("exp.toml:14: plot[0].select: cwnd.csv has no rows for \"nope\"; it has f"),
        "{e}"
    );
    let e = plot("kind = \"over_time\"\ncsv = \"queues\"\nselect = \"a->c\"");
    assert!(
        e.contains("queues.csv has no rows for \"a->c\"; it has a->b, b->a"),
        "{e}"
    );
    assert!(parse(&format!(
        "{GOOD}\n[[plot]]\nname = \"p\"\nkind = \"over_time\"\ncsv = \"queues\"\nselect = \"b->a\"\n"
    ))
    .is_ok());
}

#[test]
fn every_shipped_experiment_loads() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut found = 0;
    let mut dirs = vec![root];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "toml")
                && std::fs::read_to_string(&p)
                    .unwrap()
                    .lines()
                    .any(|l| l.trim() == "[experiment]")
            {
                Experiment::load(&p).unwrap_or_else(|e| panic!("{e}"));
                found += 1;
            }
        }
    }
    assert!(found >= 3);
}

#[test]
fn unknown_papers_list_the_known_ones() {
    let e = pep_exp::reproduce::find("nope").err().unwrap();
    assert!(
        e.starts_with("unknown paper \"nope\"; known papers: baseline")
            && e.ends_with("(or `all` for every one)"),
        "{e}"
    );
    for p in pep_exp::reproduce::registry() {
        assert_eq!(pep_exp::reproduce::find(p.name).unwrap().name, p.name);
    }
}

#[test]
fn a_scenario_given_as_an_experiment_says_which_command_runs_it() {
    let e = err(BASE);
    assert!(e.starts_with("exp.toml: "), "{e}");
    assert!(
        e.contains("this is a scenario") && e.contains("pep sim run"),
        "{e}"
    );
    // An experiment with a stray [scenario] table is still an experiment,
    // refused by field as before.
    let e = err(&format!("{GOOD}\n[scenario]\nname = \"x\"\n"));
    assert!(e.contains("unknown field `scenario`"), "{e}");
}

fn parse_with_base(text: &str, base: &str) -> Result<Experiment, String> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("base.toml"), base).unwrap();
    Experiment::parse(text, "exp.toml", Some(dir.path())).map_err(|e| e.to_string())
}

#[test]
fn agent_measures_name_an_agent_that_exists() {
    // No agents at all.
    let text = GOOD.replace("\"flow.f.goodput_mbps\"", "\"agent.x.y\"");
    assert_eq!(
        err(&text),
        "exp.toml:5: experiment.measures[0]: agent.x.y: no agent is named \"x\"; \
         the scenario has no agents"
    );
    // One agent, named by default <kind>@<node>: its name is checked, the
    // stat is the kind's and is not.
    let base = format!("{BASE}\n[[agent]]\nkind = \"ack-regen\"\nnode = \"a\"\nfactor = 1\n");
    let e = parse_with_base(&text, &base).unwrap_err();
    assert_eq!(
        e,
        "exp.toml:5: experiment.measures[0]: agent.x.y: no agent is named \"x\"; \
         agents are: ack-regen@a"
    );
    let ok = GOOD.replace("\"flow.f.goodput_mbps\"", "\"agent.ack-regen@a.whatever\"");
    parse_with_base(&ok, &base).unwrap();
}

#[test]
fn override_errors_blame_the_overrides_and_base_errors_the_base() {
    // A [set] path the base does not have: not the base's fault.
    let text = format!("{GOOD}\n[set]\n\"frob.x\" = 1\n");
    let e = err(&text);
    assert!(
        e.starts_with(
            "exp.toml: point p000 (link[0].rate = 10Mbps): the base scenario with this \
             experiment's [set] and the point's values is invalid:\n"
        ),
        "{e}"
    );
    assert!(
        e.contains("base.toml + overrides: frob: unknown field `frob`"),
        "{e}"
    );
    assert!(!e.contains("base.toml: "), "{e}");
    // [short].set alone, in a point that sets nothing.
    let text = "[experiment]\nname = \"x\"\nbase = \"base.toml\"\nmeasures = [\"events\"]\n\
                [short]\nset = { \"link[0].rate\" = \"0Mbps\" }\n";
    let e = err(text);
    assert!(
        e.starts_with(
            "exp.toml: point p000: the base scenario with this experiment's [short].set \
             is invalid:\n"
        ),
        "{e}"
    );
    assert!(e.contains("base.toml + overrides: link[0].rate: "), "{e}");
    // A base invalid on its own: the base, with its line and column.
    let bad_base = BASE.replace("delay = \"10ms\"", "delay = \"ten\"");
    let e = parse_with_base(GOOD, &bad_base).unwrap_err();
    assert!(
        e.starts_with("exp.toml:3: experiment.base: the base scenario is invalid:\n"),
        "{e}"
    );
    assert!(e.contains("base.toml:12:9: link[0].delay: "), "{e}");
    assert!(!e.contains("point p0"), "{e}");
    // A base field every point overrides is the points' business: a base
    // that is only a template is fine.
    let template = BASE.replace("rate = \"10Mbps\"", "rate = \"0Mbps\"");
    parse_with_base(GOOD, &template).unwrap();
    let e = parse_with_base(GOOD, "[scenario]\nname = 3\n").unwrap_err();
    assert!(
        e.starts_with("exp.toml:3: experiment.base: the base scenario is invalid:\n"),
        "{e}"
    );
}

#[test]
fn experiment_names_are_one_plain_path_component() {
    for bad in ["../../../escaped", "a/b", "a\\\\b", ".", ".."] {
        let e = err(&GOOD.replace("name = \"x\"", &format!("name = \"{bad}\"")));
        assert!(
            e.starts_with("exp.toml:2: experiment.name: ") && e.contains("not a plain name"),
            "{bad}: {e}"
        );
    }
    parse(&GOOD.replace("name = \"x\"", "name = \"x..y z\"")).unwrap();
}

#[test]
fn only_regular_files_of_sensible_size_are_read() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("base.toml"), BASE).unwrap();
    let load = |p: &Path| Experiment::load(p).map(|_| ()).unwrap_err().to_string();
    // The experiment itself: a directory, a device, a huge (sparse) file.
    let e = load(dir.path());
    assert!(
        e.ends_with("the experiment file must be a regular file, but this is a directory"),
        "{e}"
    );
    #[cfg(unix)]
    {
        let e = load(Path::new("/dev/zero"));
        assert_eq!(
            e,
            "/dev/zero: the experiment file must be a regular file, but this is a device"
        );
    }
    let huge = dir.path().join("huge.toml");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(17 << 20)
        .unwrap();
    let e = load(&huge);
    assert!(
        e.ends_with("the experiment file is larger than 16 MiB"),
        "{e}"
    );
    // The base it names.
    let exp = dir.path().join("exp.toml");
    for (base, want) in [
        (
            "/dev/zero",
            "/dev/zero: the base scenario must be a regular file, but this is a device",
        ),
        (
            "huge.toml",
            "huge.toml: the base scenario is larger than 16 MiB",
        ),
        (
            ".",
            "the base scenario must be a regular file, but this is a directory",
        ),
    ] {
        if cfg!(not(unix)) && base.starts_with("/dev") {
            continue;
        }
        std::fs::write(&exp, GOOD.replace("base.toml", base)).unwrap();
        let e = load(&exp);
        assert!(
            e.contains("exp.toml:3: experiment.base: ") && e.contains(want),
            "{base}: {e}"
        );
    }
    std::fs::write(&exp, GOOD).unwrap();
    Experiment::load(&exp).unwrap();
}

#[test]
fn an_integer_beyond_i64_is_named_by_its_field() {
    let e = err(&GOOD.replace("seeds = 2", "seeds = 99999999999999999999"));
    assert!(e.contains("experiment.seeds"), "{e}");
    assert!(e.contains("integer too large"), "{e}");
}

/// Points times seeds is capped, not only each: 100 values x 100000 seeds
/// took 3.6 GB in 8 s before the first run, and a million-point grid
/// 13 GB to check.
#[test]
fn runs_are_capped_as_points_times_seeds() {
    let values: Vec<String> = (1..=101).map(|i| format!("\"{i}ms\"")).collect();
    let vary = format!("[vary]\n\"link[0].delay\" = [{}]\n", values.join(", "));
    let many = |seeds: &str| {
        format!(
            "[experiment]\nname = \"x\"\nbase = \"base.toml\"\nseeds = {seeds}\n\
             measures = [\"flow.f.goodput_mbps\"]\n{vary}"
        )
    };
    let e = err(&many("1000"));
    assert!(
        e.contains("experiment.seeds") && e.contains("101 points x 1000 seeds = 101000 runs"),
        "{e}"
    );
    let e = err(&format!("{}\n[short]\nseeds = 1000\n", many("1")));
    assert!(e.contains("short.seeds"), "{e}");
    assert!(parse(&many("990")).is_ok());
    let grid: Vec<String> = (1..=400).map(|i| i.to_string()).collect();
    let text = format!(
        "{GOOD}\"flow[f].tcp.init_cwnd\" = [{0}]\n\"flow[f].tcp.mss\" = [{0}]\n",
        grid.join(", ")
    );
    let e = err(&text);
    assert!(e.contains("320000 points: at most 100000"), "{e}");
}

/// Values that read differently but make the same scenario are one point
/// twice: refused, where only the same text was before.
#[test]
fn points_that_make_the_same_scenario_are_refused() {
    let with = |values: &str| GOOD.replace("[\"10Mbps\", \"20Mbps\"]", values);
    let e = err(&with("[\"10Mbps\", \"10000kbps\"]"));
    assert!(
        e.contains("points: points p000 (link[0].rate = 10Mbps) and p001 (link[0].rate = 10000kbps) are the same scenario"),
        "{e}"
    );
    let e = err(&format!(
        "{GOOD}\n[[point]]\n\"link[0].delay\" = \"5ms\"\n[[point]]\n\"link[0].delay\" = \"5ms\"\n"
    ));
    assert!(e.contains("are the same scenario"), "{e}");
    assert!(parse(&with("[\"10Mbps\", \"10001kbps\"]")).is_ok());
}

/// `[set]` or `[short].set` on a parameter `[vary]` varies was silently
/// overridden by every point's value.
#[test]
fn a_set_value_that_vary_overrides_is_refused() {
    for table in ["set", "short.set"] {
        let e = err(&format!(
            "{GOOD}\n[{table}]\n\"link[0].rate\" = \"30Mbps\"\n"
        ));
        assert!(
            e.contains(&format!(
                "{table}.\"link[0].rate\": is varied by [vary] too"
            )),
            "{e}"
        );
    }
    // A default for the [[point]] tables that leave it out is fine.
    let text =
        "[experiment]\nname = \"x\"\nbase = \"base.toml\"\nmeasures = [\"flow.f.goodput_mbps\"]\n\
                [set]\n\"link[0].rate\" = \"30Mbps\"\n[[point]]\n\"link[0].rate\" = \"5Mbps\"\n\
                [[point]]\n\"link[0].delay\" = \"5ms\"\n";
    assert!(parse(text).is_ok());
}

/// An error is placed on the line of what it names, not on the first line
/// holding the same text: [vary], an earlier [[point]] or another plot
/// often do.
#[test]
fn errors_are_placed_on_the_line_they_name() {
    // The third [[point]] varies what [vary] varies: its line, not [vary]'s
    // (line 8).
    let points =
        "\n[[point]]\n\"link[0].delay\" = \"5ms\"\n[[point]]\n\"link[0].delay\" = \"6ms\"\n";
    let e = err(&format!(
        "{GOOD}{points}[[point]]\n\"link[0].rate\" = \"30Mbps\"\n"
    ));
    assert!(
        e.starts_with("exp.toml:15: point[2].\"link[0].rate\": is varied by [vary] too"),
        "{e}"
    );
    // An override that fails in the third [[point]] only (the link is
    // renamed there): its line, not the first [[point]]'s (line 12).
    let point = |name: &str, delay: &str| {
        format!("[[point]]\n\"link[0].name\" = \"{name}\"\n\"link[ab].delay\" = \"{delay}\"\n")
    };
    let text = format!(
        "{GOOD}\n{}{}{}",
        point("ab", "5ms"),
        point("ab", "6ms"),
        point("cd", "7ms")
    );
    let e = err(&text);
    assert!(
        e.starts_with("exp.toml:18: point p004: <override>: link[ab].delay: no [[link]] table is named \"ab\""),
        "{e}"
    );
    // A [[point]] with nothing in it: that one, not the first.
    let e = err(&format!("{GOOD}{points}[[point]]\n"));
    assert!(e.starts_with("exp.toml:14: point[2]: sets nothing"), "{e}");
    // The second of two equal [[point]]s (line 10 is the first).
    let e = err(&format!(
        "{GOOD}{points}[[point]]\n\"link[0].delay\" = \"5ms\"\n"
    ));
    assert!(e.starts_with("exp.toml:14: points: points p000 "), "{e}");
    // A [vary] value the same as another: the key whose values differ.
    let e = err(&GOOD.replace("\"20Mbps\"]", "\"10000kbps\"]"));
    assert!(e.starts_with("exp.toml:8: points: points p000 "), "{e}");
}

#[test]
fn a_repeated_list_entry_is_placed_on_its_own_line() {
    let measures =
        "measures = [\n  \"flow.f.goodput_mbps\",\n  \"events\",\n  \"flow.f.goodput_mbps\",\n]";
    let e = err(&GOOD.replace("measures = [\"flow.f.goodput_mbps\"]", measures));
    assert_eq!(
        e,
        "exp.toml:8: experiment.measures[2]: \"flow.f.goodput_mbps\" is listed twice"
    );
    let rates = "[\n  \"10Mbps\",\n  \"20Mbps\",\n  \"10Mbps\",\n]";
    let e = err(&GOOD.replace("[\"10Mbps\", \"20Mbps\"]", rates));
    assert_eq!(
        e,
        "exp.toml:11: vary.\"link[0].rate\": 10Mbps is listed twice"
    );
    let e = err(&GOOD.replace("seeds = 2", "seeds = [\n  1,\n  2,\n  1,\n]"));
    assert_eq!(e, "exp.toml:7: experiment.seeds: seed 1 is listed twice");
}

#[test]
fn a_plot_error_is_placed_in_that_plot() {
    let plot = |name: &str, body: &str| format!("[[plot]]\nname = \"{name}\"\n{body}\n");
    // Lines 10 to 14 are plot[0], whose y and select read the same as
    // plot[1]'s.
    let first = plot(
        "a",
        "kind = \"over_time\"\ncsv = \"cwnd\"\ny = \"cwnd_bytes\"",
    );
    let with = |body: &str| err(&format!("{GOOD}\n{first}{}", plot("b", body)));
    let e = with("kind = \"over_time\"\ncsv = \"goodput\"\ny = \"cwnd_bytes\"");
    assert!(
        e.starts_with("exp.toml:19: plot[1].y: goodput.csv has no column \"cwnd_bytes\""),
        "{e}"
    );
    let e = with("kind = \"over_time\"\ncsv = \"links\"\nselect = \"f\"");
    assert!(
        e.starts_with("exp.toml:19: plot[1].select: links.csv has no rows for \"f\""),
        "{e}"
    );
    // Not [vary]'s line (8), which holds the parameter too.
    let e = with(
        "kind = \"measure\"\nx = \"link[0].rate\"\ny = \"flow.f.goodput_mbps\"\nseries = \"link[0].rate\"",
    );
    assert!(
        e.starts_with("exp.toml:20: plot[1].series: is the x parameter already"),
        "{e}"
    );
    // A field left out: the line naming the plot.
    let e = with("kind = \"measure\"\ny = \"flow.f.goodput_mbps\"");
    assert!(
        e.starts_with("exp.toml:16: plot[1].x: a measure plot needs `x`"),
        "{e}"
    );
}

/// Each distinct warning of the points' scenarios once, with the first
/// point that has it and how many do; at its line in the base file when
/// the base alone warns the same.
#[test]
fn warnings_are_gathered_once_for_the_points_that_share_them() {
    let dir = tempfile::tempdir().unwrap();
    let base = format!("{BASE}[output]\nsample = \"5s\"\n");
    std::fs::write(dir.path().join("base.toml"), &base).unwrap();
    let load = |text: &str| {
        Experiment::parse(text, "exp.toml", Some(dir.path())).unwrap_or_else(|e| panic!("{e}"))
    };
    let shown = |ws: &[&pep_exp::ExpWarning]| -> Vec<String> {
        ws.iter()
            .map(|w| {
                // The base's path is the temporary directory's.
                let s = w.to_string();
                s[s.find("base.toml").unwrap()..].to_string()
            })
            .collect()
    };
    let sample_line = base.lines().position(|l| l.starts_with("sample")).unwrap() + 1;
    let too_long = |run: &str| {
        format!(
            "output.sample: 5s is longer than the run ({run}): queues, cwnd and agents are \
             sampled once, at 0s; use a sample of at most {run}"
        )
    };

    // The base's own warning, in every point.
    let every = load(GOOD);
    let ws: Vec<_> = every.warnings(Mode::Full).iter().collect();
    assert_eq!(
        shown(&ws),
        [format!(
            "base.toml:{sample_line}:10: {} (all 2 points of exp.toml)",
            too_long("2s")
        )]
    );
    assert_eq!(every.warnings(Mode::Short), every.warnings(Mode::Full));

    // Some points only, and what only [short] gives.
    let text = format!(
        "{GOOD}\"scenario.duration\" = [\"2s\", \"10s\", \"4s\"]\n\
         [short]\nset = {{ \"output.interval\" = \"6s\" }}\n"
    );
    let some = load(&text);
    let full = some.warnings(Mode::Full);
    assert_eq!(full.len(), 2, "{full:#?}");
    assert_eq!(
        (full[0].point.as_str(), full[0].points, full[0].of),
        ("p000", 2, 6)
    );
    assert_eq!(
        (full[1].point.as_str(), full[1].points, full[1].of),
        ("p002", 2, 6)
    );
    assert_eq!(
        shown(&some.all_warnings()),
        [
            format!(
                "base.toml:{sample_line}:10: {} (in 2 of 6 points of exp.toml, first p000: \
                 link[0].rate = 10Mbps, scenario.duration = 2s)",
                too_long("2s")
            ),
            // Not the base's warning: the point's duration makes it.
            format!(
                "base.toml + overrides: {} (in 2 of 6 points of exp.toml, first p002: \
                 link[0].rate = 10Mbps, scenario.duration = 4s)",
                too_long("4s")
            ),
            "base.toml + overrides: output.interval: 6s is longer than the run (2s): goodput \
             and link use get a single bin, the whole run; use an interval of at most 2s \
             (with [short], in 2 of 6 points of exp.toml, first p000: link[0].rate = 10Mbps, \
             scenario.duration = 2s)"
                .into(),
            "base.toml + overrides: output.interval: 6s is longer than the run (4s): goodput \
             and link use get a single bin, the whole run; use an interval of at most 4s \
             (with [short], in 2 of 6 points of exp.toml, first p002: link[0].rate = 10Mbps, \
             scenario.duration = 4s)"
                .into(),
        ]
    );
    assert_eq!(some.warnings(Mode::Short).len(), 4);

    // A point of its own.
    let one = load(&GOOD.replace(
        "\"10Mbps\", \"20Mbps\"",
        "\"10Mbps\"]\n\"scenario.duration\" = [\"10s\", \"1s\"",
    ));
    let ws: Vec<_> = one.warnings(Mode::Full).iter().collect();
    assert_eq!(
        shown(&ws),
        [format!(
            "base.toml + overrides: {} (point p001 of exp.toml: link[0].rate = 10Mbps, \
             scenario.duration = 1s)",
            too_long("1s")
        )]
    );
}

/// A typo in a `[vary]` link name makes the plot's `x` (the right name) no
/// varied parameter: both are reported in one pass, the typo first, with
/// the names the base has.
#[test]
fn all_errors_at_once_the_unknown_name_first() {
    let text = r#"[experiment]
name = "x"
base = "base.toml"
measures = ["flow.f.goodput_mbps"]
[vary]
"link[a-c].rate" = ["10Mbps", "20Mbps"]
[[plot]]
name = "p"
kind = "measure"
x = "link[a-b].rate"
y = "flow.f.goodput_mbps"
"#;
    let e = err(text);
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(lines.len(), 2, "{e}");
    assert!(
        lines[0]
            .contains("link[a-c].rate: no [[link]] table is named \"a-c\"; the names are \"a-b\""),
        "{e}"
    );
    assert!(
        lines[1]
            .starts_with("exp.toml:10: plot[0].x: \"link[a-b].rate\" is not a varied parameter"),
        "{e}"
    );
}

/// Independent mistakes of the header come together, in file order.
#[test]
fn independent_errors_come_together() {
    let text = GOOD.replacen("name = \"x\"", "name = \"a/b\"", 1).replacen(
        "measures = [\"flow.f.goodput_mbps\"]",
        "measures = [\"flow.f.goodput_mbps\", \"flow.f.goodput_mbps\"]",
        1,
    );
    let e = err(&text);
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(lines.len(), 2, "{e}");
    assert!(
        lines[0].starts_with("exp.toml:2: experiment.name: \"a/b\" is not a plain name"),
        "{e}"
    );
    assert!(
        lines[1].contains("experiment.measures[1]: \"flow.f.goodput_mbps\" is listed twice"),
        "{e}"
    );
}

/// An unknown flow name in a point lists the flows there are.
#[test]
fn an_unknown_flow_lists_the_flows() {
    let e = err(&format!(
        "{GOOD}\n[[point]]\n\"flow[g].tcp.cc\" = \"cubic\"\n"
    ));
    assert!(
        e.contains("no [[flow]] table is named \"g\"; the names are \"f\""),
        "{e}"
    );
}
