//! `pep sim sweep plan|run|merge`: a sweep in shards, for a cluster or
//! several machines sharing a directory. The work is in `pep_exp::shard`.

use std::path::PathBuf;

use clap::Subcommand;
use pep_exp::shard::{self, Shard};
use pep_exp::slurm;
use pep_exp::{plots, Experiment, Mode};

use crate::exp_cmd::TableFormat;
use crate::sim_summary::plural;

#[derive(Subcommand)]
pub enum ShardCommand {
    /// Write an experiment's task list (plan.json) and a copy of it into a
    /// directory, for `pep sim sweep run DIR --shard i/N`.
    Plan {
        /// Experiment file (TOML).
        experiment: PathBuf,
        /// The sweep's directory (shared by the machines that run shards).
        #[arg(long, short)]
        out: PathBuf,
        /// Apply the experiment's [short] table.
        #[arg(long)]
        short: bool,
    },
    /// Run one shard's tasks of a planned sweep: tasks i, i+N, i+2N, ...
    /// (1-based). Tasks whose records exist are skipped, so a shard can be
    /// run again after a failure, and two runs of one shard do no harm.
    Run {
        /// The directory `pep sim sweep plan` wrote.
        dir: PathBuf,
        /// Which shard: i/N, as 3/8.
        #[arg(long, default_value = "1/1")]
        shard: Shard,
        /// Worker threads, 1 to 1024 [default: the number of cores].
        #[arg(long, short, value_parser = clap::value_parser!(u16).range(1..=1024))]
        jobs: Option<u16>,
        /// Print nothing but errors.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Plan a sweep and write Slurm batch scripts for it: a job array
    /// (runs.sbatch) whose task i runs shard i/N, a merge job
    /// (merge.sbatch) and submit.sh, which submits both, the merge waiting
    /// for the whole array.
    Slurm {
        /// Experiment file (TOML).
        experiment: PathBuf,
        /// The sweep's directory, on a file system the nodes share.
        #[arg(long, short)]
        out: PathBuf,
        /// Runs per array task (short runs batched together).
        #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..))]
        tasks_per_job: u32,
        /// CPUs per array task, each running one of its runs at a time.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
        cpus: u16,
        /// The Slurm partition.
        #[arg(long)]
        partition: Option<String>,
        /// Time limit per array task, as sbatch --time takes it.
        #[arg(long)]
        time: Option<String>,
        /// The pep binary the jobs run [default: this one].
        #[arg(long)]
        pep: Option<PathBuf>,
        /// Apply the experiment's [short] table.
        #[arg(long)]
        short: bool,
    },
    /// Build results.csv, aggregate.csv and the plots once every shard has
    /// run; the same files `pep sim sweep` writes.
    Merge {
        dir: PathBuf,
        /// Do not draw the plots.
        #[arg(long)]
        no_plots: bool,
        /// Table formats, as `pep sim sweep --format`.
        #[arg(long, value_delimiter = ',', default_value = "csv")]
        format: Vec<TableFormat>,
    },
}

pub fn run(cmd: ShardCommand) -> Result<(), String> {
    match cmd {
        ShardCommand::Plan {
            experiment,
            out,
            short,
        } => {
            let exp = load(&experiment, false)?;
            let mode = if short { Mode::Short } else { Mode::Full };
            crate::sim_cmd::print_exp_warnings(exp.warnings(mode));
            let plan = shard::plan(&exp, mode, &out).map_err(|e| e.to_string())?;
            println!(
                "{}: {} planned in {} (run them with `pep sim sweep run {} --shard i/N`)",
                exp.name,
                plural(plan.tasks.len(), "run", "runs"),
                out.display(),
                out.display()
            );
            Ok(())
        }
        ShardCommand::Slurm {
            experiment,
            out,
            tasks_per_job,
            cpus,
            partition,
            time,
            pep,
            short,
        } => {
            let exp = load(&experiment, false)?;
            let mode = if short { Mode::Short } else { Mode::Full };
            crate::sim_cmd::print_exp_warnings(exp.warnings(mode));
            let plan = shard::plan(&exp, mode, &out).map_err(|e| e.to_string())?;
            let absolute = |p: &std::path::Path| {
                std::fs::canonicalize(p).map_err(|e| format!("{}: {e}", p.display()))
            };
            let pep = match pep {
                Some(p) => absolute(&p)?,
                None => std::env::current_exe().map_err(|e| format!("this pep's path: {e}"))?,
            };
            let o = slurm::SlurmOptions {
                pep,
                dir: absolute(&out)?,
                tasks_per_job: tasks_per_job as usize,
                cpus: cpus.into(),
                partition,
                time,
            };
            let (files, shards) = slurm::scripts(&exp.name, plan.tasks.len(), &o);
            slurm::write(&o.dir, &files).map_err(|e| format!("{}: {e}", out.display()))?;
            println!(
                "{}: {} in {} array tasks; submit with {}/submit.sh",
                exp.name,
                plural(plan.tasks.len(), "run", "runs"),
                shards,
                o.dir.display()
            );
            Ok(())
        }
        ShardCommand::Run {
            dir,
            shard,
            jobs,
            quiet,
        } => {
            let jobs = jobs.map_or_else(crate::exp_cmd::cores, usize::from);
            let o = shard::run_shard(&dir, shard, jobs, None)?;
            for f in &o.failures {
                eprintln!("failed: {f}");
            }
            if !quiet {
                println!(
                    "shard {}/{}: {} ({} reused, {} ran)",
                    shard.index,
                    shard.count,
                    plural(o.total, "run", "runs"),
                    o.reused,
                    o.ran
                );
            }
            if o.failures.is_empty() {
                Ok(())
            } else {
                Err(format!("{} run(s) failed", o.failures.len()))
            }
        }
        ShardCommand::Merge {
            dir,
            no_plots,
            format,
        } => {
            let (exp, results) = shard::merge(&dir)?;
            let mut files = vec![dir.join("results.csv"), dir.join("aggregate.csv")];
            if format.contains(&TableFormat::Parquet) {
                let names = results
                    .write_tables_as(&dir, &[pep_exp::parquet::write_file])
                    .map_err(|e| e.to_string())?;
                files.extend(names.iter().map(|n| dir.join(n)));
            }
            if !no_plots {
                let charts = plots::sweep_charts(&exp.plots, &results, &dir)?;
                files.extend(plots::write(&charts, &dir.join("plots"))?);
            }
            let list: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
            println!(
                "{}: merged {}; wrote {}",
                exp.name,
                plural(results.rows.len(), "run", "runs"),
                list.join(", ")
            );
            Ok(())
        }
    }
}

/// The experiment at `path`, read under a spinner on a terminal unless
/// `quiet`: loading resolves every point, seconds for a base of 100,000
/// users.
pub(crate) fn load(path: &std::path::Path, quiet: bool) -> Result<Experiment, String> {
    use std::io::IsTerminal;
    let spin = !quiet && std::io::stderr().is_terminal();
    let what = format!("reading {}", path.display());
    crate::sim_cmd::step(spin, what, || Experiment::load(path)).map_err(|e| e.to_string())
}
