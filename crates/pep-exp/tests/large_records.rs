//! A run record of more than 1,000 flows holds their entries as columns
//! (`pep_sim::columns`): the measures read from it are those of the run.

use pep_exp::runner::{read_record, record_path, sweep, SweepConfig};
use pep_exp::{Experiment, Mode};
use pep_sim::output::FlowSummary;
use pep_sim::{Scenario, Simulation};

/// 1,001 users, each a transfer through one gateway: the short ones
/// finish, the long ones do not.
const BASE: &str = r#"[scenario]
name = "many"
duration = "1s"
[[node]]
name = "srv"
[[node]]
name = "gw"
kind = "router"
[[link]]
between = ["srv", "gw"]
rate = "100Mbps"
delay = "5ms"
[[repeat]]
count = 1001
[[repeat.node]]
name = "u{i}"
[[repeat.link]]
between = ["gw", "u{i}"]
rate = "10Mbps"
delay = "{1 + i % 7}ms"
[[repeat.flow]]
name = "f{i}"
from = "srv"
to = "u{i}"
start = "{i % 100}ms"
source = { kind = "finite", size = "{1000 + i * 1000}B" }
"#;

#[test]
fn past_a_thousand_flows_a_record_holds_columns_and_gives_the_runs_measures() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("base.toml"), BASE).unwrap();
    let measures = [
        "mean(flow.*.completion_s)",
        "jain(flow.*.goodput_mbps)",
        "flow.f1000.srtt_ms",
    ];
    let exp = format!(
        "[experiment]\nname = \"many\"\nbase = \"base.toml\"\nseeds = [3]\nmeasures = {measures:?}\n"
    );
    std::fs::write(dir.join("many.toml"), exp).unwrap();
    let exp = Experiment::load(&dir.join("many.toml")).unwrap_or_else(|e| panic!("{e}"));
    let out = dir.join("out");
    let cfg = SweepConfig {
        out: out.clone(),
        jobs: 1,
        mode: Mode::Full,
        fresh: false,
        cancel: None,
    };
    let done = sweep(&exp, &cfg, &mut |_| {}).unwrap();
    let results = done.results.expect("every run has a record");

    let tasks = pep_exp::runner::tasks(&exp, Mode::Full).unwrap();
    let text = std::fs::read_to_string(record_path(&out, &tasks[0])).unwrap();
    assert!(
        text.contains(",\"flows\":{\"rows\":1001,\"columns\":{"),
        "{}",
        &text[..300]
    );
    let record = read_record(&out, &tasks[0]).expect("the record reads back");

    // The run itself, and its flows as their own objects would read back.
    let sc = Scenario::from_toml_str(BASE, "base.toml")
        .unwrap()
        .with_seed(3);
    let mut sim = Simulation::new(&sc);
    sim.run();
    let own = sim.summary();
    let rows = serde_json::to_string(&own.flows).unwrap();
    let as_rows: Vec<FlowSummary> = serde_json::from_str(&rows).unwrap();
    assert_eq!(record.summary.flows, as_rows);
    // Finished and unfinished flows both (completion_s null in a column).
    let finished = as_rows.iter().filter(|f| f.completion_s.is_some()).count();
    assert!(
        finished > 0 && finished < 1001,
        "{finished} of 1001 finished"
    );
    // Each field's name once: the flows' part of the record is a fraction
    // of their rows (6.5 times smaller here).
    let record_json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let columns = record_json["summary"]["flows"].to_string();
    assert!(
        columns.len() * 4 < rows.len(),
        "{} vs {}",
        columns.len(),
        rows.len()
    );

    for (m, measure) in exp.measures.iter().enumerate() {
        let want = measure.eval(&own).unwrap();
        let got = results.rows[0].values[m].unwrap();
        assert!(
            (got - want).abs() <= 1e-12 * want.abs(),
            "{}: {got} vs {want}",
            measure.text
        );
    }
}
