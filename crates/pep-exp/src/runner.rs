//! Running a sweep: every (point, seed) of an experiment, on `jobs`
//! threads, each result kept as a small record file so an interrupted sweep
//! resumes where it stopped.
//!
//! A run is a pure function of a [`Task`] (the resolved scenario as TOML
//! text and a seed) and gives a [`Record`] (the run's summary): hand the
//! same tasks to a cluster and collect the records, and the tables come out
//! the same.
//!
//! Layout of the output directory:
//!
//! ```text
//! experiment.toml      the experiment file as run
//! runs/p003-s2.json    one record per (point, seed); written atomically
//! points/p003/         the first seed's CSV series and summary (if kept)
//! results.csv          one row per point and seed
//! aggregate.csv        mean, sd and 95% CI per point and measure
//! sweep.json           wall time and counts: the only machine-dependent file
//! ```
//!
//! A record is recognised by its key, not its file name: when the points
//! are renumbered (a value inserted in a `[vary]` list), the records of
//! unchanged scenarios, and their `points/` directories, are renamed to
//! the new ids instead of being run again.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant as WallInstant;

use pep_sim::output::Summary;
use pep_sim::{Scenario, Simulation};
use serde::{Deserialize, Serialize};

use crate::experiment::{Experiment, Mode, Resolved, Source};
use crate::results::Results;

/// One run to do: everything it depends on, as data.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// Index into the experiment's points.
    pub point: usize,
    pub point_id: String,
    pub seed: u64,
    /// The point's scenario, fully resolved, as TOML (seed not applied);
    /// or, with `overrides`, the base file as written.
    pub scenario_toml: String,
    /// Overrides (`path=value`) applied to `scenario_toml` in order: a base
    /// with `[[repeat]]` groups travels as written ([`Source::Written`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<String>,
    /// The base file's absolute path, with `overrides`: the name its
    /// errors give, and where the trace files it names are found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// Identifies the (scenario, seed, simulator version): a record with
    /// another key is stale.
    pub key: String,
    /// Also write the run's CSV series and summary to `points/<id>/`.
    pub outputs: bool,
}

/// What a run leaves behind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub key: String,
    pub point: String,
    pub seed: u64,
    /// Whether `points/<id>/` was written by this run.
    pub outputs: bool,
    pub summary: Summary,
}

/// How to run a sweep.
#[derive(Clone, Debug)]
pub struct SweepConfig<'a> {
    pub out: PathBuf,
    /// Worker threads, at least 1.
    pub jobs: usize,
    pub mode: Mode,
    /// Ignore existing records and run everything again.
    pub fresh: bool,
    /// Set to stop taking new runs (runs in progress finish and are kept).
    pub cancel: Option<&'a AtomicBool>,
}

/// Reported after each run finishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Runs finished, reused ones included.
    pub done: usize,
    pub total: usize,
    pub reused: usize,
}

/// How a sweep went.
#[derive(Debug)]
pub struct Outcome {
    pub total: usize,
    pub reused: usize,
    pub ran: usize,
    /// Runs that failed, with the reason.
    pub failures: Vec<String>,
    /// Stopped by the cancel flag before every run was done.
    pub cancelled: bool,
    pub wall_seconds: f64,
    /// The tables, when every run has a record.
    pub results: Option<Results>,
}

#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error(transparent)]
    Experiment(#[from] crate::experiment::ExpError),
    #[error(
        "{dir} holds the sweep of another experiment, {theirs:?} (its experiment.toml), \
         not {ours:?}: give another --out, or remove that directory"
    )]
    OtherExperiment {
        dir: String,
        theirs: String,
        ours: String,
    },
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

pub(crate) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> SweepError + '_ {
    move |source| SweepError::Io {
        path: path.display().to_string(),
        source,
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

/// FNV-1a, 64 bits: stable across Rust releases, unlike `DefaultHasher`.
pub fn fnv64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(FNV_OFFSET, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(FNV_PRIME)
    })
}

/// The key of a run: the resolved scenario, the seed and the simulator
/// build that ran it.
pub fn task_key(scenario_toml: &str, seed: u64, build: &str) -> String {
    format!(
        "{:016x}",
        fnv64(format!("{scenario_toml}\nseed={seed}\npep={build}").as_bytes())
    )
}

/// Which simulator this process is: the crate version and a hash of the
/// running executable. The version alone stays 0.1.0 across model changes,
/// and a record computed by an older build must not be reused as this
/// build's result. Hashed once per process (about 0.1 s for the `pep`
/// binary); if the executable cannot be read, the version alone.
pub fn build_identity() -> &'static str {
    BUILD_ID.get_or_init(|| identity_of(std::env::current_exe()))
}

/// [`build_identity`] for a simulator that is a library loaded into
/// another program (the Python module, inside `python`): the hash of
/// `library`, the file that holds the simulator, instead of the running
/// executable's. Takes effect if called before anything asked for the
/// identity; returns the identity in force.
pub fn build_identity_from(library: PathBuf) -> &'static str {
    BUILD_ID.get_or_init(|| identity_of(Ok(library)))
}

static BUILD_ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();

fn identity_of(file: std::io::Result<PathBuf>) -> String {
    let version = env!("CARGO_PKG_VERSION");
    match file.and_then(hash_file) {
        Ok(h) => format!("{version}+{h:016x}"),
        Err(_) => version.to_string(),
    }
}

/// FNV-1a over the file's 8-byte words (the last one padded with zeros),
/// read 1 MiB at a time. Only a full buffer or the end is hashed, so how
/// `read` splits the file never shows.
fn hash_file(path: PathBuf) -> std::io::Result<u64> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut h = FNV_OFFSET;
    let (mut filled, mut total) = (0, 0u64);
    loop {
        let n = f.read(&mut buf[filled..])?;
        filled += n;
        total += n as u64;
        if n != 0 && filled < buf.len() {
            continue;
        }
        for w in buf[..filled].chunks(8) {
            let mut b = [0u8; 8];
            b[..w.len()].copy_from_slice(w);
            h = (h ^ u64::from_le_bytes(b)).wrapping_mul(FNV_PRIME);
        }
        if n == 0 {
            // The length tells apart files that differ by trailing zeros.
            return Ok(h ^ total);
        }
        filled = 0;
    }
}

/// The runs of `exp` in `mode`, in point then seed order.
pub fn tasks(exp: &Experiment, mode: Mode) -> Result<Vec<Task>, SweepError> {
    Ok(tasks_of(exp, mode, &exp.resolve(mode)?))
}

/// The runs of the points `resolved` (`exp`'s in `mode`).
fn tasks_of(exp: &Experiment, mode: Mode, resolved: &[Resolved]) -> Vec<Task> {
    let mut out = Vec::new();
    let base = std::path::absolute(&exp.base_path).unwrap_or_else(|_| exp.base_path.clone());
    for (i, r) in resolved.iter().enumerate() {
        let (text, overrides, base) = match &r.source {
            Source::Document(doc) => {
                let text = toml::to_string(doc).expect("a parsed document encodes");
                (text, Vec::new(), None)
            }
            Source::Written(o) => {
                let o = o.iter().map(|(p, v)| format!("{p}={v}")).collect();
                let path = base.display().to_string();
                (exp.base_text.clone(), o, Some(path))
            }
        };
        // The overrides are part of what is run; without any, the key is
        // the one the document alone always had.
        let keyed = std::iter::once(text.as_str())
            .chain(overrides.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("\n");
        for (k, &seed) in exp.seeds(mode).iter().enumerate() {
            out.push(Task {
                point: i,
                point_id: r.point.id.clone(),
                seed,
                scenario_toml: text.clone(),
                overrides: overrides.clone(),
                base: base.clone(),
                key: task_key(&keyed, seed, build_identity()),
                outputs: exp.outputs && k == 0,
            });
        }
    }
    out
}

/// Runs one task: the pure function a sweep is made of. `outputs_dir`
/// receives the CSV series and summary when the task asks for them.
pub fn run_task(task: &Task, outputs_dir: Option<&Path>) -> Result<Record, String> {
    run_task_on(task, &task_scenario(task)?, outputs_dir)
}

/// The scenario `task` runs, read from the task alone (seed not applied).
fn task_scenario(task: &Task) -> Result<Scenario, String> {
    let overrides = task
        .overrides
        .iter()
        .map(|o| pep_sim::scenario::parse_override(o))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let origin = task.base.as_deref().unwrap_or(&task.point_id);
    Scenario::from_toml_str_with(&task.scenario_toml, origin, &overrides).map_err(|e| e.to_string())
}

/// [`run_task`] on `scenario`, the one the task's text reads as: a sweep
/// that resolved its points runs them without reading each again.
fn run_task_on(
    task: &Task,
    scenario: &Scenario,
    outputs_dir: Option<&Path>,
) -> Result<Record, String> {
    let sc = scenario.clone().with_seed(task.seed);
    let mut sim = Simulation::new(&sc);
    sim.run();
    if let (true, Some(dir)) = (task.outputs, outputs_dir) {
        sim.write_outputs(dir)
            .map_err(|e| format!("writing {}: {e}", dir.display()))?;
    }
    Ok(Record {
        key: task.key.clone(),
        point: task.point_id.clone(),
        seed: task.seed,
        outputs: task.outputs && outputs_dir.is_some(),
        summary: sim.summary(),
    })
}

/// `runs/<point>-s<seed>.json`.
pub fn record_path(out: &Path, t: &Task) -> PathBuf {
    out.join("runs")
        .join(format!("{}-s{}.json", t.point_id, t.seed))
}

/// What a record says about itself: all but the summary, the fields
/// [`Record`] serializes first, in this order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Head {
    key: String,
    point: String,
    seed: u64,
    outputs: bool,
}

impl Head {
    fn of(r: &Record) -> Head {
        Head {
            key: r.key.clone(),
            point: r.point.clone(),
            seed: r.seed,
            outputs: r.outputs,
        }
    }

    /// The head as a record's text begins with it (no closing brace).
    fn prefix(&self) -> String {
        let mut s = serde_json::to_string(self).expect("plain JSON");
        s.pop();
        s
    }
}

/// Whether a record is the result of `t`: same key and seed, and when `t`
/// keeps its outputs, `points/<id>/` written by that run under this id.
fn fits(h: &Head, t: &Task) -> bool {
    h.key == t.key && h.seed == t.seed && (!t.outputs || (h.outputs && h.point == t.point_id))
}

/// The record of `t` if one exists, is readable and is not stale.
pub fn read_record(out: &Path, t: &Task) -> Option<Record> {
    let text = std::fs::read_to_string(record_path(out, t)).ok()?;
    let r: Record = serde_json::from_str(&text).ok()?;
    fits(&Head::of(&r), t).then_some(r)
}

/// Writes `text` so that a reader sees the whole file or none: a temporary
/// file, then a rename.
fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

fn write_record(out: &Path, t: &Task, r: &Record) -> std::io::Result<()> {
    let text = serde_json::to_string(r).map_err(std::io::Error::other)?;
    write_atomic(&record_path(out, t), &(text + "\n"))
}

/// `text`, a record as [`write_record`] writes it, made the record of point
/// `point` with `outputs`, every byte of the summary kept (a number read
/// back from JSON may be a bit off, so a record is never written again
/// from its parsed values). Also returns the old head. `None` if the text
/// is not laid out that way.
fn retag(text: &str, point: &str, outputs: bool) -> Option<(Head, String)> {
    let old: Head = serde_json::from_str(text).ok()?;
    let rest = text.strip_prefix(&old.prefix())?;
    if !rest.starts_with(",\"summary\":") {
        return None;
    }
    let new = Head {
        point: point.to_string(),
        outputs,
        ..old.clone()
    };
    Some((old, new.prefix() + rest))
}

/// Records moved out of the way while points are renumbered are
/// `runs/.moving-<n>.json`: records still, found again after a crash.
const STAGED: &str = ".moving-";

fn is_staged(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with(STAGED))
}

/// A record file found in `runs/`.
struct Found {
    path: PathBuf,
    head: Head,
    /// Laid out as [`write_record`] writes it, so [`retag`] can copy it.
    retaggable: bool,
}

/// Every readable record in `runs/` (its summary read too, then dropped).
fn read_all(runs: &Path) -> Vec<Found> {
    let Ok(rd) = std::fs::read_dir(runs) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(&path).ok()?;
            let rec: Record = serde_json::from_str(&text).ok()?;
            let retaggable = retag(&text, &rec.point, rec.outputs).is_some();
            let head = Head::of(&rec);
            Some(Found {
                path,
                head,
                retaggable,
            })
        })
        .collect()
}

/// A point id as [`tasks`] makes them: a plain name for `points/<id>/`.
fn plain_id(id: &str) -> bool {
    !id.is_empty()
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// How a task gets its record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    /// Its record is in place.
    Reuse,
    /// A copy of `found[from]`, a record of the same scenario and seed
    /// stored under another point id (the points were renumbered); the
    /// outputs directory moves with it when the task keeps outputs.
    Copy {
        from: usize,
    },
    Run,
}

/// Decides, for each task, whether its record is in place, can be taken
/// from a record with the same key stored under another point id, or must
/// be run. A run is a function of its key, so the id a record is stored
/// under does not matter: inserting a value in a `[vary]` list renumbers
/// the later points, and their records are renamed, not run again.
fn plan(tasks: &[Task], found: &[Found], out: &Path) -> Vec<Plan> {
    let at: HashMap<&Path, usize> = found
        .iter()
        .enumerate()
        .map(|(i, f)| (f.path.as_path(), i))
        .collect();
    let mut by_key: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, f) in found.iter().enumerate() {
        by_key.entry(f.head.key.as_str()).or_default().push(i);
    }
    let mut plan: Vec<Plan> = tasks
        .iter()
        .map(|t| match at.get(record_path(out, t).as_path()) {
            Some(&i) if fits(&found[i].head, t) => Plan::Reuse,
            _ => Plan::Run,
        })
        .collect();
    // An outputs directory moves to one new id at most, and not at all if
    // its own point still uses it.
    let mut taken: HashSet<&str> = tasks
        .iter()
        .zip(&plan)
        .filter(|(t, p)| t.outputs && **p == Plan::Reuse)
        .map(|(t, _)| t.point_id.as_str())
        .collect();
    let points = out.join("points");
    for (t, p) in tasks.iter().zip(plan.iter_mut()) {
        if *p != Plan::Run {
            continue;
        }
        let own = record_path(out, t);
        let usable = |f: &Found| {
            let h = &f.head;
            f.path != own
                && f.retaggable
                && h.key == t.key
                && h.seed == t.seed
                && (!t.outputs
                    || (h.outputs
                        && h.point != t.point_id
                        && plain_id(&h.point)
                        && !taken.contains(h.point.as_str())
                        && points.join(&h.point).is_dir()))
        };
        let candidates = by_key.get(t.key.as_str()).map_or(&[][..], Vec::as_slice);
        if let Some(&from) = candidates.iter().find(|&&i| usable(&found[i])) {
            if t.outputs {
                taken.insert(&found[from].head.point);
            }
            *p = Plan::Copy { from };
        }
    }
    plan
}

/// Carries out the [`Plan::Copy`]s before anything runs, so that no record
/// is lost and none is trusted wrongly whenever the process stops:
///
/// 1. no record vouches for an outputs directory about to change (moved
///    away, replaced, or rewritten by a run): such records are rewritten
///    with `outputs: false`;
/// 2. the records copied from are renamed `runs/.moving-<n>.json` (unless
///    a task reuses them in place), out of the way of the copies and runs
///    that write their old names;
/// 3. the outputs directories move to `points/.moving-<old id>`, then to
///    their new ids (swapped ids clobber nothing);
/// 4. each copy is written, atomically, under its new id;
/// 5. the `.moving-` records are removed.
///
/// A copy that cannot be made (its source changed meanwhile) becomes a run.
fn relocate(
    out: &Path,
    tasks: &[Task],
    found: &[Found],
    plan: &mut [Plan],
) -> Result<(), SweepError> {
    let runs = out.join("runs");
    let points = out.join("points");
    let mut changing: HashSet<&str> = HashSet::new();
    for (t, p) in tasks.iter().zip(plan.iter()) {
        match *p {
            Plan::Copy { from } if t.outputs => {
                changing.insert(&t.point_id);
                changing.insert(&found[from].head.point);
            }
            Plan::Run if t.outputs => {
                changing.insert(&t.point_id);
            }
            _ => {}
        }
    }
    for f in found {
        if !(f.head.outputs && changing.contains(f.head.point.as_str())) {
            continue;
        }
        let text = std::fs::read_to_string(&f.path).map_err(io_err(&f.path))?;
        let new = match retag(&text, &f.head.point, false) {
            Some((_, new)) => new,
            None => {
                let mut r: Record = serde_json::from_str(&text)
                    .map_err(|e| io_err(&f.path)(std::io::Error::other(e)))?;
                r.outputs = false;
                serde_json::to_string(&r).expect("plain JSON") + "\n"
            }
        };
        write_atomic(&f.path, &new).map_err(io_err(&f.path))?;
    }

    let in_place: HashSet<PathBuf> = tasks
        .iter()
        .zip(plan.iter())
        .filter(|(_, p)| **p == Plan::Reuse)
        .map(|(t, _)| record_path(out, t))
        .collect();
    let mut source: HashMap<usize, PathBuf> = HashMap::new();
    let mut n = 0;
    for p in plan.iter() {
        let Plan::Copy { from } = *p else { continue };
        if source.contains_key(&from) {
            continue;
        }
        let f = &found[from];
        let path = if is_staged(&f.path) || in_place.contains(&f.path) {
            f.path.clone()
        } else {
            let staged = loop {
                let s = runs.join(format!("{STAGED}{n}.json"));
                n += 1;
                if !s.exists() {
                    break s;
                }
            };
            std::fs::rename(&f.path, &staged).map_err(io_err(&f.path))?;
            staged
        };
        source.insert(from, path);
    }

    let staged_dir = |id: &str| points.join(format!("{STAGED}{id}"));
    let dirs: Vec<(&str, &str)> = tasks
        .iter()
        .zip(plan.iter())
        .filter_map(|(t, p)| match *p {
            Plan::Copy { from } if t.outputs => {
                Some((found[from].head.point.as_str(), t.point_id.as_str()))
            }
            _ => None,
        })
        .collect();
    for &(from, _) in &dirs {
        let src = points.join(from);
        std::fs::rename(&src, staged_dir(from)).map_err(io_err(&src))?;
    }
    for &(from, to) in &dirs {
        let dst = points.join(to);
        if dst.exists() {
            std::fs::remove_dir_all(&dst).map_err(io_err(&dst))?;
        }
        std::fs::rename(staged_dir(from), &dst).map_err(io_err(&dst))?;
    }

    for (t, p) in tasks.iter().zip(plan.iter_mut()) {
        let Plan::Copy { from } = *p else { continue };
        let copy = std::fs::read_to_string(&source[&from])
            .ok()
            .and_then(|text| retag(&text, &t.point_id, t.outputs))
            .filter(|(old, _)| old.key == t.key && old.seed == t.seed);
        match copy {
            Some((_, text)) => {
                let path = record_path(out, t);
                write_atomic(&path, &text).map_err(io_err(&path))?;
            }
            None => *p = Plan::Run,
        }
    }

    for f in found.iter().filter(|f| is_staged(&f.path)) {
        let _ = std::fs::remove_file(&f.path);
    }
    for path in source.values().filter(|p| is_staged(p)) {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// Runs `todo` on `jobs` threads, each task's record written atomically
/// into `out/runs/` (its series, if it has them, into `out/points/<id>`),
/// until done or `cancel` is set; `done(ok)` after each. Returns how many
/// ran and the failures, `"<point> seed <seed>: <why>"`.
pub(crate) fn run_tasks(
    todo: &[&Task],
    scenarios: Option<&[Scenario]>,
    out: &Path,
    jobs: usize,
    cancel: Option<&AtomicBool>,
    done: &mut dyn FnMut(bool),
) -> (usize, Vec<String>) {
    let next = AtomicUsize::new(0);
    let stop = || cancel.is_some_and(|c| c.load(Ordering::Relaxed));
    let mut failures = Vec::new();
    let mut ran = 0;
    std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel::<Result<(), String>>();
        for _ in 0..jobs.max(1) {
            let tx = tx.clone();
            let next = &next;
            let stop = &stop;
            s.spawn(move || loop {
                if stop() {
                    return;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(t) = todo.get(i) else { return };
                let dir = out.join("points").join(&t.point_id);
                let run = match scenarios.and_then(|s| s.get(t.point)) {
                    Some(sc) => run_task_on(t, sc, Some(&dir)),
                    None => run_task(t, Some(&dir)),
                };
                let res = run
                    .and_then(|r| write_record(out, t, &r).map_err(|e| e.to_string()))
                    .map_err(|e| format!("{} seed {}: {e}", t.point_id, t.seed));
                if tx.send(res).is_err() {
                    return;
                }
            });
        }
        drop(tx);
        for res in rx {
            done(res.is_ok());
            match res {
                Ok(()) => ran += 1,
                Err(e) => failures.push(e),
            }
        }
    });
    (ran, failures)
}

/// Runs (or reuses) every run of `exp`, then writes the tables.
pub fn sweep(
    exp: &Experiment,
    cfg: &SweepConfig,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Outcome, SweepError> {
    let started = WallInstant::now();
    let resolved = exp.resolve(cfg.mode)?;
    let tasks = tasks_of(exp, cfg.mode, &resolved);
    // Each point is run from the scenario resolved here, not read again
    // from its task.
    let scenarios: Vec<Scenario> = resolved.into_iter().map(|r| r.scenario).collect();
    let out = &cfg.out;
    let runs = out.join("runs");
    std::fs::create_dir_all(&runs).map_err(io_err(&runs))?;
    let copy = out.join("experiment.toml");
    // Another experiment's records and plots would mix with this one's.
    if let Some(theirs) = std::fs::read_to_string(&copy).ok().and_then(|t| {
        let doc: toml::Table = t.parse().ok()?;
        Some(doc.get("experiment")?.get("name")?.as_str()?.to_string())
    }) {
        if theirs != exp.name {
            return Err(SweepError::OtherExperiment {
                dir: out.display().to_string(),
                theirs,
                ours: exp.name.clone(),
            });
        }
    }
    std::fs::write(&copy, &exp.text).map_err(io_err(&copy))?;
    // Leftovers of an interrupted write are never records, and no record
    // vouches for the outputs of an interrupted move.
    if let Ok(rd) = std::fs::read_dir(&runs) {
        for e in rd.flatten() {
            let n = e.file_name();
            if n.to_string_lossy().contains(".tmp") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    if let Ok(rd) = std::fs::read_dir(out.join("points")) {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with(".moving-") {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let found = read_all(&runs);
    let mut plan = if cfg.fresh {
        vec![Plan::Run; tasks.len()]
    } else {
        plan(&tasks, &found, out)
    };
    relocate(out, &tasks, &found, &mut plan)?;
    drop(found);
    let todo: Vec<&Task> = tasks
        .iter()
        .zip(&plan)
        .filter(|(_, p)| **p == Plan::Run)
        .map(|(t, _)| t)
        .collect();
    let total = tasks.len();
    let reused = total - todo.len();
    let mut p = Progress {
        done: reused,
        total,
        reused,
    };
    progress(&p);

    let jobs = cfg.jobs.max(1).min(todo.len().max(1));
    let (ran, failures) = run_tasks(&todo, Some(&scenarios), out, jobs, cfg.cancel, &mut |_| {
        p.done += 1;
        progress(&p);
    });

    drop(scenarios);
    let complete = failures.is_empty() && reused + ran == total;
    let results = if complete {
        let r = Results::from_records(exp, &tasks, out)?;
        r.write_tables(out)?;
        Some(r)
    } else {
        None
    };
    let wall = started.elapsed().as_secs_f64();
    let info = serde_json::json!({
        "pep_version": env!("CARGO_PKG_VERSION"),
        "pep_build": build_identity(),
        "experiment": exp.name,
        // What ran: without a [short] table, short mode is the full experiment.
        "mode": if cfg.mode == Mode::Short && exp.has_short() { "short" } else { "full" },
        "jobs": jobs,
        "runs": total,
        "reused": reused,
        "ran": ran,
        "failed": failures.len(),
        "wall_seconds": wall,
    });
    let path = out.join("sweep.json");
    let text = serde_json::to_string_pretty(&info).expect("plain JSON") + "\n";
    std::fs::write(&path, text).map_err(io_err(&path))?;
    Ok(Outcome {
        total,
        reused,
        ran,
        cancelled: !complete && failures.is_empty(),
        failures,
        wall_seconds: wall,
        results,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_of_another_build_is_stale() {
        let text = "[scenario]\nname = \"x\"\n";
        assert_eq!(task_key(text, 1, "0.1.0+a"), task_key(text, 1, "0.1.0+a"));
        assert_ne!(task_key(text, 1, "0.1.0+a"), task_key(text, 1, "0.1.0+b"));
        assert_ne!(task_key(text, 1, "0.1.0+a"), task_key(text, 2, "0.1.0+a"));
        // This process's identity names the executable, not only the version.
        assert!(build_identity().starts_with(concat!(env!("CARGO_PKG_VERSION"), "+")));
    }

    #[test]
    fn the_file_hash_sees_every_byte() {
        let dir = tempfile::tempdir().unwrap();
        let hash = |name: &str, bytes: &[u8]| {
            let p = dir.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            hash_file(p).unwrap()
        };
        // Past one read buffer, with a tail that is not a whole word.
        let base: Vec<u8> = (0..(1u32 << 20) + 13)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        let same = hash("a", &base);
        assert_eq!(same, hash("b", &base));
        for at in [0, 5, 1 << 19, (1 << 20) + 12] {
            let mut other = base.clone();
            other[at] ^= 1;
            assert_ne!(same, hash("c", &other), "byte {at} changed");
        }
        let mut longer = base.clone();
        longer.push(0);
        assert_ne!(same, hash("d", &longer));
    }
}
