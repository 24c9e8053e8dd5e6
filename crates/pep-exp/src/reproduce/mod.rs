//! `pep reproduce`: run a paper's experiments and check its claims against
//! our own results, point by point, with a stated tolerance.
//!
//! A [`Paper`] names its experiment files (under `scenarios/<name>/`) and
//! its [`Claim`]s. A claim compares the mean of one of our measures with the
//! paper's figure (a number it reports, or an analytic formula evaluated on
//! the point's scenario), or tests a qualitative predicate over the results.
//! Every verdict is computed from the run; a claim that only a full-length
//! run can decide is *skipped* in short mode, never passed.
//!
//! Each claim has a [`Kind`]: only reproductions (the paper's own number
//! or stated trend, with a tolerance that can fail either way) are counted
//! as reproduced or not; setup checks, fits, structural properties and
//! claims beyond the paper are shown apart.

mod baseline;
mod gschwandtner;
mod johnson;
mod leo;
mod osada2005;
mod paper_series;
mod report;
mod shekhar;
mod shikama;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pep_sim::Scenario;

use crate::experiment::{Experiment, Mode, Resolved};
use crate::plots::{self, Named};
use crate::results::{Results, Stats};
use crate::runner::{self, Progress, SweepConfig};

pub use report::{html, markdown};

/// A paper whose experiments pepkit reproduces.
pub struct Paper {
    /// Short name for the command line (`pep reproduce <name>`).
    pub name: &'static str,
    pub title: &'static str,
    pub citation: &'static str,
    /// What is reproduced, in a sentence or two.
    pub about: &'static str,
    /// Experiment files in `scenarios/<name>/`.
    pub experiments: &'static [&'static str],
    pub claims: fn() -> Vec<Claim>,
}

/// What a claim's verdict says about the reproduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Compares with the paper's own number or stated trend: counted.
    Reproduction,
    /// Checks that our setup is the paper's (true by how the network is
    /// built, not a result): shown apart.
    Setup,
    /// A parameter of ours was chosen to meet the paper here; says what.
    Fit(&'static str),
    /// A property of our model the paper's result rests on, not a number
    /// or trend of the paper.
    Structural,
    /// Beyond the paper: a result of ours, not the paper's.
    Beyond,
}

impl Kind {
    /// The label a report shows beside the claim.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Reproduction => "reproduction",
            Kind::Setup => "setup check",
            Kind::Fit(_) => "fitted",
            Kind::Structural => "structural",
            Kind::Beyond => "beyond the paper",
        }
    }
    /// The groups shown apart, in report order.
    pub const APART: [&'static str; 4] =
        ["setup check", "fitted", "structural", "beyond the paper"];
}

/// One statement of the paper, checked against our runs.
pub struct Claim {
    pub id: &'static str,
    pub kind: Kind,
    /// The claim in words, as the paper makes it.
    pub statement: &'static str,
    /// The experiment (file stem) it is checked on.
    pub experiment: &'static str,
    pub check: Check,
    /// Only a full-length run can decide it: skipped in short mode.
    pub needs_full: bool,
}

/// A predicate's test: the verdict and what it saw.
pub type PredicateEval = fn(&Results) -> Result<(bool, String), String>;

impl Claim {
    /// A claim on the mean of `measure` at the points matching `at`,
    /// against the paper's `figure`, in short and full runs alike.
    #[allow(clippy::too_many_arguments)]
    pub fn value(
        id: &'static str,
        kind: Kind,
        statement: &'static str,
        experiment: &'static str,
        measure: &'static str,
        at: Vec<(&'static str, &'static str)>,
        figure: Figure,
        tolerance: Tolerance,
    ) -> Claim {
        Claim {
            id,
            kind,
            statement,
            experiment,
            check: Check::Value {
                measure,
                at,
                figure,
                tolerance,
            },
            needs_full: false,
        }
    }

    /// A claim decided by a predicate, in short and full runs alike.
    pub fn predicate(
        id: &'static str,
        kind: Kind,
        statement: &'static str,
        experiment: &'static str,
        describe: &'static str,
        eval: PredicateEval,
    ) -> Claim {
        Claim {
            id,
            kind,
            statement,
            experiment,
            check: Check::Predicate { describe, eval },
            needs_full: false,
        }
    }
}

/// How a claim is decided.
pub enum Check {
    /// At each point matching `at` (every point when empty), the mean of
    /// `measure` over seeds is within `tolerance` of `figure`.
    Value {
        measure: &'static str,
        at: Vec<(&'static str, &'static str)>,
        figure: Figure,
        tolerance: Tolerance,
    },
    /// A qualitative statement over the results: `eval` gives the verdict
    /// and what it saw.
    Predicate {
        describe: &'static str,
        eval: PredicateEval,
    },
    /// A statistical statement the runs may be too few to decide: `eval`
    /// gives `None` then (not checked), and what it saw.
    Statistical {
        describe: &'static str,
        eval: StatisticalEval,
    },
}

/// A statistical claim's test: `Some(verdict)` or `None` (the runs cannot
/// decide), and what it saw.
pub type StatisticalEval = fn(&Results) -> Result<(Option<bool>, String), String>;

/// The paper's figure for a point.
pub enum Figure {
    /// A number the paper reports, and where (`"Table 2"`).
    Reported { value: f64, source: &'static str },
    /// The paper's numbers by the text of one parameter at the point
    /// (a table's column), and where.
    Table {
        param: &'static str,
        values: &'static [(&'static str, f64)],
        source: &'static str,
    },
    /// A formula, evaluated on the point's scenario.
    Analytic {
        formula: &'static str,
        eval: fn(&Scenario) -> f64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tolerance {
    /// |ours / paper - 1| <= r.
    Relative(f64),
    /// |ours - paper| <= a.
    Absolute(f64),
    /// paper / f <= ours <= paper × f (f > 1): for figures that vary by
    /// a factor with the run, such as a collapsed flow's trickle.
    Factor(f64),
    /// paper × (1 - below) <= ours <= paper × (1 + above): for figures near
    /// a ceiling no result can pass, where a symmetric `Relative` would
    /// reach past it and so could never fail from above.
    Range { below: f64, above: f64 },
}

impl Tolerance {
    /// The closed range of our values that agree with `paper`.
    pub fn bounds(self, paper: f64) -> (f64, f64) {
        match self {
            Tolerance::Relative(r) => {
                let (a, b) = (paper * (1.0 - r), paper * (1.0 + r));
                (a.min(b), a.max(b))
            }
            Tolerance::Absolute(a) => (paper - a, paper + a),
            Tolerance::Factor(f) => {
                let (a, b) = (paper / f, paper * f);
                (a.min(b), a.max(b))
            }
            Tolerance::Range { below, above } => {
                let (a, b) = (paper * (1.0 - below), paper * (1.0 + above));
                (a.min(b), a.max(b))
            }
        }
    }
    pub fn holds(self, ours: f64, paper: f64) -> bool {
        if !matches!(self, Tolerance::Absolute(_)) && paper == 0.0 {
            return false;
        }
        let (lo, hi) = self.bounds(paper);
        (lo..=hi).contains(&ours)
    }
    pub fn describe(self) -> String {
        match self {
            Tolerance::Relative(r) => format!("±{}%", report::trim(r * 100.0, 2)),
            Tolerance::Absolute(a) => format!("±{}", report::trim(a, 4)),
            Tolerance::Factor(f) => format!("within ×{} either way", report::trim(f, 2)),
            Tolerance::Range { below, above } => format!(
                "−{}% / +{}%",
                report::trim(below * 100.0, 2),
                report::trim(above * 100.0, 2)
            ),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Pass,
    Fail,
    /// Not decided by this run, and why.
    Skipped(String),
}

impl Verdict {
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::Skipped(_) => "skipped",
        }
    }
}

/// One point of a value claim.
#[derive(Clone, Debug, PartialEq)]
pub struct ClaimRow {
    pub point: String,
    pub paper: f64,
    pub ours: Stats,
    pub verdict: Verdict,
}

/// A claim's outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct ClaimOutcome {
    pub id: String,
    pub kind: Kind,
    pub statement: String,
    pub experiment: String,
    /// What is compared: the measure and figure, or the predicate.
    pub method: String,
    pub tolerance: Option<String>,
    pub rows: Vec<ClaimRow>,
    /// For predicates: what was seen.
    pub observed: Option<String>,
    pub verdict: Verdict,
}

/// A finished reproduction.
pub struct Report {
    pub paper: &'static Paper,
    pub mode: Mode,
    pub claims: Vec<ClaimOutcome>,
    /// Per experiment: its name, description, seeds run, points, charts.
    pub experiments: Vec<ExperimentRun>,
    pub dir: PathBuf,
}

pub struct ExperimentRun {
    pub stem: String,
    pub experiment: Experiment,
    pub results: Results,
    pub charts: Vec<Named>,
}

impl Report {
    pub fn failed(&self) -> usize {
        self.claims
            .iter()
            .filter(|c| c.verdict == Verdict::Fail)
            .count()
    }
    pub fn count(&self, v: &str) -> usize {
        self.claims.iter().filter(|c| c.verdict.word() == v).count()
    }
    /// The verdict counts the report and `pep reproduce` lead with.
    pub fn tally(&self) -> Tally {
        Tally::of(&self.claims)
    }
}

/// Reproductions counted three ways, the other kinds apart.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    pub reproduced: usize,
    pub not_reproduced: usize,
    pub not_checked: usize,
    /// Why the unchecked reproductions were not checked, with their ids.
    pub why: Vec<(String, Vec<String>)>,
    /// Per kind shown apart (in [`Kind::APART`] order, present ones
    /// only): its label and (pass, fail, skipped).
    pub apart: Vec<(&'static str, [usize; 3])>,
}

impl Tally {
    pub fn of(claims: &[ClaimOutcome]) -> Tally {
        let mut t = Tally::default();
        for c in claims.iter().filter(|c| c.kind == Kind::Reproduction) {
            match &c.verdict {
                Verdict::Pass => t.reproduced += 1,
                Verdict::Fail => t.not_reproduced += 1,
                Verdict::Skipped(why) => {
                    t.not_checked += 1;
                    match t.why.iter_mut().find(|(w, _)| w == why) {
                        Some((_, ids)) => ids.push(c.id.clone()),
                        None => t.why.push((why.clone(), vec![c.id.clone()])),
                    }
                }
            }
        }
        for label in Kind::APART {
            let mut n = [0; 3];
            for c in claims.iter().filter(|c| c.kind.label() == label) {
                n[match c.verdict {
                    Verdict::Pass => 0,
                    Verdict::Fail => 1,
                    Verdict::Skipped(_) => 2,
                }] += 1;
            }
            if n.iter().sum::<usize>() > 0 {
                t.apart.push((label, n));
            }
        }
        t
    }

    /// "5 reproduced, 2 not reproduced, 1 not checked (T2: needs a --full
    /// run)", then the kinds shown apart.
    pub fn line(&self) -> String {
        let mut s = format!(
            "{} reproduced, {} not reproduced, {} not checked",
            self.reproduced, self.not_reproduced, self.not_checked
        );
        if !self.why.is_empty() {
            let why: Vec<String> = self
                .why
                .iter()
                .map(|(w, ids)| format!("{}: {w}", ids.join(", ")))
                .collect();
            s += &format!(" ({})", why.join("; "));
        }
        s.push('.');
        if !self.apart.is_empty() {
            let apart: Vec<String> = self
                .apart
                .iter()
                .map(|(label, [p, f, k])| {
                    let mut parts = vec![];
                    for (n, w) in [(p, "pass"), (f, "fail"), (k, "skipped")] {
                        if *n > 0 {
                            parts.push(format!("{n} {w}"));
                        }
                    }
                    format!("{label} {}", parts.join(", "))
                })
                .collect();
            s += &format!(" Apart, not counted: {}.", apart.join("; "));
        }
        s
    }
}

/// Every registered paper, in the order `pep reproduce all` runs them. A
/// paper is a module here with a `PAPER` static and a line in this list.
static REGISTRY: &[&Paper] = &[
    &baseline::PAPER,
    &osada2005::PAPER,
    &shekhar::PAPER,
    &johnson::PAPER,
    &shikama::PAPER,
    &gschwandtner::PAPER,
    &leo::PAPER,
];

/// Every registered paper.
pub fn registry() -> &'static [&'static Paper] {
    REGISTRY
}

/// The paper called `name`; the error lists the known ones.
pub fn find(name: &str) -> Result<&'static Paper, String> {
    registry()
        .iter()
        .copied()
        .find(|p| p.name == name)
        .ok_or_else(|| {
            let names: Vec<&str> = registry().iter().map(|p| p.name).collect();
            format!(
                "unknown paper {name:?}; known papers: {} (or `all` for every one)",
                names.join(", ")
            )
        })
}

/// Where the scenarios of the papers are: `./scenarios` when run from a
/// checkout, else the repository this binary was built from.
pub fn default_scenarios_dir() -> PathBuf {
    let here = PathBuf::from("scenarios");
    if here.join("baseline").is_dir() {
        return here;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

pub struct Options {
    pub scenarios: PathBuf,
    /// `<out>/<paper>/<short|full>/` receives the sweeps and the report.
    pub out: PathBuf,
    pub mode: Mode,
    pub jobs: usize,
}

/// Loads (and so checks) every experiment of `paper` without running any:
/// `reproduce all` loads every paper's first, so a missing or broken file
/// is found before hours of another paper's runs.
pub fn load(paper: &'static Paper, opts: &Options) -> Result<Vec<Experiment>, String> {
    paper
        .experiments
        .iter()
        .map(|file| {
            Experiment::load(&opts.scenarios.join(paper.name).join(file)).map_err(|e| e.to_string())
        })
        .collect()
}

/// Runs `paper`'s experiments (as [`load`] returns them), checks its
/// claims and writes `report.md`
/// and `report.html`.
pub fn reproduce(
    paper: &'static Paper,
    experiments: Vec<Experiment>,
    opts: &Options,
    progress: &mut dyn FnMut(&str, &Progress),
) -> Result<Report, String> {
    judge(paper, experiments, opts, &mut |stem, exp, cfg| {
        let outcome =
            runner::sweep(exp, cfg, &mut |p| progress(stem, p)).map_err(|e| e.to_string())?;
        if let Some(f) = outcome.failures.first() {
            return Err(format!("{stem}: {f}"));
        }
        outcome
            .results
            .ok_or_else(|| "the sweep did not finish".into())
    })
}

/// Decides `paper`'s claims again from the results a finished
/// [`reproduce`] left in `opts.out` (each experiment's `results.csv`),
/// without running anything: after a claim changes, a `--full` run's
/// hours need not be spent again. Writes the reports as [`reproduce`] does.
pub fn rejudge(
    paper: &'static Paper,
    experiments: Vec<Experiment>,
    opts: &Options,
) -> Result<Report, String> {
    judge(paper, experiments, opts, &mut |_, exp, cfg| {
        Results::load(&cfg.out, exp)
    })
}

/// Where `mode`'s results of a paper go under `out`.
fn mode_dir(out: &Path, paper: &Paper, mode: Mode) -> PathBuf {
    let m = if mode == Mode::Short { "short" } else { "full" };
    out.join(paper.name).join(m)
}

/// The results of one experiment (its file stem), swept as `cfg` says.
type GetResults<'a> = dyn FnMut(&str, &Experiment, &SweepConfig) -> Result<Results, String> + 'a;

/// Gets each experiment's results, draws its charts, decides the claims
/// and writes the reports.
fn judge(
    paper: &'static Paper,
    experiments: Vec<Experiment>,
    opts: &Options,
    results_of: &mut GetResults,
) -> Result<Report, String> {
    let dir = mode_dir(&opts.out, paper, opts.mode);
    let mut runs = Vec::new();
    let mut resolved: BTreeMap<String, Vec<Resolved>> = BTreeMap::new();
    for (file, exp) in paper.experiments.iter().zip(experiments) {
        let stem = file.trim_end_matches(".toml").to_string();
        let cfg = SweepConfig {
            out: dir.join(&stem),
            jobs: opts.jobs,
            mode: opts.mode,
            fresh: false,
            cancel: None,
        };
        let results = results_of(&stem, &exp, &cfg)?;
        let mut charts = plots::sweep_charts(&exp.plots, &results, &cfg.out)?;
        paper_series::add(&mut charts, &exp, &stem, &results, &(paper.claims)());
        if (paper.name, stem.as_str()) == ("osada2005", "table1") {
            charts.extend(osada2005::table1_maps(&results, &cfg.out)?);
        }
        paper_series::human_legends(&mut charts);
        plots::write(&charts, &cfg.out.join("plots"))?;
        resolved.insert(
            stem.clone(),
            exp.resolve(opts.mode).map_err(|e| e.to_string())?,
        );
        runs.push(ExperimentRun {
            stem,
            experiment: exp,
            results,
            charts,
        });
    }
    let claims = (paper.claims)()
        .iter()
        .map(|c| {
            let run = runs.iter().find(|r| r.stem == c.experiment);
            match (run, resolved.get(c.experiment)) {
                (Some(run), Some(res)) => evaluate(c, &run.results, res, opts.mode),
                _ => Err(format!("no experiment named {:?}", c.experiment)),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let report = Report {
        paper,
        mode: opts.mode,
        claims,
        experiments: runs,
        dir: dir.clone(),
    };
    for (name, body) in [
        ("report.md", markdown(&report)),
        ("report.html", html(&report)),
        ("verdicts.tsv", verdicts_tsv(&report)),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, body).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(report)
}

/// One line per claim: paper, id, kind, verdict, tab-separated. The
/// recorded run the docs' verdict counts are tested against
/// (`crates/pep-exp/tests/data/reproduce-verdicts-short.tsv`) is these
/// files of `pep reproduce all` put together.
pub fn verdicts_tsv(r: &Report) -> String {
    r.claims
        .iter()
        .map(|c| {
            format!(
                "{}\t{}\t{}\t{}\n",
                r.paper.name,
                c.id,
                c.kind.label(),
                c.verdict.word()
            )
        })
        .collect()
}

/// Decides one claim from the results.
pub fn evaluate(
    c: &Claim,
    r: &Results,
    resolved: &[Resolved],
    mode: Mode,
) -> Result<ClaimOutcome, String> {
    let mut out = ClaimOutcome {
        id: c.id.into(),
        kind: c.kind,
        statement: c.statement.into(),
        experiment: c.experiment.into(),
        method: String::new(),
        tolerance: None,
        rows: Vec::new(),
        observed: None,
        verdict: Verdict::Pass,
    };
    let skip = c.needs_full && mode == Mode::Short;
    match &c.check {
        Check::Value {
            measure,
            at,
            figure,
            tolerance,
        } => {
            let m = r
                .measure_index(measure)
                .ok_or_else(|| format!("claim {}: no measure {measure:?}", c.id))?;
            out.method = match figure {
                Figure::Reported { source, .. } | Figure::Table { source, .. } => {
                    format!("mean of `{measure}` vs {source}")
                }
                Figure::Analytic { formula, .. } => format!("mean of `{measure}` vs {formula}"),
            };
            out.tolerance = Some(tolerance.describe());
            let points = points_at(r, at);
            if points.is_empty() {
                return Err(format!("claim {}: no point matches {at:?}", c.id));
            }
            for p in points {
                let paper = match figure {
                    Figure::Analytic { eval, .. } => eval(&resolved[p].scenario),
                    _ => reported_at(figure, r, p)
                        .map_err(|e| format!("claim {}: {e}", c.id))?
                        .unwrap_or(f64::NAN),
                };
                let ours = r.stats(p, m);
                let verdict = match ours.mean {
                    _ if skip => Verdict::Skipped("needs a --full run".into()),
                    None => Verdict::Fail,
                    Some(v) if tolerance.holds(v, paper) => Verdict::Pass,
                    Some(_) => Verdict::Fail,
                };
                out.rows.push(ClaimRow {
                    point: describe(r, p),
                    paper,
                    ours,
                    verdict,
                });
            }
        }
        Check::Predicate { describe, eval } => {
            out.method = describe.to_string();
            if !skip {
                let (ok, seen) = eval(r).map_err(|e| format!("claim {}: {e}", c.id))?;
                out.observed = Some(seen);
                if !ok {
                    out.verdict = Verdict::Fail;
                }
            }
        }
        Check::Statistical { describe, eval } => {
            out.method = describe.to_string();
            if !skip {
                let (ok, seen) = eval(r).map_err(|e| format!("claim {}: {e}", c.id))?;
                out.verdict = match ok {
                    Some(true) => Verdict::Pass,
                    Some(false) => Verdict::Fail,
                    None => Verdict::Skipped(
                        "too few runs to detect the difference the claim names".into(),
                    ),
                };
                out.observed = Some(seen);
            }
        }
    }
    if skip {
        out.verdict = Verdict::Skipped("needs a --full run".into());
    } else if out.rows.iter().any(|row| row.verdict == Verdict::Fail) {
        out.verdict = Verdict::Fail;
    }
    Ok(out)
}

/// The points whose parameters read as `at` (every point when empty).
pub fn points_at(r: &Results, at: &[(&str, &str)]) -> Vec<usize> {
    (0..r.points.len())
        .filter(|&p| {
            at.iter().all(|(k, v)| {
                r.params
                    .iter()
                    .position(|x| x == k)
                    .is_some_and(|i| r.param_text(p, i) == *v)
            })
        })
        .collect()
}

/// The number the paper reports for point `p` (`None` for a formula).
pub fn reported_at(figure: &Figure, r: &Results, p: usize) -> Result<Option<f64>, String> {
    match figure {
        Figure::Reported { value, .. } => Ok(Some(*value)),
        Figure::Table { param, values, .. } => {
            let k = r
                .params
                .iter()
                .position(|x| x == param)
                .ok_or_else(|| format!("no parameter {param:?}"))?;
            let text = r.param_text(p, k);
            values
                .iter()
                .find(|(v, _)| *v == text)
                .map(|v| Some(v.1))
                .ok_or_else(|| format!("no paper value for {param} = {text}"))
        }
        Figure::Analytic { .. } => Ok(None),
    }
}

/// `rwnd = 20000B` style label of a point.
pub fn describe(r: &Results, p: usize) -> String {
    let parts: Vec<String> = r
        .params
        .iter()
        .enumerate()
        .map(|(i, k)| (k, r.param_text(p, i)))
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k} = {v}"))
        .collect();
    if parts.is_empty() {
        "base".into()
    } else {
        parts.join(", ")
    }
}
