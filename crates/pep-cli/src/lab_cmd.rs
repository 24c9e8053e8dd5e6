//! `pep lab ...`: build a scenario's network as Linux namespaces with
//! emulated links, run real TCP over it, and take it down again.
//!
//! The scenario file is the simulator's (`pep_sim::scenario`); it becomes a
//! `pep_lab::LabTopology` here, so the lab itself depends only on the core.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use pep_core::queue::QueueLimit;
use pep_core::{Duration, KindFilter, Rate};
use pep_lab::emu::EmuOptions;
use pep_lab::probe::{MAX_PING_COUNT, MAX_PING_PAYLOAD};
use pep_lab::report;
use pep_lab::signals::TerminationSignals;
use pep_lab::state::{self, LabState};
use pep_lab::topology::{id_from, valid_id, DirParams, Discipline, LabTopology, LossParams};
use pep_lab::traffic::{self, Amount, FlowSpec, TrafficOptions, TrafficReport};
use pep_lab::{Endpoint, Lab, LabOptions};
use pep_sim::scenario::{
    ClassifySpec, FlowSpec as SimFlow, LinkDirSpec, LossSpec, MediumSpec, QueueSpec, Scenario,
    Series, SourceSpec,
};
use pep_sim::units;

use crate::lab_compare::{FlowComparison, Sample};

#[derive(Subcommand)]
pub enum LabCommand {
    /// Build a scenario's topology and keep it up until Ctrl-C or `pep lab down`.
    ///
    /// Every node becomes a network namespace (`pepl-<id>.<node>`), every link
    /// a user-space emulator of the scenario's rate, delay, queue and loss in
    /// its own namespace (`pepl-<id>+l<n>`). Run programs in a node with
    /// `ip netns exec pepl-<id>.<node> <command>`. Needs root.
    Up {
        /// Scenario file (TOML). Omit for scenarios/examples/geo.toml (the
        /// built-in default's GEO path, without its PEP).
        scenario: Option<PathBuf>,
        #[command(flatten)]
        lab: LabArgs,
    },
    /// Remove a lab, or every lab: stop its process, delete its namespaces
    /// and state. Also cleans up after a lab whose process was killed.
    Down {
        /// The lab's id [default: every lab]. An id with nothing left of it
        /// is an error.
        #[arg(value_parser = lab_id)]
        id: Option<String>,
    },
    /// List the labs on this machine.
    List,
    /// Ping from one node of a running lab to another (ICMP echo).
    Ping {
        /// Sending node.
        from: String,
        /// Receiving node, or an IPv4 address.
        to: String,
        /// The lab [default: the only running one].
        #[arg(long, value_parser = lab_id)]
        lab: Option<String>,
        /// Echo requests to send, 1 to 65536 (16-bit sequence numbers).
        #[arg(short = 'c', long, default_value_t = 10,
              value_parser = clap::value_parser!(u32).range(1..=MAX_PING_COUNT as i64))]
        count: u32,
        /// Time between requests (positive).
        #[arg(short = 'i', long, default_value = "200ms", value_parser = positive_duration)]
        interval: Duration,
        /// Payload bytes per request, 0 to 65507 (one IPv4 packet; below 8,
        /// 8 are sent: the send time).
        #[arg(short = 's', long, default_value_t = 56,
              value_parser = clap::value_parser!(u64).range(0..=MAX_PING_PAYLOAD as u64))]
        size: u64,
    },
    /// Run one TCP transfer between two nodes of a running lab, checked byte
    /// for byte; print goodput and TCP_INFO, optionally write results.
    Traffic(TrafficArgs),
    /// Build a scenario, run its flows with real Linux TCP, write the results
    /// (goodput.csv, cwnd.csv, tcpinfo.csv, summary.json), take it down.
    Run {
        /// Scenario file (TOML). Omit for scenarios/examples/geo.toml (the
        /// built-in default's GEO path, without its PEP).
        scenario: Option<PathBuf>,
        /// Directory for the results [default: out/<scenario name>-lab].
        #[arg(long, short)]
        out: Option<PathBuf>,
        #[command(flatten)]
        run: RunArgs,
        #[command(flatten)]
        lab: LabArgs,
    },
    /// Run a scenario in the simulator and in the lab; print both side by side
    /// and write each one's results (<out>/sim, <out>/lab). With agents, each
    /// world runs without and with the PEP (the daemon in the lab; <out>/sim-nopep,
    /// <out>/lab-nopep), and the table gives the PEP's gain in each.
    Compare {
        /// Scenario file (TOML). Omit for scenarios/examples/geo.toml (the
        /// built-in default's GEO path, without its PEP).
        scenario: Option<PathBuf>,
        /// Directory for the results [default: out/<scenario name>-compare].
        #[arg(long, short)]
        out: Option<PathBuf>,
        /// Runs per world (1 to 50): lab runs, and as many simulator seeds
        /// (the scenario's, then the next); means with 95 % intervals.
        #[arg(long, default_value_t = 1,
              value_parser = clap::value_parser!(u32).range(1..=50))]
        runs: u32,
        #[command(flatten)]
        run: RunArgs,
        #[command(flatten)]
        lab: LabArgs,
    },
    /// Run `compare` on every scenario of a directory (default
    /// scenarios/validation; also `pep reproduce sim-vs-lab`) and report, per flow, simulator and lab side by
    /// side with the tolerance and the verdict: the PEP's gain in the lab
    /// within 15 % of the simulator's, goodput with the PEP within 10 % (15 %
    /// on a lossy path). Writes <out>/validation.md; exits 1 on a miss.
    Validate {
        /// Directory of scenarios.
        #[arg(default_value = "scenarios/validation")]
        dir: PathBuf,
        /// Directory for the results (one per scenario).
        #[arg(long, short, default_value = "out/validation")]
        out: PathBuf,
        /// Runs per world (1 to 50): lab runs and simulator seeds.
        #[arg(long, default_value_t = 1,
              value_parser = clap::value_parser!(u32).range(1..=50))]
        runs: u32,
        #[command(flatten)]
        run: RunArgs,
        #[command(flatten)]
        lab: LabArgs,
    },
}

/// How to build the lab.
#[derive(Args)]
pub struct LabArgs {
    /// Lab id (a-z, 0-9, '-'; at most 24) [default: from the scenario name].
    #[arg(long, value_parser = lab_id)]
    id: Option<String>,
    /// Busy-poll this many microseconds (0 to 1000) before each emulator
    /// deadline, for sub-10 us timing at the cost of CPU.
    #[arg(long, default_value_t = 0,
          value_parser = clap::value_parser!(u64).range(0..=MAX_SPIN_US))]
    spin_us: u64,
    /// Do not run the emulator threads under SCHED_FIFO.
    #[arg(long)]
    no_realtime: bool,
    /// Let idle CPUs halt while the lab is up. By default the lab asks the
    /// kernel to keep them polling (/dev/cpu_dma_latency = 0), because
    /// waking a halted CPU delays frames by up to milliseconds in a VM.
    #[arg(long)]
    no_poll_idle: bool,
    /// Also give every node an IPv6 address (fd70:6570:<link>::<1|2>), with
    /// static neighbours and routes like the IPv4 ones.
    #[arg(long)]
    ipv6: bool,
}

/// Overrides for running a scenario's flows.
#[derive(Args)]
pub struct RunArgs {
    /// Override the scenario's master seed (loss streams, byte streams).
    #[arg(long)]
    seed: Option<u64>,
    /// Linux congestion control for every flow [default: the scenario's,
    /// with NewReno and Reno as Linux's "reno"].
    #[arg(long)]
    cc: Option<String>,
    /// Override the scenario's duration (wall-clock time in the lab;
    /// positive).
    #[arg(long, value_parser = positive_duration)]
    duration: Option<Duration>,
}

#[derive(Args)]
pub struct TrafficArgs {
    /// Sending node.
    #[arg(long)]
    from: String,
    /// Receiving node.
    #[arg(long)]
    to: String,
    /// The lab [default: the only running one].
    #[arg(long, value_parser = lab_id)]
    lab: Option<String>,
    /// Congestion control (TCP_CONGESTION): cubic, reno, bbr, ...
    #[arg(long, default_value = "cubic")]
    cc: String,
    /// Send exactly this much, e.g. "10MB" (instead of --duration; positive).
    #[arg(long, conflicts_with = "duration", value_parser = positive_bytes)]
    bytes: Option<u64>,
    /// Send for this long (positive) [default: 10s].
    #[arg(long, value_parser = positive_duration)]
    duration: Option<Duration>,
    /// Seed of the byte stream.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Receiver port.
    #[arg(long, default_value_t = 5001)]
    port: u16,
    /// Receiver SO_RCVBUF, e.g. "64KiB" (the kernel doubles it; 1 B to
    /// 2 GiB - 1).
    #[arg(long, value_parser = socket_buffer)]
    rcvbuf: Option<u32>,
    /// The receive window the sender sees, e.g. "256KiB" (TCP_WINDOW_CLAMP,
    /// held on a locked receive buffer; 1 B to 2 GiB - 1).
    #[arg(long, value_parser = socket_buffer)]
    window_clamp: Option<u32>,
    /// Sender TCP_MAXSEG, e.g. "1000B" (88 to 32767 B, as the kernel takes).
    #[arg(long, value_parser = mss)]
    mss: Option<u32>,
    /// Goodput bin and TCP_INFO sampling period (positive).
    #[arg(long, default_value = "100ms", value_parser = positive_duration)]
    interval: Duration,
    /// Write goodput.csv, cwnd.csv, tcpinfo.csv and summary.json here.
    #[arg(long, short)]
    out: Option<PathBuf>,
}

pub fn run(cmd: LabCommand) -> Result<(), String> {
    match cmd {
        LabCommand::Up { scenario, lab } => up(scenario.as_deref(), &lab),
        LabCommand::Down { id } => down(id.as_deref()),
        LabCommand::List => list(),
        LabCommand::Ping {
            from,
            to,
            lab,
            count,
            interval,
            size,
        } => ping(lab.as_deref(), &from, &to, count, interval, size as usize),
        LabCommand::Traffic(args) => traffic_cmd(&args),
        LabCommand::Run {
            scenario,
            out,
            run,
            lab,
        } => {
            let sc = load(scenario.as_deref(), &run)?;
            let out = out.unwrap_or_else(|| PathBuf::from("out").join(format!("{}-lab", sc.name)));
            let plans = check_lab(&sc, &run)?;
            announce(&sc, &plans)?;
            guard_signals()?;
            let s = run_in_lab(&sc, &run, &lab, &out, &plans)?;
            print_lab_summary(&s);
            println!("\nresults in {}", out.display());
            check_flows(&s)
        }
        LabCommand::Compare {
            scenario,
            out,
            runs,
            run,
            lab,
        } => {
            let sc = load(scenario.as_deref(), &run)?;
            let out =
                out.unwrap_or_else(|| PathBuf::from("out").join(format!("{}-compare", sc.name)));
            compare(sc, &out, &run, &lab, runs as usize)?.1
        }
        LabCommand::Validate {
            dir,
            out,
            runs,
            run,
            lab,
        } => validate(&dir, &out, &run, &lab, runs as usize),
    }
}

fn load(path: Option<&Path>, run: &RunArgs) -> Result<Scenario, String> {
    let mut sc = match path {
        Some(p) => Scenario::load(p).map_err(|e| e.to_string())?,
        None => crate::sim_cmd::geo_without_pep(),
    };
    if let Some(s) = run.seed {
        sc = sc.with_seed(s);
    }
    if let Some(d) = run.duration {
        sc.duration = d;
        // Those compare the sampling with the file's duration, not this one.
        sc.warnings.0.retain(|w| !w.field.starts_with("output."));
    }
    crate::sim_cmd::print_warnings(&sc);
    Ok(sc)
}

/// Largest `--spin-us`: a longer spin would keep an emulator thread
/// busy-polling most of the time at 10 Mbit/s (1.2 ms per full frame),
/// for no gain (timer lateness is tens of microseconds).
const MAX_SPIN_US: u64 = 1_000;

/// Largest socket buffer or window clamp: the kernel takes a signed int.
const MAX_SOCKET_BUFFER: u64 = i32::MAX as u64;

// Value parsers: clap names the flag in their errors ("invalid value 'X'
// for '--flag'"), and a bad value is refused before anything is built.

pub(crate) fn positive_duration(s: &str) -> Result<Duration, String> {
    let d = units::parse_duration(s).map_err(|e| e.to_string())?;
    units::positive_duration(d).map_err(|e| e.to_string())
}

fn positive_bytes(s: &str) -> Result<u64, String> {
    match units::parse_bytes(s).map_err(|e| e.to_string())? {
        0 => Err("the size must be positive".into()),
        b => Ok(b),
    }
}

fn socket_buffer(s: &str) -> Result<u32, String> {
    match positive_bytes(s)? {
        b if b > MAX_SOCKET_BUFFER => Err(format!(
            "too large: at most {MAX_SOCKET_BUFFER} B (the kernel takes a signed int)"
        )),
        b => Ok(b as u32),
    }
}

/// The kernel's bounds on `TCP_MAXSEG` (`TCP_MIN_MSS`, `MAX_TCP_WINDOW`).
fn mss(s: &str) -> Result<u32, String> {
    match units::parse_bytes(s).map_err(|e| e.to_string())? {
        b @ 88..=32_767 => Ok(b as u32),
        _ => Err("TCP_MAXSEG takes 88 to 32767 B".into()),
    }
}

fn lab_id(s: &str) -> Result<String, String> {
    if valid_id(s) {
        Ok(s.to_string())
    } else {
        Err("use 1 to 24 of a-z, 0-9 and '-'".into())
    }
}

/// Refuses a congestion control the kernel does not have before a lab
/// is built (or a simulation run) around it; `what` names where it came
/// from.
fn check_cc(cc: &str, what: &str) -> Result<(), String> {
    traffic::check_congestion_control(cc).map_err(|e| {
        let available = pep_lab::netns::read_sysctl("net/ipv4/tcp_available_congestion_control")
            .unwrap_or_default();
        // ENOENT: the kernel has no such name (EPERM would be a user's).
        let why = match e.kind() {
            std::io::ErrorKind::NotFound => "not a congestion control this kernel has".to_string(),
            _ => e.to_string(),
        };
        format!("{what} {cc:?}: {why} (available: {available})")
    })
}

/// Root first (the kernel lets others choose fewer congestion controls),
/// then every flow's congestion control, before anything is built.
fn preflight(sc: &Scenario, run: &RunArgs) -> Result<(), String> {
    pep_lab::error::require_root().map_err(|e| e.to_string())?;
    if let Some(cc) = &run.cc {
        return check_cc(cc, "--cc");
    }
    for f in &sc.flows {
        check_cc(&linux_cc(f, run), &format!("flow {:?}: cc", f.name))?;
    }
    Ok(())
}

/// The lab topology of a scenario: same nodes, links, rates, delays,
/// queue disciplines (the core's machines), random loss (on every packet,
/// or on data or ACKs only), and the TCP settings Linux keeps per route
/// or per namespace ([`crate::lab_tcp`]). Scripted drops name segments of
/// the simulator's TCP and have no meaning for the kernel's, so they are
/// refused; so are the models the lab does not carry (priority by flow,
/// half-duplex media, host processing cost), rather than silently
/// emulating something else. The agents are the daemon's: see
/// [`crate::lab_pep::plan`].
pub fn topology_from_scenario(sc: &Scenario) -> Result<LabTopology, String> {
    let mut t = topology_shape(sc);
    let sim_only = |what: String| format!("{what} is simulator-only for now (not in the lab yet)");
    for n in &sc.nodes {
        if n.processing.is_some() {
            return Err(sim_only(format!("node {}: a processing cost", n.name)));
        }
    }
    // The queue of a direction: its discipline, its (band) limit, and
    // SAD's flows when SAD runs in front.
    type Q = (Discipline, QueueLimit, Option<u32>);
    let queue = |link: &str, d: &LinkDirSpec| -> Result<Q, String> {
        let (q, sad) = match &d.queue {
            QueueSpec::Sad { inner, max_flows } => match **inner {
                QueueSpec::DropTail { .. } => (&**inner, Some(*max_flows)),
                _ => {
                    return Err(sim_only(format!(
                        "link {link}: a sad queue over anything but DropTail"
                    )))
                }
            },
            q => (q, None),
        };
        let (disc, limit) = match q {
            QueueSpec::DropTail { limit } => (Discipline::DropTail, *limit),
            QueueSpec::Red(r) => (
                Discipline::Red(pep_sim::build::red_params(r, d.rate, d.delay)),
                r.limit,
            ),
            QueueSpec::Priority { classify, limit } => match classify {
                ClassifySpec::AcksFirst => (Discipline::Priority { acks_first: true }, *limit),
                ClassifySpec::DataFirst => (Discipline::Priority { acks_first: false }, *limit),
                // The emulator numbers flows as it sees them, not as the
                // scenario lists them.
                ClassifySpec::Flow { .. } => {
                    return Err(sim_only(format!("link {link}: a priority queue by flow")))
                }
            },
            QueueSpec::TwoClass {
                data_weight,
                ack_weight,
                limit,
            } => (
                Discipline::TwoClass {
                    data_weight: *data_weight,
                    ack_weight: *ack_weight,
                },
                *limit,
            ),
            QueueSpec::Sad { .. } => {
                return Err(format!("link {link}: a sad queue inside a sad queue"))
            }
        };
        Ok((disc, limit, sad))
    };
    let dir = |link: &str, d: &LinkDirSpec| -> Result<DirParams, String> {
        let (discipline, limit, sad_max_flows) = queue(link, d)?;
        let (loss, loss_applies_to) = match &d.loss {
            LossSpec::None => (LossParams::None, KindFilter::All),
            LossSpec::Bernoulli { p, applies_to } => (LossParams::Bernoulli { p: *p }, *applies_to),
            LossSpec::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
                applies_to,
            } => (
                LossParams::GilbertElliott {
                    p: *p,
                    r: *r,
                    loss_good: *loss_good,
                    loss_bad: *loss_bad,
                },
                *applies_to,
            ),
            LossSpec::Drop { .. } => {
                return Err(format!(
                    "link {link}: scripted drops are simulator-only (they name segments of \
                     the simulator's TCP, not the kernel's)"
                ))
            }
        };
        Ok(DirParams {
            rate: d.rate,
            delay: d.delay,
            queue: limit,
            discipline,
            loss,
            loss_applies_to,
            sad_max_flows,
        })
    };
    for (l, lab) in sc.links.iter().zip(&mut t.links) {
        if l.medium != MediumSpec::FullDuplex {
            return Err(sim_only(format!("link {}: a half-duplex medium", l.name)));
        }
        lab.forward = dir(&l.name, &l.forward)?;
        lab.reverse = dir(&l.name, &l.reverse)?;
        // Schedules, traces and the LEO preset run in the emulator as in
        // the simulator: the same core pieces.
        lab.service = [l.forward.service.clone(), l.reverse.service.clone()];
    }
    crate::lab_tcp::apply(sc, &mut t)?;
    t.validate().map_err(|e| e.to_string())?;
    Ok(t)
}

/// A scenario's nodes (names, roles) and links (names, ends) as the lab
/// holds them, in the file's order, whatever else the scenario asks: what
/// the lab's routes are computed from. The links' parameters are
/// placeholders (rate zero, which [`LabTopology::validate`] refuses) until
/// [`topology_from_scenario`] converts them.
pub fn topology_shape(sc: &Scenario) -> LabTopology {
    let mut t = LabTopology::new(&sc.name, sc.seed);
    for n in &sc.nodes {
        t.node(&n.name, n.kind);
    }
    let unset = DirParams::new(Rate(0), Duration::ZERO, 1);
    for l in &sc.links {
        let (a, b) = (&sc.nodes[l.a].name, &sc.nodes[l.b].name);
        let i = t.link(a, b, unset, unset);
        t.links[i].name = l.name.clone();
    }
    t
}

fn lab_options(args: &LabArgs, default_id: &str) -> LabOptions {
    LabOptions {
        id: Some(args.id.clone().unwrap_or_else(|| id_from(default_id))),
        emu: EmuOptions {
            spin: Duration::from_micros(args.spin_us),
            realtime: !args.no_realtime,
            poll_idle: !args.no_poll_idle,
            ..EmuOptions::default()
        },
        ipv6: args.ipv6,
        ..LabOptions::default()
    }
}

fn up(path: Option<&Path>, args: &LabArgs) -> Result<(), String> {
    let sc = match path {
        Some(p) => Scenario::load(p).map_err(|e| e.to_string())?,
        None => crate::sim_cmd::geo_without_pep(),
    };
    crate::sim_cmd::print_warnings(&sc);
    let topo = topology_from_scenario(&sc)?;
    let plans = crate::lab_pep::plan(&sc, &topo)?;
    // Blocked before the emulator threads exist, so they inherit the mask.
    let signals = TerminationSignals::block().map_err(|e| e.to_string())?;
    let mut lab = Lab::up(&topo, &lab_options(args, &sc.name)).map_err(|e| e.to_string())?;
    let dir = state::daemons_dir(lab.id());
    crate::lab_pep::start(&mut lab, &plans, &dir)?;
    print_lab(lab.state());
    if lab.idle_polling() {
        println!("idle CPUs are kept polling while the lab is up (--no-poll-idle: let them halt)");
    }
    println!(
        "\nlab {} is up (pid {}). Ctrl-C here or `pep lab down {}` takes it down.",
        lab.id(),
        std::process::id(),
        lab.id()
    );
    let sig = signals.wait();
    let reports = lab.down().map_err(|e| e.to_string())?;
    println!("\nsignal {sig}: lab down. Link counters:");
    let links: Vec<_> = reports.iter().map(report::link_summary).collect();
    print_links(&links);
    Ok(())
}

fn print_lab(st: &LabState) {
    println!("{:<12} {:<7} {:<28} addresses", "node", "role", "namespace");
    for n in &st.nodes {
        let addrs: Vec<String> = n.addrs.iter().map(Ipv4Addr::to_string).collect();
        let role = format!("{:?}", n.role).to_lowercase();
        println!(
            "{:<12} {:<7} {:<28} {}",
            n.endpoint.node,
            role,
            n.endpoint.netns,
            addrs.join(" ")
        );
    }
    for l in &st.links {
        println!(
            "link {:<20} {} <-> {}  emulator in {}",
            l.name, l.a, l.b, l.netns
        );
    }
}

fn down(id: Option<&str>) -> Result<(), String> {
    let r = state::down(id).map_err(|e| e.to_string())?;
    match id {
        // Nothing at all under that id (a killed lab still has its
        // namespaces or state file, and is cleaned up above).
        Some(id) if r.labs.is_empty() => {
            return Err(format!("no lab {id} (see `pep lab list`)"));
        }
        None if r.labs.is_empty() => println!("no labs"),
        _ => {}
    }
    for pid in &r.stopped {
        println!("stopped lab process {pid}");
    }
    for lab in &r.labs {
        println!("removed lab {lab}");
    }
    println!("deleted {} namespaces", r.namespaces.len());
    Ok(())
}

fn list() -> Result<(), String> {
    let ids = state::all_ids().map_err(|e| e.to_string())?;
    if ids.is_empty() {
        println!("no labs");
    }
    for id in ids {
        let ns = state::namespaces_of(&id).map_err(|e| e.to_string())?;
        match LabState::read(&id).map_err(|e| e.to_string())? {
            Some(st) => {
                let alive = if st.owner_alive() { "running" } else { "dead" };
                println!(
                    "{id}: scenario {}, process {} ({alive}), {} nodes, {} links, {} namespaces",
                    st.scenario,
                    st.pid,
                    st.nodes.len(),
                    st.links.len(),
                    ns.len()
                );
            }
            None => println!("{id}: no state file, {} namespaces left", ns.len()),
        }
    }
    Ok(())
}

/// The running lab `id`, or the only running one.
fn running_lab(id: Option<&str>) -> Result<LabState, String> {
    let st = match id {
        Some(id) => LabState::read(id)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("no lab {id} (see `pep lab list`)"))?,
        None => {
            let mut live: Vec<LabState> = LabState::list()
                .into_iter()
                .filter(LabState::owner_alive)
                .collect();
            match live.len() {
                1 => live.remove(0),
                0 => return Err("no running lab: start one with `pep lab up`".into()),
                _ => return Err("several labs are running: choose one with --lab".into()),
            }
        }
    };
    if !st.owner_alive() {
        return Err(format!(
            "lab {}'s process is gone, so its links are not emulated: `pep lab down {}`, then \
             `pep lab up` again",
            st.id, st.id
        ));
    }
    Ok(st)
}

fn endpoint(st: &LabState, node: &str) -> Result<Endpoint, String> {
    st.endpoint(node)
        .cloned()
        .ok_or_else(|| format!("lab {} has no node {node:?}", st.id))
}

fn ping(
    lab: Option<&str>,
    from: &str,
    to: &str,
    count: u32,
    interval: Duration,
    size: usize,
) -> Result<(), String> {
    let st = running_lab(lab)?;
    let src = endpoint(&st, from)?;
    let dst = match to.parse::<Ipv4Addr>() {
        Ok(a) => a,
        Err(_) => endpoint(&st, to)?.addr,
    };
    let timeout = Duration::from_secs(3);
    let r = pep_lab::probe::ping(&src, dst, count, interval, size, timeout)
        .map_err(|e| e.to_string())?;
    let ms = |d: Duration| d.as_millis_f64();
    println!(
        "{from} -> {to} ({dst}): {}/{} replies, rtt min/median/mean/max = {:.3}/{:.3}/{:.3}/{:.3} ms",
        r.received(),
        r.sent,
        ms(r.min()),
        ms(r.median()),
        ms(r.mean()),
        ms(r.max())
    );
    Ok(())
}

fn traffic_cmd(a: &TrafficArgs) -> Result<(), String> {
    let st = running_lab(a.lab.as_deref())?;
    check_cc(&a.cc, "--cc")?;
    let amount = match (a.bytes, a.duration) {
        (Some(b), _) => Amount::Bytes(b),
        (None, Some(d)) => Amount::For(d),
        (None, None) => Amount::For(Duration::from_secs(10)),
    };
    let mut f = FlowSpec::new(
        "flow",
        endpoint(&st, &a.from)?,
        endpoint(&st, &a.to)?,
        amount,
    );
    f.name = format!("{}-{}", a.from, a.to);
    f.cc = a.cc.clone();
    f.seed = a.seed;
    f.port = a.port;
    f.rcvbuf = a.rcvbuf;
    f.window_clamp = a.window_clamp;
    f.mss = a.mss;
    let interval = a.interval;
    let limit = match amount {
        Amount::For(d) => d,
        Amount::Bytes(_) => Duration::from_secs(600),
    };
    let opts = TrafficOptions {
        interval,
        sample: interval,
        deadline: limit + Duration::from_secs(60),
    };
    let r = traffic::run(&[f], &opts).map_err(|e| e.to_string())?;
    let s = report::summary(&st.scenario, a.seed, &r, &[]);
    print_flows(&s.flows);
    if let Some(out) = &a.out {
        write(out, &r, &s)?;
        println!("\nresults in {}", out.display());
    }
    check_flows(&s)
}

/// The scenario's flows as lab transfers, ports 5001 and up.
fn flows_from_scenario(sc: &Scenario, lab: &Lab, run: &RunArgs) -> Result<Vec<FlowSpec>, String> {
    let mut out = vec![];
    for (i, f) in sc.flows.iter().enumerate() {
        let ep = |n: usize| lab.endpoint(&sc.nodes[n].name).map_err(|e| e.to_string());
        let amount = match f.source {
            SourceSpec::Bulk => Amount::For(sc.duration.saturating_sub(f.start)),
            SourceSpec::Finite { bytes } => Amount::Bytes(bytes),
            SourceSpec::Pareto(_) => {
                return Err(format!(
                    "flow \"{}\": the lab has no Pareto on/off traffic generator yet; \
                     use a bulk or finite source",
                    f.name
                ))
            }
        };
        let mut spec = FlowSpec::new(&f.name, ep(f.src)?, ep(f.dst)?, amount);
        spec.cc = linux_cc(f, run);
        spec.start = f.start;
        spec.seed = sc.seed.wrapping_add(i as u64);
        spec.port = 5001 + i as u16;
        spec.mss = Some(f.tcp.mss);
        spec.window_clamp = Some(f.sink.rwnd);
        out.push(spec);
    }
    Ok(out)
}

/// The Linux congestion control of a scenario's flow: `--cc`, or the
/// flow's own.
fn linux_cc(f: &SimFlow, run: &RunArgs) -> String {
    match &run.cc {
        Some(cc) => cc.clone(),
        // Linux's "reno" is NewReno-style recovery (RFC 6582) with SACK.
        None => crate::lab_pep::linux_cc_name(&format!("{:?}", f.tcp.cc).to_lowercase()),
    }
}

/// Everything about a scenario the lab checks before it builds anything:
/// its network, its agents as daemons, root and the congestion controls.
fn check_lab(sc: &Scenario, run: &RunArgs) -> Result<Vec<crate::lab_pep::DaemonPlan>, String> {
    if sc.flows.len() > 1000 {
        return Err(format!(
            "{} flows: the lab runs at most 1000",
            sc.flows.len()
        ));
    }
    let topo = topology_from_scenario(sc)?;
    let plans = crate::lab_pep::plan(sc, &topo)?;
    preflight(sc, run)?;
    Ok(plans)
}

/// Says, once per scenario however many runs follow, what the lab changes
/// to run `sc` (the daemons' notes) and whether this build is too slow
/// for its links.
fn announce(sc: &Scenario, plans: &[crate::lab_pep::DaemonPlan]) -> Result<(), String> {
    if let Some(w) = unoptimised_warning(&topology_from_scenario(sc)?, cfg!(debug_assertions)) {
        eprintln!("{w}");
    }
    for p in plans {
        for n in &p.notes {
            eprintln!("{}: {n}", p.what);
        }
    }
    Ok(())
}

/// The lab this process is running now, for [`guard_signals`].
static CURRENT_LAB: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// SIGINT, SIGTERM or SIGHUP takes the running lab down (its daemons,
/// rules and namespaces) and ends the process: a killed `pep lab run`
/// leaves nothing. (SIGKILL cannot be caught: the daemons then stop by
/// their death signal, and the next lab reaps the namespaces.) Once per
/// process, before any thread starts.
fn guard_signals() -> Result<(), String> {
    static GUARD: std::sync::Once = std::sync::Once::new();
    let mut result = Ok(());
    GUARD.call_once(|| match TerminationSignals::block() {
        Ok(signals) => {
            std::thread::spawn(move || {
                let sig = signals.wait();
                let id = CURRENT_LAB.lock().ok().and_then(|l| l.clone());
                if let Some(id) = id {
                    eprintln!("signal {sig}: taking lab {id} down");
                    if let Err(e) = state::down(Some(&id)) {
                        eprintln!("taking lab {id} down: {e}");
                    }
                }
                std::process::exit(128 + sig);
            });
        }
        Err(e) => result = Err(e.to_string()),
    });
    result
}

/// Above this rate an unoptimised `pep`'s own receiver, which checks every
/// byte, cannot keep up (61 Mbit/s measured on the 2-core VM at load 7,
/// docs/study-leo.md): the lab would measure the binary, not the path.
const UNOPTIMISED_MAX: Rate = Rate::mbps(30);

/// The warning for a lab run by a build without optimisation (`debug`) on a
/// topology with a link faster than [`UNOPTIMISED_MAX`].
fn unoptimised_warning(topo: &LabTopology, debug: bool) -> Option<String> {
    let fastest = topo
        .links
        .iter()
        .flat_map(|l| [l.forward.rate, l.reverse.rate])
        .max()?;
    (debug && fastest > UNOPTIMISED_MAX).then(|| {
        format!(
            "warning: this pep is an unoptimised build and a link runs at {:.1} Mbit/s: its \
             receiver checks bytes at about 60 Mbit/s, so goodput may be the binary's, not the \
             path's (build with `cargo build --release`)",
            fastest.as_mbps_f64()
        )
    })
}

/// Builds the lab, starts the daemons of `plans` (none: the run without
/// the PEP), runs the flows, takes it down and writes the results to `out`.
fn run_in_lab(
    sc: &Scenario,
    run: &RunArgs,
    args: &LabArgs,
    out: &Path,
    plans: &[crate::lab_pep::DaemonPlan],
) -> Result<report::Summary, String> {
    let topo = topology_from_scenario(sc)?;
    let mut opts = lab_options(args, &sc.name);
    // Schedules, traces and LEO presets start with the flows, as in the
    // simulator, not when the lab comes up.
    opts.services_from_run = true;
    if let Ok(mut l) = CURRENT_LAB.lock() {
        l.clone_from(&opts.id);
    }
    let mut lab = Lab::up(&topo, &opts).map_err(|e| e.to_string())?;
    crate::lab_pep::start(&mut lab, plans, &out.join("daemons"))?;
    let flows = flows_from_scenario(sc, &lab, run)?;
    let opts = TrafficOptions {
        interval: sc.output.interval,
        sample: sc.output.sample,
        deadline: sc.duration + Duration::from_secs(120),
    };
    eprintln!(
        "lab {}: running {} flow(s) for up to {} of real time{}",
        lab.id(),
        flows.len(),
        sc.duration,
        if plans.is_empty() {
            ""
        } else {
            ", through the PEP"
        }
    );
    let zero = lab.start_services();
    let r = traffic::run_from(&flows, &opts, zero).map_err(|e| e.to_string())?;
    let stopped = lab.stop_processes(std::time::Duration::from_secs(5));
    let links = lab.down().map_err(|e| e.to_string())?;
    let s = report::summary(&sc.name, sc.seed, &r, &links);
    write(out, &r, &s)?;
    if !stopped.is_empty() {
        return Err(format!(
            "the PEP misbehaved: {} (logs in {})",
            stopped.join("; "),
            out.join("daemons").display()
        ));
    }
    Ok(s)
}

/// `rx_goodput`: the flow's goodput as the lab measures it (see
/// [`SimRun`]).
fn sim_sample(f: &pep_sim::output::FlowSummary, rx_goodput: f64) -> Sample {
    Sample {
        goodput_mbps: rx_goodput,
        retransmitted: f.retransmitted_segments as f64,
        rtt_ms: f.srtt_ms.unwrap_or(f64::NAN),
    }
}

fn lab_sample(f: &report::FlowSummary) -> Sample {
    Sample {
        goodput_mbps: f.goodput_mbps,
        retransmitted: f.retransmitted_segments as f64,
        rtt_ms: f.mean_srtt_ms.unwrap_or(f64::NAN),
    }
}

/// `pep reproduce leo --lab`'s run of one configuration for `duration`
/// (the file's when `None`): `sim` in the simulator (as [`compare`] runs
/// it: Linux's TCP) and `lab`, if given, once in the lab, its agents as
/// the daemon (as `compare` runs them); the outputs under `out/sim` and
/// `out/lab`. The two differ only where the study says why
/// (`reproduce_lab`).
pub(crate) fn sim_and_lab(
    mut sim: Scenario,
    lab: Option<Scenario>,
    duration: Option<Duration>,
    out: &Path,
) -> Result<(SimRun, Option<report::Summary>), String> {
    let run = RunArgs {
        seed: None,
        cc: None,
        duration,
    };
    let args = LabArgs {
        id: None,
        spin_us: 0,
        no_realtime: false,
        no_poll_idle: false,
        ipv6: false,
    };
    if let Some(d) = duration {
        sim.duration = d;
    }
    let lab = lab.map(|mut lab| {
        lab.duration = sim.duration;
        lab
    });
    let plans = match &lab {
        Some(lab) => {
            let plans = check_lab(lab, &run)?;
            announce(lab, &plans)?;
            guard_signals()?;
            plans
        }
        None => vec![],
    };
    let (sim_sc, _) = crate::lab_like::as_linux_runs_it(&sim);
    let sim = simulate(&sim_sc, &out.join("sim"))?;
    let Some(lab) = lab else {
        return Ok((sim, None));
    };
    let lab = run_in_lab(&lab, &run, &args, &out.join("lab"), &plans)?;
    check_flows(&lab)?;
    Ok((sim, Some(lab)))
}

/// A simulation's summary, and each flow's goodput measured as the lab
/// measures it: bytes the receiver had in order over the time from the
/// flow's start to its last byte (the summary's runs to the sender's last
/// ACK, which a splitting PEP's sender leg gets long before the receiver
/// has the bytes: geo-split-pair's 4.98 s against the receiver's 6.44 s).
pub(crate) struct SimRun {
    pub(crate) summary: pep_sim::output::Summary,
    pub(crate) rx_goodput_mbps: Vec<f64>,
}

/// `sc` without its PEP: no agents, and each Smart ACK Dropper queue
/// replaced by the queue it fronts (SAD is a queue kind, not an agent, but
/// it is the mechanism whose gain `compare` measures).
fn without_pep(sc: &Scenario) -> Scenario {
    let mut bare = sc.clone();
    bare.agents.clear();
    for l in &mut bare.links {
        for d in [&mut l.forward, &mut l.reverse] {
            if let QueueSpec::Sad { inner, .. } = &d.queue {
                d.queue = (**inner).clone();
            }
        }
    }
    bare
}

/// Runs the simulation of `sc`, writes it to `dir`, returns its summary.
fn simulate(sc: &Scenario, dir: &Path) -> Result<SimRun, String> {
    let mut sim = pep_sim::Simulation::new(sc);
    sim.run();
    sim.write_outputs(dir)
        .map_err(|e| format!("writing {}: {e}", dir.display()))?;
    let summary = sim.summary();
    let rx_goodput_mbps = summary
        .flows
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let start = sim.flow_start(i);
            match sim.sink(i).last_delivery() {
                Some(t) if f.delivered_bytes > 0 => {
                    pep_sim::output::mbps(f.delivered_bytes, t.saturating_since(start))
                }
                _ => f.goodput_mbps,
            }
        })
        .collect();
    Ok(SimRun {
        summary,
        rx_goodput_mbps,
    })
}

/// Runs `sc` in the simulator and the lab (each without and with its
/// PEP), prints and writes the table into `out`; returns the table and
/// whether every lab flow was byte-exact.
fn compare(
    mut sc: Scenario,
    out: &Path,
    run: &RunArgs,
    args: &LabArgs,
    runs: usize,
) -> Result<(Vec<FlowComparison>, Result<(), String>), String> {
    // The charts set the two sides' goodput and cwnd side by side: the
    // simulator writes them even when the scenario's `series` leaves them
    // out.
    for s in [Series::Goodput, Series::Cwnd] {
        if !sc.output.series.contains(&s) {
            sc.output.series.push(s);
        }
    }
    // Before the simulation, which may take a while, not after it.
    let plans = check_lab(&sc, run)?;
    announce(&sc, &plans)?;
    guard_signals()?;
    let bare = without_pep(&sc);
    let pep = bare != sc;
    // The simulator runs the TCP the lab's kernel runs.
    let (sim_sc, notes) = crate::lab_like::as_linux_runs_it(&sc);
    if !notes.is_empty() {
        println!(
            "like with like: the simulator runs Linux's TCP (the `linux` profile), where the \
             scenario says otherwise:"
        );
        for n in &notes {
            println!("  {n}");
        }
        println!();
    }
    let sim_bare_sc = without_pep(&sim_sc);
    let run_dir = |base: &str, k: usize| {
        out.join(if k == 0 {
            base.to_string()
        } else {
            format!("{base}-run{}", k + 1)
        })
    };
    // As many simulator seeds as lab runs (the scenario's seed, then the
    // next ones): a random-loss path's goodput spreads by seed as the lab's
    // does by run, and one seed against a mean of runs would test the seed.
    let (mut sim_with, mut sim_without) = (vec![], vec![]);
    for k in 0..runs {
        let seed = sim_sc.seed.wrapping_add(k as u64);
        sim_with.push(simulate(
            &sim_sc.clone().with_seed(seed),
            &run_dir("sim", k),
        )?);
        if pep {
            let bare = sim_bare_sc.clone().with_seed(seed);
            sim_without.push(simulate(&bare, &run_dir("sim-nopep", k))?);
        }
    }
    let sim_s = &sim_with[0];
    let (mut with_runs, mut without) = (vec![], vec![]);
    for k in 0..runs {
        if pep {
            without.push(run_in_lab(&bare, run, args, &run_dir("lab-nopep", k), &[])?);
        }
        with_runs.push(run_in_lab(&sc, run, args, &run_dir("lab", k), &plans)?);
    }
    let table: Vec<FlowComparison> = sim_s
        .summary
        .flows
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let lab = |v: &[report::Summary]| -> Vec<Sample> {
                v.iter().map(|r| lab_sample(&r.flows[i])).collect()
            };
            let sim = |v: &[SimRun]| -> Vec<Sample> {
                v.iter()
                    .map(|r| sim_sample(&r.summary.flows[i], r.rx_goodput_mbps[i]))
                    .collect()
            };
            if pep {
                FlowComparison::new(
                    &s.name,
                    &sim(&sim_without),
                    &sim(&sim_with),
                    &lab(&without),
                    &lab(&with_runs),
                )
            } else {
                // Without agents the one world is "without the PEP".
                FlowComparison::new(&s.name, &sim(&sim_with), &[], &lab(&with_runs), &[])
            }
        })
        .collect();
    print!("{}", crate::lab_compare::render(&table));
    println!("(RTT: the simulator's final smoothed RTT; the lab's mean tcpi_rtt)");
    let json = serde_json::to_string_pretty(&table).expect("plain data serializes") + "\n";
    let html = crate::lab_compare::render_html(&format!("{}: simulator and lab", sc.name), &table);
    for (name, body) in [("compare.json", json), ("compare.html", html)] {
        std::fs::write(out.join(name), body)
            .map_err(|e| format!("writing {}: {e}", out.join(name).display()))?;
    }
    let mut flows = Ok(());
    for s in with_runs.iter().chain(&without) {
        for f in &s.flows {
            if let Some(e) = &f.error {
                println!("lab flow {}: error: {e}", f.name);
            }
        }
        flows = flows.and(check_flows(s));
    }
    match compare_plot(out) {
        Ok(plots) => println!(
            "\nresults in {} (sim/, lab/, compare.json, compare.html, {})",
            out.display(),
            plots.join(", ")
        ),
        // Failed lab flows leave little or nothing to plot: their failure
        // is the error, not the chart's.
        Err(e) if flows.is_err() => {
            println!("\nresults in {} (sim/, lab/; no chart: {e})", out.display())
        }
        Err(e) => return Err(e),
    }
    Ok((table, flows))
}

/// `pep reproduce sim-vs-lab`: [`validate`] with the lab's defaults on
/// `<scenarios>/validation` (default `scenarios/validation`).
pub fn sim_vs_lab(scenarios: Option<&Path>, out: &Path, runs: usize) -> Result<(), String> {
    let dir = scenarios.map_or_else(
        || PathBuf::from("scenarios/validation"),
        |s| s.join("validation"),
    );
    let run = RunArgs {
        seed: None,
        cc: None,
        duration: None,
    };
    let lab = LabArgs {
        id: None,
        spin_us: 0,
        no_realtime: false,
        no_poll_idle: false,
        ipv6: false,
    };
    validate(&dir, out, &run, &lab, runs)
}

/// `pep lab validate` (also `pep reproduce sim-vs-lab`): every scenario of
/// `dir` through [`compare`], and a verdict per flow against the issue's
/// tolerances.
fn validate(
    dir: &Path,
    out: &Path,
    run: &RunArgs,
    args: &LabArgs,
    runs: usize,
) -> Result<(), String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("{}: no scenario (*.toml)", dir.display()));
    }
    // Every file is read (and refused, naming what) before any lab runs.
    let mut scenarios = vec![];
    for f in &files {
        let sc = load(Some(f), run)?;
        check_lab(&sc, run).map_err(|e| format!("{}: {e}", f.display()))?;
        scenarios.push(sc);
    }
    let t0 = std::time::Instant::now();
    let mut rows = vec![];
    let mut failed = vec![];
    for sc in scenarios {
        let name = sc.name.clone();
        let lossy = sc.links.iter().any(|l| {
            [&l.forward, &l.reverse]
                .iter()
                .any(|d| !matches!(d.loss, LossSpec::None))
        });
        let (table, flows) = compare(sc, &out.join(&name), run, args, runs)?;
        if let Err(e) = flows {
            failed.push(format!("{name}: {e}"));
        }
        rows.extend(crate::lab_compare::verdicts(&name, &table, lossy));
    }
    let report = crate::lab_compare::validation_report(&rows, runs, t0.elapsed().as_secs_f64());
    println!("\n{report}");
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let path = out.join("validation.md");
    std::fs::write(&path, &report).map_err(|e| format!("{}: {e}", path.display()))?;
    println!("report in {}", path.display());
    let misses = rows.iter().filter(|r| !r.pass).count();
    failed.extend((misses > 0).then(|| format!("{misses} claim(s) missed their tolerance")));
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("; "))
    }
}

/// Goodput and cwnd over time of every flow, simulator and lab on one
/// chart each (`compare-goodput.*`, `compare-cwnd.*`).
fn compare_plot(out: &Path) -> Result<Vec<String>, String> {
    let mut files = Vec::new();
    for (what, file, column, y) in [
        ("goodput", "goodput.csv", "goodput_mbps", "goodput (Mbit/s)"),
        ("cwnd", "cwnd.csv", "cwnd_bytes", "cwnd (bytes)"),
    ] {
        let mut series = Vec::new();
        for side in ["sim", "lab"] {
            let table =
                pep_plot::tidy::load(out.join(side).join(file)).map_err(|e| e.to_string())?;
            for mut s in table
                .series_by("flow", "time_s", column)
                .map_err(|e| e.to_string())?
            {
                s.name = format!("{side} {}", s.name);
                series.push(s);
            }
        }
        let chart = pep_plot::Chart::lines(series)
            .title(format!("{what}: simulator vs lab"))
            .x_label("time (s)")
            .y_label(y);
        for ext in ["svg", "png"] {
            let name = format!("compare-{what}.{ext}");
            pep_plot::render(&chart, out.join(&name)).map_err(|e| e.to_string())?;
            files.push(name);
        }
    }
    Ok(files)
}

fn write(out: &Path, r: &TrafficReport, s: &report::Summary) -> Result<(), String> {
    report::write_outputs(out, r, s)
        .map(drop)
        .map_err(|e| format!("writing results to {}: {e}", out.display()))
}

fn print_lab_summary(s: &report::Summary) {
    print_flows(&s.flows);
    println!();
    print_links(&s.links);
}

fn print_flows(flows: &[report::FlowSummary]) {
    println!(
        "{:<16} {:<6} {:>12} {:>10} {:>8} {:>9} {:>6}",
        "flow", "cc", "bytes", "Mbit/s", "retx", "srtt ms", "exact"
    );
    for f in flows {
        println!(
            "{:<16} {:<6} {:>12} {:>10.3} {:>8} {:>9.1} {:>6}",
            f.name,
            f.cc,
            f.delivered_bytes,
            f.goodput_mbps,
            f.retransmitted_segments,
            f.mean_srtt_ms.unwrap_or(0.0),
            if f.byte_exact { "yes" } else { "NO" }
        );
        if let Some(e) = &f.error {
            println!("  error: {e}");
        }
    }
}

fn print_links(links: &[report::LinkSummary]) {
    println!(
        "{:<20} {:>10} {:>8} {:>8} {:>8} {:>10} {:>10}",
        "link", "packets", "util", "q-drops", "lost", "late p99", "late max"
    );
    for l in links {
        println!(
            "{:<20} {:>10} {:>8.3} {:>8} {:>8} {:>8.0}us {:>8.0}us",
            l.name,
            l.tx_packets,
            l.utilisation,
            l.queue_drops,
            l.lost_packets,
            l.timer_late_p99_us,
            l.timer_late_max_us
        );
    }
}

/// An error unless every flow arrived byte-exact; it names each flow
/// that did not, with its error if it had one.
fn check_flows(s: &report::Summary) -> Result<(), String> {
    let bad: Vec<String> = s
        .flows
        .iter()
        .filter(|f| !f.byte_exact)
        .map(|f| match &f.error {
            Some(e) => format!("{} ({e})", f.name),
            None => f.name.clone(),
        })
        .collect();
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!("not byte-exact: {}", bad.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(link_extra: &str, node_extra: &str) -> Scenario {
        let text = format!(
            "[scenario]\nname = \"t\"\nduration = \"1s\"\n[[node]]\nname = \"a\"\n{node_extra}\n\
             [[node]]\nname = \"b\"\n[[link]]\nbetween = [\"a\", \"b\"]\nrate = \"10Mbps\"\n\
             delay = \"1ms\"\n{link_extra}\n[[flow]]\nname = \"f\"\nfrom = \"a\"\nto = \"b\"\n"
        );
        Scenario::from_toml_str(&text, "t.toml").unwrap()
    }

    #[test]
    fn every_validation_scenario_maps_onto_the_lab_and_has_a_pep_or_a_claim() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/validation");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_none_or(|x| x != "toml") {
                continue;
            }
            let sc = Scenario::load(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let topo =
                topology_from_scenario(&sc).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            crate::lab_pep::plan(&sc, &topo).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            n += 1;
        }
        // One per mechanism (watermark fixed and adaptive, SAD, SAD with
        // ACK regeneration, ACK thinning, split, split-pair twice), BBR
        // twice and a rate step.
        assert!(n >= 11, "{n} validation scenarios");
    }

    #[test]
    fn without_the_pep_a_sad_queue_is_the_queue_it_fronts() {
        let plain = scenario("", "");
        assert_eq!(without_pep(&plain), plain, "no PEP: one world");
        let sad = scenario(
            "[link.reverse]\nrate = \"64kbps\"\nqueue = { kind = \"sad\", limit = 7 }",
            "",
        );
        let bare = without_pep(&sad);
        assert_ne!(bare, sad, "SAD is the PEP compare measures");
        match &bare.links[0].reverse.queue {
            QueueSpec::DropTail { limit } => assert_eq!(*limit, QueueLimit::Packets(7)),
            q => panic!("expected the DropTail SAD fronted, got {q:?}"),
        }
        assert_eq!(bare.links[0].forward, sad.links[0].forward);
    }

    #[test]
    fn an_unoptimised_build_warns_only_above_what_its_receiver_carries() {
        let slow = topology_from_scenario(&scenario("", "")).unwrap(); // 10 Mbit/s
        let mut fast = slow.clone();
        fast.links[0].reverse.rate = Rate::mbps(100);
        assert!(unoptimised_warning(&slow, true).is_none());
        assert!(unoptimised_warning(&fast, false).is_none());
        let w = unoptimised_warning(&fast, true).unwrap();
        assert!(w.contains("100.0 Mbit/s") && w.contains("--release"), "{w}");
    }

    #[test]
    fn simulator_only_network_models_are_refused_by_name() {
        assert!(topology_from_scenario(&scenario("", "")).is_ok());
        let bernoulli = "loss = { kind = \"bernoulli\", p = 0.01 }";
        assert!(topology_from_scenario(&scenario(bernoulli, "")).is_ok());
        // Gilbert-Elliott is the core's model: the lab runs it as it is.
        let ge = "loss = { kind = \"gilbert-elliott\", p = 0.1, r = 0.5 }";
        let t = topology_from_scenario(&scenario(ge, "")).unwrap();
        assert!(matches!(
            t.links[0].forward.loss,
            LossParams::GilbertElliott { p, r, .. } if p == 0.1 && r == 0.5
        ));
        // The core's queues and per-kind loss: carried as they are.
        let red = "queue = { kind = \"red\", auto = true }";
        let t = topology_from_scenario(&scenario(red, "")).unwrap();
        assert!(matches!(t.links[0].forward.discipline, Discipline::Red(p) if p.min_th >= 5.0));
        let two = "queue = { kind = \"two-class\", data_share = 0.5 }";
        let t = topology_from_scenario(&scenario(two, "")).unwrap();
        assert!(matches!(
            t.links[0].reverse.discipline,
            Discipline::TwoClass { data_weight, ack_weight } if data_weight == ack_weight
        ));
        let prio = "queue = { kind = \"priority\", classify = \"acks-first\", limit = 7 }";
        let t = topology_from_scenario(&scenario(prio, "")).unwrap();
        assert_eq!(
            t.links[0].forward.discipline,
            Discipline::Priority { acks_first: true }
        );
        assert_eq!(t.links[0].forward.queue, QueueLimit::Packets(7));
        let acks = "loss = { kind = \"bernoulli\", p = 0.1, applies_to = \"acks\" }";
        let t = topology_from_scenario(&scenario(acks, "")).unwrap();
        assert_eq!(t.links[0].forward.loss_applies_to, KindFilter::Acks);
        let data = "loss = { kind = \"gilbert-elliott\", p = 0.1, r = 0.5, applies_to = \"data\" }";
        let t = topology_from_scenario(&scenario(data, "")).unwrap();
        assert_eq!(t.links[0].forward.loss_applies_to, KindFilter::Data);
        for (link, node, says) in [
            (
                "queue = { kind = \"priority\", classify = \"flow\", flows = { f = 0 } }",
                "",
                "a priority queue by flow",
            ),
            ("medium = \"half-duplex\"", "", "half-duplex"),
            ("", "processing = { data = \"1ms\" }", "processing cost"),
        ] {
            let e = topology_from_scenario(&scenario(link, node)).unwrap_err();
            assert!(e.contains(says) && e.contains("simulator-only"), "{e}");
        }
    }

    /// Shikama's split PEP maps onto the relay at n1, its `rwnd` onto the
    /// client leg's receive buffer.
    #[test]
    fn a_scenario_with_an_agent_runs_the_daemon() {
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/shikama/pep.toml"),
        )
        .unwrap();
        let sc = Scenario::from_toml_str(&text, "pep.toml").unwrap();
        let t = topology_from_scenario(&sc).unwrap();
        let plans = crate::lab_pep::plan(&sc, &t).unwrap();
        assert_eq!(plans.len(), 1);
        assert_eq!(plans[0].node, "n1");
        assert!(
            plans[0].config.contains("rcvbuf = \"128000\""),
            "{}",
            plans[0].config
        );
    }

    #[test]
    fn sad_over_droptail_runs_in_the_lab() {
        let sad = "queue = { kind = \"sad\", limit = 30, max_flows = 8 }";
        let t = topology_from_scenario(&scenario(sad, "")).unwrap();
        let d = t.links[0].reverse;
        assert_eq!(d.sad_max_flows, Some(8));
        assert_eq!(d.queue, pep_core::queue::QueueLimit::Packets(30));
        assert_eq!(t.links[0].forward.sad_max_flows, Some(8));
        let plain = topology_from_scenario(&scenario("", "")).unwrap();
        assert_eq!(plain.links[0].reverse.sad_max_flows, None);
        let two = "queue = { kind = \"sad\", data_share = 0.5 }";
        let e = topology_from_scenario(&scenario(two, "")).unwrap_err();
        assert!(e.contains("sad queue over anything but DropTail"), "{e}");
    }

    /// The simulator's routes (`Scenario::routes`, from validation) and
    /// the lab's (`LabTopology::routes`, from the lab's nodes and links as
    /// the CLI converts them) run every flow, both ways, through the same
    /// nodes in every shipped scenario, including those the lab refuses to
    /// run (agents, other queues): the route computation is compared, not
    /// whether the lab can build the rest.
    fn assert_same_routes(sc: &Scenario, origin: &str) -> usize {
        let lab = topology_shape(sc).routes();
        let mut routes = 0;
        for f in &sc.flows {
            for (from, to) in [(f.src, f.dst), (f.dst, f.src)] {
                let sim = sc.routes.nodes(from, to);
                assert!(sim.is_some(), "{origin}: flow {}: no route", f.name);
                assert_eq!(
                    sim,
                    lab.nodes(from, to),
                    "{origin}: flow {} from {} to {}",
                    f.name,
                    sc.nodes[from].name,
                    sc.nodes[to].name
                );
                assert_eq!(sc.route_nodes(from, to), sim.unwrap());
                routes += 1;
            }
        }
        routes
    }

    /// No shipped scenario offers two equally short paths or a host on a
    /// shorter one, so this one does: the lab must break the tie by the
    /// same link order and bypass the same host.
    #[test]
    fn simulator_and_lab_break_ties_and_bypass_hosts_alike() {
        let mut text = String::from("[scenario]\nname = \"t\"\nduration = \"1s\"\n");
        for (n, kind) in [
            ("s", "host"),
            ("h", "host"),
            ("r1", "router"),
            ("r2", "router"),
        ] {
            text += &format!("[[node]]\nname = \"{n}\"\nkind = \"{kind}\"\n");
        }
        text += "[[node]]\nname = \"d\"\n";
        for (a, b) in [
            ("s", "h"),
            ("h", "d"),
            ("s", "r2"),
            ("r2", "d"),
            ("s", "r1"),
            ("r1", "d"),
        ] {
            text += &format!(
                "[[link]]\nbetween = [\"{a}\", \"{b}\"]\nrate = \"10Mbps\"\ndelay = \"1ms\"\n"
            );
        }
        text += "[[flow]]\nname = \"f\"\nfrom = \"s\"\nto = \"d\"\n";
        let sc = Scenario::from_toml_str(&text, "t.toml").unwrap();
        let (s, r2, d) = (0, 3, 4);
        assert_eq!(sc.route_nodes(s, d), vec![s, r2, d]);
        assert_eq!(assert_same_routes(&sc, "t.toml"), 2);
    }

    #[test]
    fn simulator_and_lab_route_every_shipped_scenario_alike() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
        let (mut scenarios, mut routes) = (0, 0);
        let mut dirs = vec![root];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    dirs.push(p);
                    continue;
                }
                if p.extension().is_none_or(|x| x != "toml") {
                    continue;
                }
                let text = std::fs::read_to_string(&p).unwrap();
                // Experiments (sweeps over a base scenario) are not scenarios.
                if text.lines().any(|l| l.trim() == "[experiment]") {
                    continue;
                }
                let sc = Scenario::from_toml_str(&text, &p.display().to_string())
                    .unwrap_or_else(|e| panic!("{e}"));
                routes += assert_same_routes(&sc, &p.display().to_string());
                scenarios += 1;
            }
        }
        // 25 scenarios when this was written; experiments are most files.
        assert!(
            scenarios >= 20 && routes >= 100,
            "{scenarios} scenarios, {routes} routes"
        );
    }
}
