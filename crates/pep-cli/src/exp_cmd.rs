//! `pep sim sweep`, `pep sim plot` and `pep reproduce`: experiments, their
//! plots and the papers' reproduction reports. The work is in `pep-exp`.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use pep_exp::plots;
use pep_exp::reproduce::{self, Verdict};
use pep_exp::{Experiment, Mode, Progress, Results, SweepConfig};

use crate::sim_summary::plural;

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct SweepArgs {
    /// A sweep in shards (plan, run, merge) instead of at once.
    #[command(subcommand)]
    pieces: Option<crate::shard_cmd::ShardCommand>,
    /// Experiment file (TOML): base scenario, parameters, seeds, measures, plots.
    #[arg(required = true)]
    experiment: Option<PathBuf>,
    /// Worker threads, 1 to 1024 [default: the number of cores].
    #[arg(long, short, value_parser = clap::value_parser!(u16).range(1..=1024))]
    jobs: Option<u16>,
    /// Directory for the results [default: out/<experiment name>].
    #[arg(long, short)]
    out: Option<PathBuf>,
    /// Run everything again, ignoring finished runs' records.
    #[arg(long)]
    fresh: bool,
    /// Apply the experiment's [short] table (fewer seeds, shorter runs).
    #[arg(long)]
    short: bool,
    /// Do not draw the plots.
    #[arg(long)]
    no_plots: bool,
    /// Print nothing but errors.
    #[arg(long, short)]
    quiet: bool,
    /// Table formats: results.csv and aggregate.csv are always written
    /// (`pep sim plot` and resumed sweeps read them); `parquet` adds
    /// results.parquet and aggregate.parquet, typed.
    #[arg(long, value_delimiter = ',', default_value = "csv")]
    format: Vec<TableFormat>,
}

/// How `pep sim run` and `pep sim sweep` write their tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum TableFormat {
    /// Tidy CSV, one file per table (the default).
    Csv,
    /// Parquet, one file per table, typed columns (docs/experiments.md).
    Parquet,
}

/// The file writers of `formats`, each once, in the order given.
pub(crate) fn writers(formats: &[TableFormat]) -> Vec<pep_sim::table::FileWriter> {
    let mut out: Vec<pep_sim::table::FileWriter> = Vec::new();
    let mut seen = Vec::new();
    for &f in formats {
        if seen.contains(&f) {
            continue;
        }
        seen.push(f);
        out.push(match f {
            TableFormat::Csv => pep_sim::table::write_csv_file,
            TableFormat::Parquet => pep_exp::parquet::write_file,
        });
    }
    out
}

#[derive(Args)]
pub struct PlotArgs {
    /// A sweep's directory (with aggregate.csv) or a run's (with goodput.csv, ...).
    dir: PathBuf,
    /// For a run: which plots (goodput, throughput, utilisation, queues,
    /// queue_cdf, cwnd, tseq, flow_cdf, completion_cdf) [default: all that
    /// its files allow].
    #[arg(long, value_delimiter = ',')]
    kind: Vec<String>,
    /// Image formats.
    #[arg(long, value_delimiter = ',', default_value = "svg,png")]
    format: Vec<String>,
    /// Where to write them [default: <dir>/plots].
    #[arg(long, short)]
    out: Option<PathBuf>,
}

/// The registered papers and `all`, which `--help` lists.
fn paper_names() -> clap::builder::PossibleValuesParser {
    let names = pep_exp::reproduce::registry().iter().map(|p| p.name);
    clap::builder::PossibleValuesParser::new(names.chain(["all", SIM_VS_LAB]))
}

/// The report on the simulator against the lab (`pep lab validate`'s):
/// not a paper, and not in `all` (it needs root and namespaces).
const SIM_VS_LAB: &str = "sim-vs-lab";

#[derive(Args)]
pub struct ReproduceArgs {
    /// The paper to reproduce, `all`, or `sim-vs-lab` (root: the validation
    /// scenarios in the simulator and the lab, as `pep lab validate`; with
    /// --full, 5 lab runs per world).
    #[arg(value_parser = paper_names())]
    paper: String,
    /// Run at the paper's length (default: shortened runs that finish in minutes).
    #[arg(long)]
    full: bool,
    /// Worker threads, 1 to 1024 [default: the number of cores].
    #[arg(long, short, value_parser = clap::value_parser!(u16).range(1..=1024))]
    jobs: Option<u16>,
    /// Directory for the runs and reports.
    #[arg(long, short, default_value = "out/reproduce")]
    out: PathBuf,
    /// Where the papers' scenario directories are [default: ./scenarios, or
    /// the checkout this binary was built from].
    #[arg(long)]
    scenarios: Option<PathBuf>,
    /// Also run every configuration of every path in the lab (the PEPs
    /// as the daemon), beside the simulator (`leo` only; needs root).
    #[arg(long)]
    lab: bool,
    /// The lab runs' length [default: 30s, or the base file's with --full].
    #[arg(long, requires = "lab", value_parser = crate::lab_cmd::positive_duration)]
    lab_duration: Option<pep_core::Duration>,
}

pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A bar on stderr when it is a terminal; otherwise nothing.
fn bar(show: bool) -> Option<ProgressBar> {
    if !show || !std::io::stderr().is_terminal() {
        return None;
    }
    let b = ProgressBar::new(0);
    b.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} runs ({elapsed}, ETA {eta})")
            .expect("static template")
            .progress_chars("=> "),
    );
    Some(b)
}

fn update(bar: &Option<ProgressBar>, label: &str, p: &Progress) {
    if let Some(b) = bar {
        if b.length() != Some(p.total as u64) {
            b.set_length(p.total as u64);
            // ETA from runs done in this session, not reused ones.
            b.reset_eta();
        }
        b.set_message(label.to_string());
        b.set_position(p.done as u64);
    }
}

pub fn sweep(a: SweepArgs) -> Result<(), String> {
    if let Some(c) = a.pieces {
        return crate::shard_cmd::run(c);
    }
    let path = a.experiment.ok_or("no experiment file given")?;
    let exp = crate::shard_cmd::load(&path, a.quiet)?;
    let out = a
        .out
        .unwrap_or_else(|| PathBuf::from("out").join(&exp.name));
    let mode = if a.short { Mode::Short } else { Mode::Full };
    if !a.quiet {
        if a.short && !exp.has_short() {
            eprintln!(
                "warning: {}: no [short] seeds or set: --short runs the experiment as written",
                exp.origin
            );
        }
        crate::sim_cmd::print_exp_warnings(exp.warnings(mode));
    }
    let cfg = SweepConfig {
        out: out.clone(),
        jobs: a.jobs.map_or_else(cores, usize::from),
        mode,
        fresh: a.fresh,
        cancel: None,
    };
    let pb = bar(!a.quiet);
    let outcome = pep_exp::sweep(&exp, &cfg, &mut |p| update(&pb, &exp.name, p))
        .map_err(|e| e.to_string())?;
    if let Some(b) = pb {
        b.finish_and_clear();
    }
    for f in &outcome.failures {
        eprintln!("failed: {f}");
    }
    if !outcome.failures.is_empty() {
        return Err(format!("{} run(s) failed", outcome.failures.len()));
    }
    let results = outcome.results.ok_or("the sweep did not finish")?;
    let mut files = vec![out.join("results.csv"), out.join("aggregate.csv")];
    if a.format.contains(&TableFormat::Parquet) {
        let names = results
            .write_tables_as(&out, &[pep_exp::parquet::write_file])
            .map_err(|e| e.to_string())?;
        files.extend(names.iter().map(|n| out.join(n)));
    }
    if !a.no_plots {
        let charts = plots::sweep_charts(&exp.plots, &results, &out)?;
        files.extend(plots::write(&charts, &out.join("plots"))?);
    }
    if !a.quiet {
        println!(
            "{}: {} x {} = {} ({} reused, {} ran) in {:.2} s with {}",
            exp.name,
            plural(exp.points.len(), "point", "points"),
            plural(exp.seeds(mode).len(), "seed", "seeds"),
            plural(outcome.total, "run", "runs"),
            outcome.reused,
            outcome.ran,
            outcome.wall_seconds,
            // As many as there were runs to make, as sweep.json says.
            plural(cfg.jobs.min(outcome.ran.max(1)), "job", "jobs")
        );
        print_aggregate(&exp, &results);
        println!("\nwrote {}", list(&files));
    }
    Ok(())
}

fn list(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A short table of means and intervals: the first measure per point.
fn print_aggregate(exp: &Experiment, r: &Results) {
    println!();
    for (p, pt) in r.points.iter().enumerate().take(30) {
        let mut line = format!("{:<6} {:<40}", pt.id, exp.describe(pt));
        for (m, name) in r.measures.iter().enumerate().take(3) {
            let st = r.stats(p, m);
            let v = match (st.mean, st.ci95) {
                (Some(mean), Some((lo, hi))) => format!("{mean:.4} [{lo:.4}, {hi:.4}]"),
                (Some(mean), None) => format!("{mean:.4}"),
                (None, _) => "-".into(),
            };
            line.push_str(&format!("  {name} = {v}"));
        }
        println!("{line}");
    }
    if r.points.len() > 30 {
        println!(
            "... {} more points (see aggregate.csv)",
            r.points.len() - 30
        );
    }
}

pub fn plot(a: PlotArgs) -> Result<(), String> {
    for f in &a.format {
        if f != "svg" && f != "png" {
            return Err(format!("unknown format {f:?}: svg or png"));
        }
    }
    let out = a.out.unwrap_or_else(|| a.dir.join("plots"));
    let mut charts = if a.dir.join("aggregate.csv").exists() {
        sweep_charts(&a.dir)?
    } else {
        plots::run_charts(&a.dir, &a.kind)?
    };
    for c in &mut charts {
        c.formats.clone_from(&a.format);
    }
    let files = plots::write(&charts, &out)?;
    println!("wrote {}", list(&files));
    Ok(())
}

fn sweep_charts(dir: &Path) -> Result<Vec<plots::Named>, String> {
    let copy = dir.join("experiment.toml");
    let text = std::fs::read_to_string(&copy).map_err(|e| format!("{}: {e}", copy.display()))?;
    let exp =
        Experiment::parse(&text, &copy.display().to_string(), None).map_err(|e| e.to_string())?;
    let r = Results::load(dir, &exp)?;
    plots::sweep_charts(&exp.plots, &r, dir)
}

/// Draws the standard plots of a run just written to `out`.
pub fn plot_run(out: &Path) -> Result<Vec<PathBuf>, String> {
    let charts = plots::run_charts(out, &[])?;
    plots::write(&charts, &out.join("plots"))
}

pub fn reproduce(a: ReproduceArgs) -> Result<(), String> {
    if a.paper == SIM_VS_LAB {
        let runs = if a.full { 5 } else { 1 };
        return crate::lab_cmd::sim_vs_lab(a.scenarios.as_deref(), &a.out.join(SIM_VS_LAB), runs);
    }
    let papers: Vec<&'static reproduce::Paper> = if a.paper == "all" {
        reproduce::registry().to_vec()
    } else {
        vec![reproduce::find(&a.paper)?]
    };
    if a.lab {
        // Before any run: a refusal should not cost the simulations.
        crate::reproduce_lab::check(&a.paper)?;
    }
    let lab_duration = match (a.lab_duration, a.full) {
        (Some(d), _) => Some(d),
        (None, true) => None,
        (None, false) => Some(pep_core::Duration::from_secs(30)),
    };
    let opts = reproduce::Options {
        scenarios: a.scenarios.unwrap_or_else(reproduce::default_scenarios_dir),
        out: a.out,
        mode: if a.full { Mode::Full } else { Mode::Short },
        jobs: a.jobs.map_or_else(cores, usize::from),
    };
    let loaded = papers
        .iter()
        .map(|paper| reproduce::load(paper, &opts))
        .collect::<Result<Vec<_>, _>>()?;
    // Once per distinct warning of each experiment, before any run: its
    // points share most of them, and no shipped experiment has any.
    for exp in loaded.iter().flatten() {
        crate::sim_cmd::print_exp_warnings(exp.warnings(opts.mode));
    }
    let mut failed = 0;
    let mut summary = Vec::new();
    for (paper, experiments) in papers.into_iter().zip(loaded) {
        let pb = bar(true);
        let report = reproduce::reproduce(paper, experiments, &opts, &mut |stem, p| {
            update(&pb, &format!("{}/{stem}", paper.name), p)
        })?;
        if let Some(b) = pb {
            b.finish_and_clear();
        }
        println!("{}: {}", paper.name, paper.title);
        println!("  {}", report.tally().line());
        for c in &report.claims {
            let why = match &c.verdict {
                Verdict::Skipped(w) => format!(" ({w})"),
                _ => String::new(),
            };
            let kind = match c.kind {
                reproduce::Kind::Reproduction => String::new(),
                k => format!("[{}] ", k.label()),
            };
            println!(
                "  {:<8} {:<8} {kind}{}{why}",
                c.id,
                c.verdict.word(),
                c.statement
            );
        }
        if a.lab {
            print!("{}", crate::reproduce_lab::run(&report, lab_duration)?);
        }
        println!(
            "  report: {}, {}",
            report.dir.join("report.md").display(),
            report.dir.join("report.html").display()
        );
        failed += report.failed();
        summary.push(format!("  {}: {}", paper.name, report.tally().line()));
    }
    if summary.len() > 1 {
        println!("verdicts per paper:\n{}", summary.join("\n"));
    }
    if failed > 0 {
        return Err(format!("{failed} claim(s) failed"));
    }
    Ok(())
}
