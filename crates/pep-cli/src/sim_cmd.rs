//! `pep sim ...`: run a scenario, check scenario files, benchmark the engine.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant as WallInstant;

use clap::Subcommand;
use indicatif::{ProgressBar, ProgressStyle};
use pep_core::Instant;
use pep_sim::output::Summary;
use pep_sim::scenario::read_text;
use pep_sim::{Scenario, Simulation};

#[derive(Subcommand)]
pub enum SimCommand {
    /// Run a scenario and write its results (CSV series, summary.json, run.json).
    ///
    /// Without a file, runs the built-in default: the same 10 MB NewReno
    /// download over a GEO-satellite-like path (10 Mbit/s, 250 ms one way)
    /// end to end and through a split PEP, and prints the PEP's gain.
    Run {
        /// Scenario file (TOML). Omit to run the built-in default scenario.
        scenario: Option<PathBuf>,
        /// Directory for the results [default: out/<scenario name>].
        #[arg(long, short)]
        out: Option<PathBuf>,
        /// Override the scenario's master seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Print nothing but errors.
        #[arg(long, short)]
        quiet: bool,
        /// Capture a link to a pcap file in the output directory: a
        /// direction ("r1->r2") or a link name (both directions). Repeatable.
        #[arg(long, value_name = "LINK")]
        pcap: Vec<String>,
        /// Draw the standard plots into <out>/plots.
        #[arg(long)]
        plot: bool,
        /// Threads for a run cut in two (`scenario.cut`): 2 runs its two
        /// sides at once, 1 alternates them on one thread. The results are
        /// the same [default: 2 on a machine with two CPUs or more].
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=2))]
        threads: Option<u8>,
        /// Change one field of the scenario, as a sweep's `[vary]` does:
        /// `link[r1-receiver].rate=20Mbps`, `flow[0].tcp.cc=cubic`.
        /// Repeatable; applied in order.
        #[arg(long, value_name = "PATH=VALUE")]
        set: Vec<String>,
        /// Simulated time to run, e.g. "10s" (the same as
        /// `--set scenario.duration=10s`).
        #[arg(long, value_name = "TIME")]
        duration: Option<String>,
        /// Print every flow and link direction, not the first 20.
        #[arg(long)]
        all: bool,
        /// Table formats, comma-separated: csv (the default), parquet
        /// (typed columns, one .parquet file per series), or both.
        /// `--plot` reads the CSV files.
        #[arg(long, value_delimiter = ',', default_value = "csv")]
        format: Vec<crate::exp_cmd::TableFormat>,
    },
    /// Run an experiment: every point and seed on all cores, resumable;
    /// writes results.csv, aggregate.csv and plots.
    Sweep(crate::exp_cmd::SweepArgs),
    /// Draw plots from a sweep's or a run's output directory.
    Plot(crate::exp_cmd::PlotArgs),
    /// Validate scenario and experiment files without running them.
    ///
    /// An experiment is checked as `pep sim sweep` would check it: its base
    /// scenario with every point's values, full and `--short`.
    Check {
        /// Scenario or experiment files (TOML).
        #[arg(required = true)]
        scenarios: Vec<PathBuf>,
    },
    /// Benchmark the engine on a dumbbell of N bulk flows sharing a
    /// 100 Mbit/s, 250 ms link.
    Bench {
        /// Flow counts to run, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "10,50,500")]
        flows: Vec<usize>,
        /// Simulated seconds per run.
        #[arg(long, default_value_t = 200)]
        seconds: u64,
        /// Congestion controls the flows run (scenario `tcp.cc` names),
        /// comma-separated; each flow count runs with each.
        #[arg(long, value_delimiter = ',', default_value = "newreno")]
        cc: Vec<String>,
        /// A mahimahi trace (`mm-link` format) the shared link's forward
        /// direction follows instead of 100 Mbit/s; with `--flows 1`, the
        /// trace-driven single flow.
        #[arg(long, value_name = "FILE")]
        trace: Option<PathBuf>,
    },
    /// Print the built-in default scenario, annotated: a GEO path end to end
    /// and through a split PEP (a starting point for your own).
    Default,
    /// Print a baseline scenario (no PEP) as an ns-2 2.35 script, to run it
    /// in ns-2 itself (`ns run.tcl`): it prints each flow's acknowledged
    /// bytes at the warm-up and at the end ("ack <flow> <time> <bytes>").
    Ns2 {
        /// Scenario file (TOML).
        scenario: PathBuf,
        /// When to take the first record (seconds).
        #[arg(long, default_value_t = 5.0)]
        warmup: f64,
        /// ns-2's RNG seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

pub fn run(cmd: SimCommand) -> Result<(), String> {
    match cmd {
        SimCommand::Run {
            scenario,
            out,
            seed,
            quiet,
            pcap,
            plot,
            threads,
            set,
            duration,
            all,
            format,
        } => {
            let changes = Changes {
                pcap,
                set,
                duration,
            };
            if plot && !format.contains(&crate::exp_cmd::TableFormat::Csv) {
                return Err("--plot draws from the CSV files: add csv to --format".into());
            }
            let show = Show { quiet, all, plot };
            let writers = crate::exp_cmd::writers(&format);
            run_scenario(
                scenario.as_deref(),
                out,
                seed,
                &changes,
                show,
                threads,
                &writers,
            )
        }
        SimCommand::Sweep(a) => crate::exp_cmd::sweep(a),
        SimCommand::Plot(a) => crate::exp_cmd::plot(a),
        SimCommand::Check { scenarios } => check(&scenarios),
        SimCommand::Bench {
            flows,
            seconds,
            cc,
            trace,
        } => bench(&flows, seconds, &cc, trace.as_deref()),
        SimCommand::Default => {
            print!("{}", pep_sim::scenario::DEFAULT_SCENARIO_TOML);
            Ok(())
        }
        SimCommand::Ns2 {
            scenario,
            warmup,
            seed,
        } => {
            // No warnings: ns-2 refuses what they name (RACK, a processing
            // cost), and the script it writes samples nothing.
            let sc = Scenario::load(&scenario).map_err(|e| e.to_string())?;
            if !(warmup >= 0.0 && warmup < sc.duration.as_secs_f64()) {
                return Err(format!(
                    "--warmup {warmup}: must be at least 0 and shorter than the run ({})",
                    sc.duration
                ));
            }
            let warm = pep_core::Duration::from_nanos((warmup * 1e9).round() as u64);
            let script = pep_sim::ns2::script(&sc, warm, seed)
                .map_err(|e| format!("{}: ns-2 cannot express it: {e}", scenario.display()))?;
            print!("{script}");
            Ok(())
        }
    }
}

/// Prints what loading found valid but without effect, one
/// `warning: <file:line:col: field: message>` line each, on stderr.
pub(crate) fn print_warnings(sc: &Scenario) {
    for w in sc.warnings.iter() {
        eprintln!("warning: {w}");
    }
}

/// [`print_warnings`] for an experiment's points: each distinct warning
/// once, naming the first point that has it and how many share it.
pub(crate) fn print_exp_warnings<'a>(warnings: impl IntoIterator<Item = &'a pep_exp::ExpWarning>) {
    for w in warnings {
        eprintln!("warning: {w}");
    }
}

/// The default's GEO path without its PEP (`scenarios/examples/geo.toml`):
/// what `pep lab` runs without a file, as the lab runs no PEP agent.
pub(crate) fn geo_without_pep() -> Scenario {
    const GEO: &str = include_str!("../../../scenarios/examples/geo.toml");
    Scenario::from_toml_str(GEO, "scenarios/examples/geo.toml")
        .expect("scenarios/examples/geo.toml is valid (the tests load every scenario)")
}

/// What the command line changes in the scenario file.
#[derive(Default)]
pub(crate) struct Changes {
    /// `--pcap`: links to capture, added as `[[trace]]` tables.
    pub pcap: Vec<String>,
    /// `--set path=value`, in order.
    pub set: Vec<String>,
    /// `--duration`: `scenario.duration`, after the `--set`s.
    pub duration: Option<String>,
}

impl Changes {
    /// The overrides, as a sweep applies them, each with the flag that
    /// asked for it (for errors).
    fn overrides(&self) -> Result<Vec<(String, toml::Value)>, String> {
        let mut out = Vec::new();
        for s in &self.set {
            let o = pep_sim::scenario::parse_override(s).map_err(|e| format!("--set {s}: {e}"))?;
            out.push(o);
        }
        if let Some(d) = &self.duration {
            out.push(("scenario.duration".into(), toml::Value::from(d.as_str())));
        }
        Ok(out)
    }
}

/// The scenario a run uses: the file (or the built-in default) with the
/// command line's changes.
pub(crate) fn load(path: Option<&Path>, changes: &Changes) -> Result<Scenario, String> {
    let (mut text, origin) = match path {
        Some(p) => (read_text(p, "scenario file")?, p.display().to_string()),
        None => (
            pep_sim::scenario::DEFAULT_SCENARIO_TOML.to_string(),
            "scenarios/default.toml".to_string(),
        ),
    };
    // `--pcap` adds [[trace]] tables, checked like the file's own.
    for link in &changes.pcap {
        text.push_str(&format!(
            "\n[[trace]]\nlink = {}\n",
            toml::Value::from(link.as_str())
        ));
    }
    let overrides = changes.overrides()?;
    let flags = match (changes.pcap.is_empty(), overrides.is_empty()) {
        (true, true) => "",
        (false, true) => "--pcap: ",
        (true, false) => "with --set/--duration: ",
        (false, false) => "with --pcap, --set/--duration: ",
    };
    Scenario::from_toml_str_with(&text, &origin, &overrides).map_err(|e| format!("{flags}{e}"))
}

/// Runs a simulation to its end, with a progress bar on an interactive
/// terminal. Returns the wall-clock seconds it took.
fn run_with_progress(sim: &mut Simulation, show: bool) -> f64 {
    let started = WallInstant::now();
    if !show {
        sim.run();
        return started.elapsed().as_secs_f64();
    }
    let bar = ProgressBar::new(1000);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{bar:40}] {msg} ({elapsed}, ETA {eta})")
            .expect("static template")
            .progress_chars("=> "),
    );
    let end = sim.end().as_nanos();
    for step in 1..=1000u64 {
        sim.run_until(Instant((end as u128 * step as u128 / 1000) as u64));
        bar.set_position(step);
        bar.set_message(format!(
            "{:.1}/{:.0} s simulated",
            sim.now().as_secs_f64(),
            sim.end().as_secs_f64()
        ));
    }
    bar.finish_and_clear();
    started.elapsed().as_secs_f64()
}

/// Runs `work` under a spinner naming it (`what`) on an interactive
/// terminal (`show`): a million users take most of a minute to read and
/// build, and a silent terminal looks hung.
pub(crate) fn step<T>(show: bool, what: String, work: impl FnOnce() -> T) -> T {
    if !show {
        return work();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} ({elapsed})").expect("static template"),
    );
    bar.set_message(what);
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    let out = work();
    bar.finish_and_clear();
    out
}

/// How much `pep sim run` prints and draws.
#[derive(Clone, Copy)]
struct Show {
    quiet: bool,
    all: bool,
    plot: bool,
}

fn run_scenario(
    path: Option<&Path>,
    out: Option<PathBuf>,
    seed: Option<u64>,
    changes: &Changes,
    show: Show,
    threads: Option<u8>,
    writers: &[pep_sim::table::FileWriter],
) -> Result<(), String> {
    let quiet = show.quiet;
    let progress = !quiet && std::io::stderr().is_terminal();
    let what = path.map_or("the built-in scenario".to_string(), |p| {
        p.display().to_string()
    });
    let mut sc = step(progress, format!("reading {what}"), || load(path, changes))?;
    if !quiet {
        print_warnings(&sc);
    }
    if let Some(s) = seed {
        sc = sc.with_seed(s);
        if !quiet && crate::randomness::random_parts(&sc).is_empty() {
            eprintln!(
                "note: --seed {s} changes nothing here: the scenario draws no random numbers \
                 (no random loss, RED queue, jitter, half-duplex backoff or Pareto source)"
            );
        }
    }
    let out = out.unwrap_or_else(|| PathBuf::from("out").join(&sc.name));
    let building = format!("building {} nodes", sc.nodes.len());
    let mut sim = step(progress, building, || Simulation::new(&sc));
    if let Some(n) = threads {
        sim.set_parallel(n == 2);
    }
    let threads = sim.threads();
    sim.open_traces(&sc, &out)
        .map_err(|e| format!("opening pcap files in {}: {e}", out.display()))?;
    let wall = run_with_progress(&mut sim, progress);
    let writing = format!("writing results to {}", out.display());
    let summary = sim.summary();
    let mut files = step(progress, writing, || {
        sim.write_outputs_with(&out, writers, &summary)
    })
    .map_err(|e| format!("writing results to {}: {e}", out.display()))?;
    let every = |table: &str| {
        let file = files
            .iter()
            .find(|f| f.strip_suffix(".csv").or(f.strip_suffix(".parquet")) == Some(table));
        file.cloned().unwrap_or_else(|| "summary.json".into())
    };
    let (every_flow, every_link) = (every("flows"), every("link_totals"));
    for t in sim
        .finish_traces()
        .map_err(|e| format!("writing a pcap: {e}"))?
    {
        let name = t.path.file_name().map(|n| n.to_string_lossy().into_owned());
        files.push(format!(
            "{} ({})",
            name.unwrap_or_default(),
            crate::sim_summary::plural(t.packets as usize, "packet", "packets")
        ));
    }
    let run = run_record(&summary, wall, threads);
    std::fs::write(out.join("run.json"), run)
        .map_err(|e| format!("writing {}: {e}", out.join("run.json").display()))?;
    if show.plot {
        let n = crate::exp_cmd::plot_run(&out)?.len();
        files.push(format!(
            "plots/ ({})",
            crate::sim_summary::plural(n, "file", "files")
        ));
    }
    if !quiet {
        print_header(&summary, wall, threads);
        let view = crate::sim_summary::RunView {
            scenario: &sc,
            summary: &summary,
            goodput: &sim.metrics().goodput,
            bin: sim.metrics().bin_every,
            out: &out,
            every_flow: &every_flow,
            every_link: &every_link,
            all: show.all,
        };
        print!("{}", crate::sim_summary::render(&view));
        println!(
            "\nresults in {}: {}, run.json",
            out.display(),
            files.join(", ")
        );
    }
    Ok(())
}

/// Machine-dependent facts about a run, kept apart from the results so
/// those stay byte-identical.
fn run_record(s: &Summary, wall: f64, threads: usize) -> String {
    let v = serde_json::json!({
        "pep_version": env!("CARGO_PKG_VERSION"),
        "wall_seconds": wall,
        "threads": threads,
        "events": s.events,
        "events_per_second": s.events as f64 / wall.max(1e-9),
        "packets_forwarded_per_second": s.packets_forwarded as f64 / wall.max(1e-9),
        "simulated_seconds_per_wall_second": s.duration_s / wall.max(1e-9),
    });
    serde_json::to_string_pretty(&v).expect("plain JSON") + "\n"
}

/// The run's first line: the only machine-dependent part of the table.
fn print_header(s: &Summary, wall: f64, threads: usize) {
    println!(
        "scenario {} (seed {}), {} s simulated in {:.2} s wall{}, {} events ({:.1} M/s)",
        s.scenario,
        s.seed,
        s.duration_s,
        wall,
        if threads > 1 { " on 2 threads" } else { "" },
        s.events,
        s.events as f64 / wall.max(1e-9) / 1e6
    );
    println!();
}

fn check(paths: &[PathBuf]) -> Result<(), String> {
    let mut failed = 0;
    for p in paths {
        match check_one(p) {
            Ok(said) => println!("{}: ok ({said})", p.display()),
            Err(e) => {
                failed += 1;
                eprintln!("{e}");
            }
        }
    }
    if failed > 0 {
        Err(format!("{failed} of {} file(s) invalid", paths.len()))
    } else {
        Ok(())
    }
}

/// What a valid scenario or experiment holds, in a few words.
fn check_one(p: &Path) -> Result<String, String> {
    let text = read_text(p, "scenario or experiment file")?;
    let is_experiment = pep_sim::scenario::has_table_without(&text, "experiment", "scenario");
    let origin = p.display().to_string();
    if is_experiment {
        let dir = p.parent().unwrap_or(Path::new("."));
        let exp =
            pep_exp::Experiment::parse(&text, &origin, Some(dir)).map_err(|e| e.to_string())?;
        // Checked in both modes, so warned of in both.
        print_exp_warnings(exp.all_warnings());
        return Ok(format!(
            "experiment: {} point(s) x {} seed(s) over {}",
            exp.points.len(),
            exp.seeds.len(),
            exp.base_path.display()
        ));
    }
    let sc = Scenario::from_toml_str(&text, &origin).map_err(|e| e.to_string())?;
    // Valid all the same: the file is ok, and the warnings say what to look at.
    print_warnings(&sc);
    let cut = match &sc.cut {
        Some(c) => format!(
            ", cut at link {:?}: {} and {} nodes",
            sc.links[c.link].name,
            c.far.iter().filter(|&&f| !f).count(),
            c.far.iter().filter(|&&f| f).count()
        ),
        None => String::new(),
    };
    Ok(format!(
        "{} nodes, {} links, {} flows, {}{cut}",
        sc.nodes.len(),
        sc.links.len(),
        sc.flows.len(),
        sc.duration
    ))
}

/// Checks `pep sim bench`'s flags, naming the flag: the dumbbell's text
/// grows with `--flows`, so a huge count is refused before it is built.
fn check_bench_flags(flows: &[usize], seconds: u64) -> Result<(), String> {
    use pep_sim::bench::{MAX_FLOWS, MAX_SECONDS};
    if flows.is_empty() {
        return Err("--flows: give at least one flow count, e.g. --flows 10,50".into());
    }
    for &n in flows {
        if n == 0 {
            return Err("--flows 0: each count must be at least 1 flow".into());
        }
        if n > MAX_FLOWS {
            return Err(format!(
                "--flows {n}: at most {MAX_FLOWS} flows (a scenario's flow limit)"
            ));
        }
    }
    if seconds == 0 {
        return Err("--seconds 0: the run must last at least 1 simulated second".into());
    }
    if seconds > MAX_SECONDS {
        return Err(format!(
            "--seconds {seconds}: at most {MAX_SECONDS} simulated seconds"
        ));
    }
    Ok(())
}

fn bench(
    flows: &[usize],
    seconds: u64,
    ccs: &[String],
    trace: Option<&std::path::Path>,
) -> Result<(), String> {
    check_bench_flags(flows, seconds)?;
    let trace = match trace {
        Some(t) => Some(
            t.to_str()
                .ok_or_else(|| format!("--trace {}: not a UTF-8 path", t.display()))?,
        ),
        None => None,
    };
    let build = |n: usize, secs: u64, cc: &str| pep_sim::bench::dumbbell_trace(n, secs, cc, trace);
    // Each name (and the trace file) is checked before anything runs, by
    // the scenario's own validation (its message names the accepted
    // values, or the trace file and line).
    for cc in ccs {
        build(1, 1, cc).map_err(|e| match trace {
            Some(t) => format!("--cc {cc} --trace {t}: {e}"),
            None => format!("--cc {cc}: {e}"),
        })?;
    }
    let shared = match trace {
        Some(t) => {
            let cc = ccs
                .first()
                .ok_or("--cc: give at least one congestion control")?;
            let sc = build(1, 1, cc).map_err(|e| e.to_string())?;
            let l = &sc.links[sc
                .link_index("r1-r2")
                .ok_or("the dumbbell has no link r1-r2")?];
            let mean = l.forward.rate.as_mbps_f64();
            format!("shared link following trace {t} ({mean:.2} Mbit/s mean) one way, 250 ms")
        }
        None => "100 Mbit/s 250 ms shared link".to_string(),
    };
    // The default keeps the table it always printed; other controls add a
    // column naming each row's.
    let default = ccs.len() == 1 && ccs[0] == "newreno";
    let label = if default {
        "NewReno".to_string()
    } else {
        ccs.join("/")
    };
    let col = |cc: &str| {
        if default {
            String::new()
        } else {
            format!(" {cc:>8}")
        }
    };
    println!(
        "engine benchmark: dumbbell, N {label} bulk flows, {shared}, {seconds} s simulated, \
         single thread"
    );
    println!(
        "{:>6}{} {:>10} {:>12} {:>12} {:>14} {:>14} {:>10}",
        "flows",
        col("cc"),
        "wall s",
        "events",
        "Mevents/s",
        "Mpkts fwd/s",
        "goodput",
        "kB/flow"
    );
    for &n in flows {
        for cc in ccs {
            let before = resident_kb();
            let sc = build(n, seconds, cc).map_err(|e| e.to_string())?;
            let mut sim = Simulation::new(&sc);
            let started = WallInstant::now();
            sim.run();
            let wall = started.elapsed().as_secs_f64();
            let s = sim.summary();
            // Resident memory the run added (the scenario, the engine, what
            // the run allocated), per flow: the per-flow footprint as it is
            // used, queues and out-of-order state included.
            let per_flow = match (before, resident_kb()) {
                (Some(b), Some(a)) => format!("{:.1}", a.saturating_sub(b) as f64 / n as f64),
                _ => "-".to_string(),
            };
            println!(
                "{:>6}{} {:>10.3} {:>12} {:>12.2} {:>14.2} {:>7.2} Mbit/s {:>10}",
                n,
                col(cc),
                wall,
                s.events,
                s.events as f64 / wall / 1e6,
                s.packets_forwarded as f64 / wall / 1e6,
                s.total_goodput_mbps,
                per_flow
            );
        }
    }
    let m = pep_sim::sim::memory_footprint();
    println!(
        "\nmemory: {} B per in-flight packet (queued or propagating), {} B per flow (sender + \
         receiver + bookkeeping, before out-of-order state), {} B per link direction (4 per \
         dumbbell flow, before queued packets); kB/flow: resident memory the run added",
        m.per_packet, m.per_flow, m.per_port
    );
    Ok(())
}

/// This process's resident memory in kB (Linux `/proc/self/status`).
fn resident_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use pep_core::{Duration, Rate};

    use super::*;

    fn changes(set: &[&str], duration: Option<&str>) -> Changes {
        Changes {
            pcap: Vec::new(),
            set: set.iter().map(|s| s.to_string()).collect(),
            duration: duration.map(str::to_string),
        }
    }

    #[test]
    fn set_and_duration_change_the_default_as_a_sweep_would() {
        let sc = load(
            None,
            &changes(&["link[r1-receiver].rate=20Mbps"], Some("5s")),
        )
        .unwrap();
        let l = &sc.links[sc.link_index("r1-receiver").unwrap()];
        assert_eq!(l.forward.rate, Rate::mbps(20));
        assert_eq!(sc.duration, Duration::from_secs(5));
        // The other path is untouched.
        let p = &sc.links[sc.link_index("pep-r1-pep-receiver").unwrap()];
        assert_eq!(p.forward.rate, Rate::mbps(10));
        // Applied in order, --duration last.
        let set = ["scenario.duration=7s", "scenario.duration=8s"];
        assert_eq!(
            load(None, &changes(&set, None)).unwrap().duration,
            Duration::from_secs(8)
        );
        let sc = load(None, &changes(&set, Some("2s"))).unwrap();
        assert_eq!(sc.duration, Duration::from_secs(2));
        // The run lasts what --duration says.
        let mut sim = Simulation::new(&load(None, &changes(&[], Some("3s"))).unwrap());
        sim.run();
        assert_eq!(sim.summary().duration_s, 3.0);
    }

    #[test]
    fn a_bad_set_or_duration_is_named() {
        let e = load(None, &changes(&["link[nope].rate=1Mbps"], None)).unwrap_err();
        assert!(e.starts_with("with --set/--duration:"), "{e}");
        assert!(
            e.contains("no [[link]] table is named \"nope\"; the names are"),
            "{e}"
        );
        assert!(e.contains("\"r1-receiver\""), "{e}");
        let e = load(None, &changes(&["nonsense"], None)).unwrap_err();
        assert!(e.starts_with("--set nonsense:"), "{e}");
        assert!(e.contains("expected path=value"), "{e}");
        let e = load(None, &changes(&[], Some("0s"))).unwrap_err();
        assert!(
            e.contains("scenario.duration: the duration must be positive"),
            "{e}"
        );
        let e = load(None, &changes(&[], Some("ten"))).unwrap_err();
        assert!(e.contains("scenario.duration"), "{e}");
    }
}
