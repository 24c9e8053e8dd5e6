//! Sweeps over a base with `[[repeat]]` groups: the points travel as the
//! base file as written plus their overrides (a task is the file's few
//! kilobytes, not every copy), and run as the whole document would.

use std::path::Path;

use pep_exp::experiment::Source;
use pep_exp::runner::{self, build_identity, task_key};
use pep_exp::{Experiment, Mode};
use pep_sim::scenario::{apply_override, parse_document};
use pep_sim::{Scenario, Simulation};

/// Three users behind a shared link whose forward direction follows a
/// trace file beside the base (6 Mbit/s): found from the base's directory.
const BASE: &str = r#"[scenario]
name = "users"
duration = "2s"
[[node]]
name = "srv"
[[node]]
name = "gw"
kind = "router"
[[link]]
name = "core"
between = ["srv", "gw"]
rate = "10Mbps"
delay = "20ms"
[link.forward]
trace = "six.trace"
[[repeat]]
count = 3
[[repeat.node]]
name = "u{i}"
[[repeat.link]]
between = ["gw", "u{i}"]
rate = "10Mbps"
delay = "5ms"
[[repeat.flow]]
name = "f{i}"
from = "srv"
to = "u{i}"
start = "{i * 100}ms"
"#;

fn setup(dir: &Path, vary: &str) -> Experiment {
    std::fs::write(dir.join("six.trace"), "2\n4\n").unwrap();
    std::fs::write(dir.join("base.toml"), BASE).unwrap();
    let exp = format!(
        "[experiment]\nname = \"users\"\nbase = \"base.toml\"\nseeds = 2\n\
         measures = [\"mean(flow.*.goodput_mbps)\"]\n[vary]\n{vary}\n"
    );
    std::fs::write(dir.join("users.toml"), exp).unwrap();
    Experiment::load(&dir.join("users.toml")).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_repeat_base_travels_as_written_and_runs_as_the_whole_document() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = setup(tmp.path(), "\"link[core].delay\" = [\"10ms\", \"30ms\"]");
    let points = exp.resolve(Mode::Full).unwrap();
    let tasks = runner::tasks(&exp, Mode::Full).unwrap();
    assert_eq!(tasks.len(), 4);
    let origin = format!("{} + overrides", exp.base_path.display());
    for (r, delay) in points.iter().zip(["10ms", "30ms"]) {
        let Source::Written(overrides) = &r.source else {
            panic!("{}: a whole document", r.point.id);
        };
        let set = vec![("link[core].delay".to_string(), toml::Value::from(delay))];
        assert_eq!(overrides, &set);
        // The scenario changing the whole document gives.
        let mut doc = parse_document(BASE, &origin).unwrap();
        apply_override(&mut doc, "link[core].delay", delay.into()).unwrap();
        let whole = Scenario::from_table(doc, &origin).unwrap();
        assert!(whole == r.scenario, "{}", r.point.id);
        assert_eq!(r.scenario.flows.len(), 3);
    }
    for t in &tasks {
        assert_eq!(t.scenario_toml, BASE);
        assert_eq!(t.overrides.len(), 1);
        let base = Path::new(t.base.as_deref().unwrap());
        assert!(
            base.is_absolute() && base.ends_with("base.toml"),
            "{base:?}"
        );
        // Run from the task alone, as a shard on another machine does (the
        // trace is found beside the base, not in the working directory):
        // the run the resolved scenario gives.
        let from_task = runner::run_task(t, None).unwrap_or_else(|e| panic!("{e}"));
        let sc = points[t.point].scenario.clone().with_seed(t.seed);
        let mut sim = Simulation::new(&sc);
        sim.run();
        assert!(
            from_task.summary == sim.summary(),
            "{} seed {}",
            t.point_id,
            t.seed
        );
        assert!(from_task
            .summary
            .flows
            .iter()
            .all(|f| f.delivered_bytes > 0));
    }
    // The overrides are part of the key: the points' runs differ.
    assert_ne!(tasks[0].key, tasks[2].key);
    assert_ne!(tasks[0].key, tasks[1].key);
}

#[test]
fn an_index_path_or_a_base_without_groups_is_one_document() {
    let tmp = tempfile::tempdir().unwrap();
    // An index counts copies: the whole document is changed.
    let exp = setup(tmp.path(), "\"link[0].delay\" = [\"10ms\", \"30ms\"]");
    for r in exp.resolve(Mode::Full).unwrap() {
        assert!(matches!(r.source, Source::Document(_)), "{}", r.point.id);
    }
    for t in runner::tasks(&exp, Mode::Full).unwrap() {
        assert!(t.overrides.is_empty() && t.base.is_none());
        // The key is the document's alone, as it always was.
        assert_eq!(t.key, task_key(&t.scenario_toml, t.seed, build_identity()));
        assert!(t.scenario_toml.contains("name = \"u2\""));
    }
}

#[test]
fn copies_a_point_makes_invalid_are_named_at_their_line_and_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let many = BASE.replacen("count = 3", "count = 5000", 1);
    let many = many.replacen("{i * 100}ms", "{i}ms", 1).replacen(
        "duration = \"2s\"",
        "duration = \"10s\"",
        1,
    );
    std::fs::write(tmp.path().join("six.trace"), "2\n4\n").unwrap();
    std::fs::write(tmp.path().join("base.toml"), &many).unwrap();
    let text = "[experiment]\nname = \"cut\"\nbase = \"base.toml\"\nseeds = 1\n\
                measures = [\"mean(flow.*.goodput_mbps)\"]\n\
                [vary]\n\"scenario.duration\" = [\"1s\", \"2s\"]\n";
    std::fs::write(tmp.path().join("cut.toml"), text).unwrap();
    let e = Experiment::load(&tmp.path().join("cut.toml"))
        .unwrap_err()
        .to_string();
    // 4,000 copies start too late: three lines name the first, at the
    // template's line, and the rest are counted.
    let line = many
        .lines()
        .position(|l| l.starts_with("start = "))
        .unwrap()
        + 1;
    assert!(
        e.contains(&format!(
            "base.toml + overrides:{line}:9: flow \"f1000\".start"
        )),
        "{e}"
    );
    assert!(
        e.contains("3997 other problems of other copies here not shown"),
        "{e}"
    );
    assert!(e.lines().count() < 10, "{e}");
}

#[test]
fn a_changed_experiment_is_resolved_afresh() {
    let tmp = tempfile::tempdir().unwrap();
    let mut exp = setup(tmp.path(), "\"link[core].delay\" = [\"10ms\", \"30ms\"]");
    // Loading resolved the points; changing what they are made of must
    // not reuse them.
    exp.set.push(("scenario.duration".into(), "3s".into()));
    for r in exp.resolve(Mode::Full).unwrap() {
        assert_eq!(r.scenario.duration.to_string(), "3s");
    }
    let again = exp.resolve(Mode::Full).unwrap();
    assert_eq!(again[1].scenario.duration.to_string(), "3s");
}
