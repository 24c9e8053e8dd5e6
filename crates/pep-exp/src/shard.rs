//! Sweeps in pieces, for a cluster: `plan` writes every task of an
//! experiment into a directory, `run_shard` runs one shard's share of
//! them (on any machine that sees the directory), `merge` builds the
//! tables once all records are there.
//!
//! The records are the sweep's own (`runs/<point>-s<seed>.json`, keyed
//! and written atomically), so a shard run twice, or a task run by two
//! shards, is harmless, and a killed shard run again runs only the tasks
//! whose records are missing. The merged tables are the ones `pep sim
//! sweep` writes for the same experiment, byte for byte.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use serde::{Deserialize, Serialize};

use crate::experiment::{Experiment, Mode};
use crate::results::Results;
use crate::runner::{io_err, read_record, record_path, run_tasks, tasks, SweepError, Task};

/// `plan.json`: the tasks in the sweep's order.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Plan {
    pub experiment: String,
    /// "full" or "short".
    pub mode: String,
    pub tasks: Vec<Task>,
}

const PLAN: &str = "plan.json";

/// Shard `i` of `n` (1-based): the tasks whose index is `i - 1` modulo
/// `n`, so each shard gets points of every part of the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("--shard {s:?}: expected i/N with 1 <= i <= N, as 3/8");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if index == 0 || count == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    pub fn has(&self, task_index: usize) -> bool {
        task_index % self.count == self.index - 1
    }
}

/// Writes `dir/experiment.toml` (the copy the merge and `pep sim plot`
/// read) and `dir/plan.json`. Returns the plan.
pub fn plan(exp: &Experiment, mode: Mode, dir: &Path) -> Result<Plan, SweepError> {
    let tasks = tasks(exp, mode)?;
    let runs = dir.join("runs");
    std::fs::create_dir_all(&runs).map_err(io_err(&runs))?;
    let copy = dir.join("experiment.toml");
    std::fs::write(&copy, &exp.text).map_err(io_err(&copy))?;
    let plan = Plan {
        experiment: exp.name.clone(),
        mode: if mode == Mode::Short && exp.has_short() {
            "short"
        } else {
            "full"
        }
        .into(),
        tasks,
    };
    let path = dir.join(PLAN);
    let text = serde_json::to_string_pretty(&plan).expect("plain JSON") + "\n";
    std::fs::write(&path, text).map_err(io_err(&path))?;
    Ok(plan)
}

/// Reads `dir/plan.json`.
pub fn load_plan(dir: &Path) -> Result<Plan, String> {
    let path = dir.join(PLAN);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: {e} (write it with `pep sim sweep plan EXPERIMENT -o {}`)",
            path.display(),
            dir.display()
        )
    })?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// What a shard did.
#[derive(Debug, Default)]
pub struct ShardOutcome {
    /// The shard's tasks.
    pub total: usize,
    /// Whose records were already there.
    pub reused: usize,
    pub ran: usize,
    pub failures: Vec<String>,
}

/// Runs shard `shard` of the plan in `dir` on `jobs` threads, skipping
/// tasks whose records are there already.
pub fn run_shard(
    dir: &Path,
    shard: Shard,
    jobs: usize,
    cancel: Option<&AtomicBool>,
) -> Result<ShardOutcome, String> {
    let plan = load_plan(dir)?;
    let mine: Vec<&Task> = plan
        .tasks
        .iter()
        .enumerate()
        .filter(|(i, _)| shard.has(*i))
        .map(|(_, t)| t)
        .collect();
    let todo: Vec<&Task> = mine
        .iter()
        .copied()
        .filter(|t| read_record(dir, t).is_none())
        .collect();
    let runs = dir.join("runs");
    std::fs::create_dir_all(&runs).map_err(|e| format!("{}: {e}", runs.display()))?;
    let jobs = jobs.max(1).min(todo.len().max(1));
    let (ran, failures) = run_tasks(&todo, None, dir, jobs, cancel, &mut |_| {});
    Ok(ShardOutcome {
        total: mine.len(),
        reused: mine.len() - todo.len(),
        ran,
        failures,
    })
}

/// The experiment copy in `dir` and the plan's tasks.
pub fn load(dir: &Path) -> Result<(Experiment, Plan), String> {
    let copy = dir.join("experiment.toml");
    let text = std::fs::read_to_string(&copy).map_err(|e| format!("{}: {e}", copy.display()))?;
    let exp =
        Experiment::parse(&text, &copy.display().to_string(), None).map_err(|e| e.to_string())?;
    Ok((exp, load_plan(dir)?))
}

/// The tasks of the plan in `dir` whose records are missing.
pub fn missing(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let plan = load_plan(dir)?;
    Ok(plan
        .tasks
        .iter()
        .filter(|t| read_record(dir, t).is_none())
        .map(|t| record_path(dir, t))
        .collect())
}

/// Builds `results.csv` and `aggregate.csv` from the records of every
/// task in the plan; an error names the missing ones.
pub fn merge(dir: &Path) -> Result<(Experiment, Results), String> {
    let (exp, plan) = load(dir)?;
    let missing = missing(dir)?;
    if !missing.is_empty() {
        let first: Vec<String> = missing
            .iter()
            .take(3)
            .map(|p| p.display().to_string())
            .collect();
        return Err(format!(
            "{} of {} runs have no record yet (run their shards first), as {}",
            missing.len(),
            plan.tasks.len(),
            first.join(", ")
        ));
    }
    let r = Results::from_records(&exp, &plan.tasks, dir).map_err(|e| e.to_string())?;
    r.write_tables(dir).map_err(|e| e.to_string())?;
    Ok((exp, r))
}
