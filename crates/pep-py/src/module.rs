//! `pepkit._native`: the functions `python/pepkit` calls. Arguments and
//! results cross as text (TOML, JSON) and Arrow streams; the Python side
//! turns them into dicts and DataFrames.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use pep_exp::runner::{self, Record, Task};
use pep_exp::{Experiment, Mode, SweepConfig};
use pep_sim::scenario::ScenarioError as SimScenarioError;
use pep_sim::table::Table;
use pep_sim::{Scenario, Simulation};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyList};

use crate::interrupt;

pyo3::create_exception!(
    pepkit,
    ScenarioError,
    PyValueError,
    "An invalid scenario. The message is the CLI's, one line per problem \
     (`file:line:col: field: message`); `.diagnostics` holds them as dicts."
);

pyo3::create_exception!(
    pepkit,
    ExperimentError,
    PyValueError,
    "An invalid experiment file, or a sweep that could not run."
);

/// Slices a run is cut into: between two, a Ctrl-C is seen (as `pep sim
/// run` draws its progress bar, with the same results).
const SLICES: u64 = 1000;

fn scenario_error(py: Python<'_>, e: &SimScenarioError) -> PyErr {
    let err = ScenarioError::new_err(e.to_string());
    let list = PyList::empty(py);
    for d in e.diagnostics() {
        let item = PyDict::new(py);
        let fill = || -> PyResult<()> {
            item.set_item("origin", &d.origin)?;
            item.set_item("line", d.pos.map(|p| p.line))?;
            item.set_item("column", d.pos.map(|p| p.column))?;
            item.set_item("field", &d.field)?;
            item.set_item("message", &d.message)?;
            list.append(&item)
        };
        if let Err(e) = fill() {
            return e;
        }
    }
    if let Err(e) = err.value(py).setattr("diagnostics", list) {
        return e;
    }
    err
}

/// `{"path": value}` as JSON to the overrides a sweep applies, in order.
fn overrides(json: Option<&str>) -> PyResult<Vec<(String, toml::Value)>> {
    let Some(json) = json else {
        return Ok(Vec::new());
    };
    let map: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(json).map_err(|e| PyValueError::new_err(format!("overrides: {e}")))?;
    map.into_iter()
        .map(|(path, v)| {
            let value = toml::Value::try_from(&v).map_err(|e| {
                PyValueError::new_err(format!("overrides[{path:?}]: {v} is not a TOML value: {e}"))
            })?;
            Ok((path, value))
        })
        .collect()
}

fn load(
    py: Python<'_>,
    text: &str,
    origin: &str,
    overrides_json: Option<&str>,
) -> PyResult<Scenario> {
    let ov = overrides(overrides_json)?;
    Scenario::from_toml_str_with(text, origin, &ov).map_err(|e| scenario_error(py, &e))
}

/// Validates a scenario; returns its warnings (settings with no effect),
/// raises ScenarioError with every problem.
#[pyfunction]
#[pyo3(signature = (text, origin, overrides=None))]
fn check(
    py: Python<'_>,
    text: &str,
    origin: &str,
    overrides: Option<&str>,
) -> PyResult<Vec<String>> {
    let sc = load(py, text, origin, overrides)?;
    Ok(sc.warnings.0.iter().map(|w| w.to_string()).collect())
}

/// Raises ScenarioError where the text is not TOML (with its position).
#[pyfunction]
fn parse(py: Python<'_>, text: &str, origin: &str) -> PyResult<String> {
    let doc: toml::Table = match text.parse() {
        Ok(d) => d,
        Err(_) => {
            // The scenario reader places the syntax error as the CLI does.
            return Err(match Scenario::from_toml_str(text, origin) {
                Err(e) => scenario_error(py, &e),
                Ok(_) => PyValueError::new_err(format!("{origin}: not TOML")),
            });
        }
    };
    serde_json::to_string(&doc).map_err(|e| PyValueError::new_err(format!("{origin}: {e}")))
}

/// A JSON object (a dict from Python) as TOML text.
#[pyfunction]
fn toml_of_json(json: &str) -> PyResult<String> {
    let v: serde_json::Value =
        serde_json::from_str(json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let table = toml::Table::try_from(&v)
        .map_err(|e| PyValueError::new_err(format!("not a TOML document: {e}")))?;
    toml::to_string(&table).map_err(|e| PyValueError::new_err(format!("not a TOML document: {e}")))
}

/// A table handed to pyarrow once, through the Arrow PyCapsule protocol
/// (`pyarrow.table(stream)`).
#[pyclass(module = "pepkit._native", frozen)]
struct ArrowStream {
    stream: Mutex<Option<FFI_ArrowArrayStream>>,
}

#[pymethods]
impl ArrowStream {
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        // The schema is the table's own: a requested one is a hint only.
        let _ = requested_schema;
        let stream = self
            .stream
            .lock()
            .map_err(|_| PyRuntimeError::new_err("a poisoned Arrow stream"))?
            .take()
            .ok_or_else(|| PyValueError::new_err("this Arrow stream was read already"))?;
        PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
    }
}

type Streams = Vec<(String, FFI_ArrowArrayStream)>;

/// Tables for Python: each name with its stream.
type PyTables = Vec<(String, Py<ArrowStream>)>;

fn streams(tables: &[Table]) -> Result<Streams, String> {
    tables
        .iter()
        .map(|t| {
            Ok((
                t.name.clone(),
                crate::arrow::stream(t).map_err(|e| e.to_string())?,
            ))
        })
        .collect()
}

fn to_python(py: Python<'_>, s: Streams) -> PyResult<PyTables> {
    s.into_iter()
        .map(|(name, stream)| {
            let obj = Py::new(
                py,
                ArrowStream {
                    stream: Mutex::new(Some(stream)),
                },
            )?;
            Ok((name, obj))
        })
        .collect()
}

/// Runs a scenario; returns its summary (JSON) and its series as Arrow
/// streams. With `out`, also writes what `pep sim run -o out` writes
/// there (the CSV series, `summary.json`; Parquet too with `parquet`).
#[pyfunction]
#[pyo3(signature = (text, origin, seed=None, overrides=None, out=None, parquet=false))]
fn run(
    py: Python<'_>,
    text: &str,
    origin: &str,
    seed: Option<u64>,
    overrides: Option<&str>,
    out: Option<PathBuf>,
    parquet: bool,
) -> PyResult<(String, PyTables)> {
    let mut sc = load(py, text, origin, overrides)?;
    if let Some(s) = seed {
        sc = sc.with_seed(s);
    }
    let cancel = AtomicBool::new(false);
    let done = interrupt::run(
        py,
        &cancel,
        || -> Result<Option<(String, Streams)>, String> {
            let mut sim = Simulation::new(&sc);
            let end = sim.end().as_nanos() as u128;
            for step in 1..=SLICES {
                if cancel.load(Ordering::Relaxed) {
                    return Ok(None);
                }
                sim.run_until(pep_core::Instant(
                    (end * step as u128 / SLICES as u128) as u64,
                ));
            }
            let summary = sim.summary();
            if let Some(dir) = &out {
                let mut writers: Vec<pep_sim::table::FileWriter> =
                    vec![pep_sim::table::write_csv_file];
                if parquet {
                    writers.push(pep_exp::parquet::write_file);
                }
                sim.write_outputs_with(dir, &writers, &summary)
                    .map_err(|e| format!("writing results to {}: {e}", dir.display()))?;
            }
            let (summary, tables) = sim.results(&summary);
            let summary = serde_json::to_string(&summary).map_err(|e| e.to_string())?;
            let tables = streams(&tables)?;
            Ok(Some((summary, tables)))
        },
    )?;
    match done.map_err(PyRuntimeError::new_err)? {
        Some((summary, s)) => Ok((summary, to_python(py, s)?)),
        None => Err(PyRuntimeError::new_err("the run was cancelled")),
    }
}

fn experiment(path: &Path) -> PyResult<Experiment> {
    Experiment::load(path).map_err(|e| ExperimentError::new_err(e.to_string()))
}

fn mode(short: bool) -> Mode {
    if short {
        Mode::Short
    } else {
        Mode::Full
    }
}

fn results_streams(r: &pep_exp::Results) -> Result<Streams, String> {
    streams(&[r.results_table(), r.aggregate_table()])
}

/// After a sweep's records are all there: Parquet tables and plots if
/// asked for, and the tables as streams.
fn finish(
    exp: &Experiment,
    r: &pep_exp::Results,
    out: &Path,
    parquet: bool,
    plots: bool,
) -> Result<Streams, String> {
    if parquet {
        r.write_tables_as(out, &[pep_exp::parquet::write_file])
            .map_err(|e| e.to_string())?;
    }
    if plots {
        let charts = pep_exp::plots::sweep_charts(&exp.plots, r, out)?;
        pep_exp::plots::write(&charts, &out.join("plots"))?;
    }
    results_streams(r)
}

/// `pep sim sweep EXPERIMENT -o out` on `jobs` threads: returns counts
/// (JSON) and the results and aggregate tables.
#[pyfunction]
#[pyo3(signature = (experiment_path, out, jobs, short=false, fresh=false, parquet=false, plots=false))]
#[allow(clippy::too_many_arguments)]
fn sweep(
    py: Python<'_>,
    experiment_path: PathBuf,
    out: PathBuf,
    jobs: usize,
    short: bool,
    fresh: bool,
    parquet: bool,
    plots: bool,
) -> PyResult<(String, PyTables)> {
    let exp = experiment(&experiment_path)?;
    let cancel = AtomicBool::new(false);
    let done = interrupt::run(
        py,
        &cancel,
        || -> Result<(String, Option<Streams>), String> {
            let cfg = SweepConfig {
                out: out.clone(),
                jobs,
                mode: mode(short),
                fresh,
                cancel: Some(&cancel),
            };
            let o = pep_exp::sweep(&exp, &cfg, &mut |_| {}).map_err(|e| e.to_string())?;
            if !o.failures.is_empty() {
                return Err(format!(
                    "{} run(s) failed: {}",
                    o.failures.len(),
                    o.failures.join("; ")
                ));
            }
            let counts = serde_json::json!({
                "total": o.total, "reused": o.reused, "ran": o.ran, "wall_seconds": o.wall_seconds,
            })
            .to_string();
            let s = match &o.results {
                Some(r) => Some(finish(&exp, r, &out, parquet, plots)?),
                None => None,
            };
            Ok((counts, s))
        },
    )?;
    let (counts, s) = done.map_err(ExperimentError::new_err)?;
    let s = s.ok_or_else(|| PyRuntimeError::new_err("the sweep was cancelled"))?;
    Ok((counts, to_python(py, s)?))
}

/// Writes the plan of a sweep into `out` (as `pep sim sweep plan`) and
/// returns the tasks still to run, as JSON texts: those without a valid
/// record, or all of them when `fresh`.
#[pyfunction]
#[pyo3(signature = (experiment_path, out, short=false, fresh=false))]
fn plan(experiment_path: PathBuf, out: PathBuf, short: bool, fresh: bool) -> PyResult<Vec<String>> {
    let exp = experiment(&experiment_path)?;
    let p = pep_exp::shard::plan(&exp, mode(short), &out)
        .map_err(|e| ExperimentError::new_err(e.to_string()))?;
    Ok(p.tasks
        .iter()
        .filter(|t| fresh || runner::read_record(&out, t).is_none())
        .map(|t| serde_json::to_string(t).expect("plain JSON"))
        .collect())
}

fn task_of(json: &str) -> PyResult<Task> {
    serde_json::from_str(json).map_err(|e| PyValueError::new_err(format!("not a task: {e}")))
}

/// Runs one task (anywhere: a Dask worker, a pool process). Its series, if
/// it keeps them, go to `outputs_dir`. Returns the record as JSON.
#[pyfunction]
#[pyo3(signature = (task_json, outputs_dir=None))]
fn run_task(py: Python<'_>, task_json: &str, outputs_dir: Option<PathBuf>) -> PyResult<String> {
    let task = task_of(task_json)?;
    let rec = py
        .detach(|| runner::run_task(&task, outputs_dir.as_deref()))
        .map_err(|e| {
            PyRuntimeError::new_err(format!("{} seed {}: {e}", task.point_id, task.seed))
        })?;
    Ok(serde_json::to_string(&rec).expect("plain JSON"))
}

/// Stores a task's record as the sweep does (`runs/<point>-s<seed>.json`,
/// written whole or not at all), after checking it is the task's.
#[pyfunction]
fn store_record(out: PathBuf, task_json: &str, record_json: &str) -> PyResult<()> {
    let task = task_of(task_json)?;
    let rec: Record = serde_json::from_str(record_json)
        .map_err(|e| PyValueError::new_err(format!("not a record: {e}")))?;
    if rec.key != task.key || rec.seed != task.seed || rec.point != task.point_id {
        return Err(PyValueError::new_err(format!(
            "the record of {} seed {} is not the result of task {} seed {}",
            rec.point, rec.seed, task.point_id, task.seed
        )));
    }
    let path = runner::record_path(&out, &task);
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let write = || -> std::io::Result<()> {
        std::fs::write(&tmp, format!("{record_json}\n"))?;
        std::fs::rename(&tmp, &path)
    };
    write().map_err(|e| PyRuntimeError::new_err(format!("{}: {e}", path.display())))
}

/// `pep sim sweep merge out`: the tables from the records.
#[pyfunction]
#[pyo3(signature = (out, parquet=false, plots=false))]
fn merge(py: Python<'_>, out: PathBuf, parquet: bool, plots: bool) -> PyResult<PyTables> {
    let s = py
        .detach(|| {
            let (exp, r) = pep_exp::shard::merge(&out)?;
            finish(&exp, &r, &out, parquet, plots)
        })
        .map_err(ExperimentError::new_err)?;
    to_python(py, s)
}

/// `pep reproduce paper`: the report as JSON.
#[pyfunction]
#[pyo3(signature = (paper, out, full=false, jobs=1, scenarios=None))]
fn reproduce(
    py: Python<'_>,
    paper: &str,
    out: PathBuf,
    full: bool,
    jobs: usize,
    scenarios: Option<PathBuf>,
) -> PyResult<String> {
    use pep_exp::reproduce as rp;
    let paper = rp::find(paper).map_err(PyValueError::new_err)?;
    let opts = rp::Options {
        scenarios: scenarios.unwrap_or_else(rp::default_scenarios_dir),
        out,
        mode: mode(!full),
        jobs,
    };
    let report = py
        .detach(|| -> Result<serde_json::Value, String> {
            let exps = rp::load(paper, &opts)?;
            let r = rp::reproduce(paper, exps, &opts, &mut |_, _| {})?;
            let claims: Vec<serde_json::Value> = r
                .claims
                .iter()
                .map(|c| {
                    serde_json::json!({
                        "id": c.id,
                        "kind": c.kind.label(),
                        "statement": c.statement,
                        "experiment": c.experiment,
                        "method": c.method,
                        "tolerance": c.tolerance,
                        "observed": c.observed,
                        "verdict": c.verdict.word(),
                        "reason": match &c.verdict {
                            rp::Verdict::Skipped(w) => Some(w.clone()),
                            _ => None,
                        },
                    })
                })
                .collect();
            Ok(serde_json::json!({
                "paper": paper.name,
                "title": paper.title,
                "tally": r.tally().line(),
                "failed": r.failed(),
                "claims": claims,
                "report": r.dir.join("report.md"),
                "dir": r.dir,
            }))
        })
        .map_err(ExperimentError::new_err)?;
    Ok(report.to_string())
}

/// The papers `reproduce` knows.
#[pyfunction]
fn papers() -> Vec<(&'static str, &'static str)> {
    pep_exp::reproduce::registry()
        .iter()
        .map(|p| (p.name, p.title))
        .collect()
}

/// This build's identity, which the sweep records carry in their keys.
#[pyfunction]
fn build_identity() -> &'static str {
    runner::build_identity()
}

#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Before any task is keyed: the build is this module's file.
    if let Some(lib) = crate::identity::library_path() {
        runner::build_identity_from(lib);
    }
    let py = m.py();
    m.add("ScenarioError", py.get_type::<ScenarioError>())?;
    m.add("ExperimentError", py.get_type::<ExperimentError>())?;
    m.add_class::<ArrowStream>()?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(parse, m)?)?;
    m.add_function(wrap_pyfunction!(toml_of_json, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(run_task, m)?)?;
    m.add_function(wrap_pyfunction!(store_record, m)?)?;
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce, m)?)?;
    m.add_function(wrap_pyfunction!(papers, m)?)?;
    m.add_function(wrap_pyfunction!(build_identity, m)?)?;
    Ok(())
}
