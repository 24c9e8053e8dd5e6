//! The table `pep sim run` prints: flows, links and, where a scenario runs
//! the same download with and without a PEP, the PEP's gain. Every number
//! says what it is measured over, every cut says what it hides, and a
//! goodput above a link's rate says why. The text is a pure function of
//! the run (wall time is printed apart), so it can be compared exactly.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::path::Path;

use pep_core::{Duration, Rate};
use pep_sim::metrics::GoodputRow;
use pep_sim::output::{FlowStats, FlowSummary, Summary};
use pep_sim::scenario::{AgentSpec, SourceSpec};
use pep_sim::Scenario;

/// Rows a table shows before it is cut (unless `--all`).
pub const ROWS: usize = 20;

/// What the table is made of, beside the summary.
pub struct RunView<'a> {
    pub scenario: &'a Scenario,
    pub summary: &'a Summary,
    /// The goodput series (empty when not recorded) and its bin width.
    pub goodput: &'a [GoodputRow],
    pub bin: Duration,
    /// Where the run's files are, for the notes that point at them.
    pub out: &'a Path,
    /// The file there with every flow's entry: `summary.json`, or above
    /// the per-flow limit `flows.csv` (`flows.parquet`).
    pub every_flow: &'a str,
    /// And with every link direction's: `summary.json`, or above
    /// `pep_sim::spread::LINK_LIMIT` of them `link_totals.csv`.
    pub every_link: &'a str,
    /// Every row, uncut.
    pub all: bool,
}

/// `1 packet`, `2 packets`.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Seconds with at most two decimals, trailing zeros dropped: `60`, `8.99`.
fn secs(x: f64) -> String {
    let s = format!("{x:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-" {
        "0".into()
    } else {
        s.into()
    }
}

fn rate_text(r: Rate) -> String {
    format!("{} Mbit/s", secs(r.as_mbps_f64()))
}

/// `10 MB`, `1.5 kB`, `999 B` (SI, as scenario files write sizes).
fn bytes_text(n: u64) -> String {
    let (v, unit) = match n {
        n if n >= 1_000_000 => (n as f64 / 1e6, "MB"),
        n if n >= 1_000 => (n as f64 / 1e3, "kB"),
        n => return format!("{n} B"),
    };
    format!("{} {unit}", secs(v))
}

/// A flow's path as the simulator routes it, and what lies on it.
struct FlowPath<'a> {
    /// The slowest link direction its data crosses.
    bottleneck: Option<Rate>,
    /// The agent that terminates the flow's connection (a split PEP), if
    /// one on its path covers it.
    split_by: Option<&'a AgentSpec>,
    /// Whether any agent on its path covers it.
    has_agent: bool,
    /// Round trip without queueing: propagation both ways, one data
    /// segment's serialization per forward hop and one ACK's per reverse
    /// hop, to the destination or to the splitting PEP.
    base_rtt: Option<Duration>,
    /// Its rows of the goodput series, in time order.
    rows: Vec<&'a GoodputRow>,
}

/// Agents whose kind terminates the flows they cover, unless switched off.
fn splits(a: &AgentSpec) -> bool {
    match a.kind.as_str() {
        "split" => a.params.get("bypass").and_then(|v| v.as_bool()) != Some(true),
        "split-pair" => a.params.get("enabled").and_then(|v| v.as_bool()) != Some(false),
        _ => false,
    }
}

/// Flow `i`'s path; `agents` are those that cover it, `rows` its goodput.
fn flow_path<'a>(
    sc: &'a Scenario,
    i: usize,
    agents: &[&'a AgentSpec],
    rows: Vec<&'a GoodputRow>,
) -> FlowPath<'a> {
    let f = &sc.flows[i];
    let hops = sc.routes.path(f.src, f.dst).unwrap_or_default();
    // Nodes the data passes between its ends.
    let inner: Vec<usize> = hops
        .iter()
        .map(|&(l, d)| sc.links[l].to_node(d))
        .filter(|&n| n != f.dst)
        .collect();
    let on_path = |a: &&AgentSpec| a.nodes.iter().any(|n| inner.contains(n));
    let split_by = agents.iter().find(|a| on_path(a) && splits(a)).copied();
    let has_agent = agents.iter().any(on_path);
    // A rate that changes over time (a schedule, a trace) bounds nothing.
    let varies = |l: usize, d| {
        use pep_core::link::service::ServiceSpec;
        matches!(
            sc.links[l].dir(d).service,
            Some(ServiceSpec::Schedule(_) | ServiceSpec::Trace(_))
        )
    };
    let bottleneck = match hops.iter().any(|&(l, d)| varies(l, d)) {
        true => None,
        false => hops.iter().map(|&(l, d)| sc.links[l].dir(d).rate).min(),
    };
    let end = split_by.map_or(f.dst, |a| a.nodes[0]);
    let data = u64::from(f.tcp.mss + f.tcp.header);
    let ack = u64::from(f.tcp.header);
    let one_way = |from: usize, to: usize, size: u64| -> Option<Duration> {
        let hops = sc.routes.path(from, to)?;
        Some(hops.iter().fold(Duration::ZERO, |t, &(l, d)| {
            let ld = sc.links[l].dir(d);
            t + ld.delay + ld.rate.tx_time(size)
        }))
    };
    let base_rtt = one_way(f.src, end, data).zip(one_way(end, f.src, ack));
    FlowPath {
        bottleneck,
        split_by,
        has_agent,
        base_rtt: base_rtt.map(|(a, b)| a + b),
        rows,
    }
}

/// When a flow's receiver had `size` bytes in order: the end of the
/// goodput bin (of its `rows`) that completed them.
fn received_by(rows: &[&GoodputRow], size: u64) -> Option<Duration> {
    let mut sum = 0;
    for r in rows {
        sum += r.bytes;
        if sum >= size {
            return Some(r.t - pep_core::Instant::ZERO);
        }
    }
    None
}

fn finite_size(sc: &Scenario, i: usize) -> Option<u64> {
    match sc.flows[i].source {
        SourceSpec::Finite { bytes } => Some(bytes),
        _ => None,
    }
}

/// The whole table.
pub fn render(v: &RunView) -> String {
    let mut o = String::new();
    let sc = v.scenario;
    // Each flow's agents and goodput rows, gathered in one pass each:
    // searched for per flow, they made the table quadratic in flows (8 s
    // for the 10,000-user gateway).
    let mut agents: Vec<Vec<&AgentSpec>> = vec![Vec::new(); sc.flows.len()];
    for a in &sc.agents {
        for &i in &a.flows {
            if let Some(l) = agents.get_mut(i) {
                l.push(a);
            }
        }
    }
    let mut rows: Vec<Vec<&GoodputRow>> = vec![Vec::new(); sc.flows.len()];
    for r in v.goodput {
        if let Some(l) = rows.get_mut(r.flow as usize) {
            l.push(r);
        }
    }
    let paths: Vec<FlowPath> = agents
        .iter()
        .zip(rows)
        .enumerate()
        .map(|(i, (agents, rows))| flow_path(sc, i, agents, rows))
        .collect();
    flows(&mut o, v, &paths);
    comparison(&mut o, v, &paths);
    links(&mut o, v);
    bins_above_rate(&mut o, v, &paths);
    o
}

/// The distributions across all the flows, for a table that hides some:
/// what a typical flow and the worst got.
fn spread(o: &mut String, flows: &[FlowSummary]) {
    let st = FlowStats::of(flows);
    let head = format!("across the {} flows", st.flows);
    let _ = write!(o, "{head:<24}");
    for name in pep_sim::spread::STATS {
        let _ = write!(o, " {name:>9}");
    }
    o.push('\n');
    let done = format!("  done s ({} done)", st.completed);
    let rows = [
        ("  Mbit/s", Some(st.goodput_mbps), 4),
        ("  delivered kB", Some(st.delivered_bytes.scaled(1e-3)), 1),
        ("  retx", Some(st.retransmitted_segments), 1),
        ("  RTOs", Some(st.timeouts), 1),
        ("  srtt ms", st.srtt_ms, 1),
        (done.as_str(), st.completion_s, 3),
    ];
    for (name, spread, digits) in rows {
        let Some(sp) = spread else { continue };
        let _ = write!(o, "{name:<24}");
        for x in sp.values() {
            let _ = write!(o, " {x:>9.digits$}");
        }
        o.push('\n');
    }
}

fn flows(o: &mut String, v: &RunView, paths: &[FlowPath]) {
    let s = v.summary;
    let _ = writeln!(
        o,
        "{:<16} {:>10} {:>14} {:>14} {:>7} {:>7} {:>5} {:>8} {:>8}",
        "flow", "Mbit/s", "over", "delivered B", "retx", "fast-rx", "RTOs", "srtt ms", "queue ms"
    );
    let shown = if v.all { s.flows.len() } else { ROWS };
    let mut above = Vec::new();
    let mut split = Vec::new();
    for (i, f) in s.flows.iter().enumerate().take(shown) {
        let p = &paths[i];
        let high = p
            .bottleneck
            .is_some_and(|r| f.goodput_mbps > r.as_mbps_f64() * (1.0 + 1e-9));
        if high {
            above.push(i);
        }
        if p.split_by.is_some() {
            split.push(i);
        }
        let goodput = format!("{:.3}{}", f.goodput_mbps, if high { "*" } else { "" });
        let (srtt, queue) = rtt_cells(f, p);
        let _ = writeln!(
            o,
            "{:<16} {:>10} {:>14} {:>14} {:>7} {:>7} {:>5} {:>8} {:>8}",
            f.name,
            goodput,
            over(v, i, f),
            f.delivered_bytes,
            f.retransmitted_segments,
            f.fast_retransmits,
            f.timeouts,
            srtt,
            queue
        );
    }
    if s.flows.len() > shown {
        let _ = writeln!(
            o,
            "... {} not shown: --all lists them; {} has every flow",
            plural(s.flows.len() - shown, "more flow", "more flows"),
            v.out.join(v.every_flow).display()
        );
    }
    let _ = writeln!(
        o,
        "{:<16} {:>10.3} {:>14} {:>14} {:>7}",
        "total",
        s.total_goodput_mbps,
        format!("run {} s", secs(s.duration_s)),
        s.total_delivered_bytes,
        s.total_retransmitted_segments
    );
    if s.flows.len() > shown {
        spread(o, &s.flows);
    }
    let _ = writeln!(
        o,
        "Mbit/s: bytes delivered in order over \"over\": done = from the start to the last byte \
         acknowledged,\n  end = from the start to the end of the run, run = the whole run. srtt: \
         the sender's smoothed RTT\n  at its end; queue: srtt minus the path's RTT without \
         queueing (propagation, serialization)."
    );
    for &i in &above {
        let f = &s.flows[i];
        let p = &paths[i];
        let rate = p.bottleneck.map(rate_text).unwrap_or_default();
        let why = if p.split_by.is_some() {
            "its sender was done when the PEP had every byte, before the receiver had them \
             all, so \"done\" is the sender's view"
        } else {
            "bytes held out of order behind a loss are delivered at once when it is repaired, \
             so a short time base can hold more than the link carried in it"
        };
        let _ = writeln!(
            o,
            "* {}: above the slowest link on its path ({rate}): {why}.",
            f.name
        );
    }
    split_notes(o, v, paths, &split);
}

/// One note per splitting PEP for the shown flows it splits: their RTT and
/// completion are the sender's leg's, and when the receiver had the last
/// byte (for a few finite flows).
fn split_notes(o: &mut String, v: &RunView, paths: &[FlowPath], split: &[usize]) {
    for a in &v.scenario.agents {
        let mine: Vec<usize> = split
            .iter()
            .copied()
            .filter(|&i| paths[i].split_by.is_some_and(|b| std::ptr::eq(a, b)))
            .collect();
        let Some(&first) = mine.first() else { continue };
        let name = |i: usize| v.summary.flows[i].name.as_str();
        let who = match mine.len() {
            1 => name(first).to_string(),
            n if n <= 4 => mine.iter().map(|&i| name(i)).collect::<Vec<_>>().join(", "),
            n => format!("{}, {} ... ({n} flows)", name(first), name(mine[1])),
        };
        let received: Vec<String> = mine
            .iter()
            .take(4)
            .filter_map(|&i| {
                let t = received_by(&paths[i].rows, finite_size(v.scenario, i)?)?;
                Some(format!("{} at {} s", name(i), secs(t.as_secs_f64())))
            })
            .collect();
        let received = if received.is_empty() || mine.len() > 4 {
            String::new()
        } else {
            format!("; the receiver had the last byte: {}", received.join(", "))
        };
        let node = &v.scenario.nodes[a.nodes[0]].name;
        let _ = writeln!(
            o,
            "^ {who}: the {} PEP {:?} on {node} ends the sender's connection: srtt, queue and \
             \"done\"\n  are the sender's leg's{received}.",
            a.kind, a.name
        );
    }
}

/// The time base of a flow's goodput.
fn over(v: &RunView, i: usize, f: &FlowSummary) -> String {
    match f.completion_s {
        Some(t) => format!("done {} s", secs(t)),
        None => {
            let start = v.scenario.flows[i].start.as_secs_f64();
            format!("end {} s", secs(v.summary.duration_s - start))
        }
    }
}

fn rtt_cells(f: &FlowSummary, p: &FlowPath) -> (String, String) {
    let Some(srtt) = f.srtt_ms else {
        return ("-".into(), "-".into());
    };
    let mark = if p.split_by.is_some() { "^" } else { "" };
    let queue = p
        .base_rtt
        .map_or("-".into(), |b| format!("{:.1}", srtt - b.as_millis_f64()));
    (format!("{srtt:.1}{mark}"), queue)
}

/// The same download with and without a PEP: finite flows of one size and
/// start, one split by a PEP on its path and one with no agent on it.
fn comparison(o: &mut String, v: &RunView, paths: &[FlowPath]) {
    let sc = v.scenario;
    let key = |i: usize| finite_size(sc, i).map(|size| (size, sc.flows[i].start));
    // The plain flows of each size and start, first flow first.
    let mut plain: BTreeMap<_, VecDeque<usize>> = BTreeMap::new();
    for i in (0..sc.flows.len()).filter(|&i| !paths[i].has_agent) {
        if let Some(k) = key(i) {
            plain.entry(k).or_default().push_back(i);
        }
    }
    let mut pairs = Vec::new();
    for i in (0..sc.flows.len()).filter(|&i| paths[i].split_by.is_some()) {
        if let Some(j) = key(i).and_then(|k| plain.get_mut(&k)?.pop_front()) {
            pairs.push((j, i));
        }
    }
    if pairs.is_empty() {
        return;
    }
    let bin = secs(v.bin.as_secs_f64());
    let _ = writeln!(
        o,
        "\nThe PEP's gain: the same download without and with it, until the receiver had \
         the last byte\n(to {bin} s, the goodput bins' width)"
    );
    let end = v.summary.duration_s;
    let time = |i: usize| {
        let size = finite_size(sc, i).unwrap_or(0);
        if v.goodput.is_empty() {
            return None;
        }
        received_by(&paths[i].rows, size).map(|t| t.as_secs_f64())
    };
    let cell = |t: Option<f64>| match t {
        Some(t) => format!("{} s", secs(t)),
        None => format!("not done in {} s", secs(end)),
    };
    for (plain, split) in pairs {
        let a = paths[split].split_by.expect("paired with a split flow");
        let size = bytes_text(finite_size(sc, split).unwrap_or(0));
        let (tp, ts) = (time(plain), time(split));
        let _ = writeln!(
            o,
            "  {:<16} {:>8} {:<24} {:>16}",
            sc.flows[plain].name,
            size,
            "no PEP",
            cell(tp)
        );
        let gain = match (tp, ts) {
            (Some(p), Some(s)) if s > 0.0 => {
                format!("{} s sooner ({}x as fast)", secs(p - s), secs(p / s))
            }
            (None, Some(s)) => format!("over {} s sooner", secs(end - s)),
            _ if v.goodput.is_empty() => "(no goodput series recorded: add \"goodput\" to \
                                          output.series)"
                .into(),
            _ => String::new(),
        };
        let _ = writeln!(
            o,
            "  {:<16} {:>8} {:<24} {:>16}  {gain}",
            sc.flows[split].name,
            size,
            format!("{} PEP {:?}", a.kind, a.name),
            cell(ts)
        );
    }
}

fn links(o: &mut String, v: &RunView) {
    let s = v.summary;
    let busy: Vec<_> = s
        .links
        .iter()
        .filter(|l| v.all || l.tx_packets > 0)
        .collect();
    let idle = s.links.len() - s.links.iter().filter(|l| l.tx_packets > 0).count();
    let shown = if v.all { busy.len() } else { ROWS };
    let width = busy
        .iter()
        .take(shown)
        .map(|l| l.name.len())
        .max()
        .unwrap_or(0)
        .max(24);
    // Queueing-delay percentiles: recorded with the `queues` series.
    let delays = busy
        .iter()
        .take(shown)
        .any(|l| l.p50_queue_delay_ms.is_some());
    let _ = write!(
        o,
        "\n{:<width$} {:>8} {:>12} {:>9} {:>8} {:>7}",
        "link", "util %", "packets", "q drops", "lost", "max q"
    );
    if delays {
        let _ = write!(o, " {:>9} {:>9}", "qd p50 ms", "qd p95 ms");
    }
    o.push('\n');
    let ms = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.2}"));
    for l in busy.iter().take(shown) {
        let _ = write!(
            o,
            "{:<width$} {:>8.2} {:>12} {:>9} {:>8} {:>7}",
            l.name,
            l.utilisation * 100.0,
            l.tx_packets,
            l.queue_drops,
            l.lost_packets,
            l.max_queue_packets
        );
        if delays {
            let _ = write!(
                o,
                " {:>9} {:>9}",
                ms(l.p50_queue_delay_ms),
                ms(l.p95_queue_delay_ms)
            );
        }
        o.push('\n');
    }
    let summary = v.out.join(v.every_link);
    if busy.len() > shown {
        let _ = writeln!(
            o,
            "... {} not shown: --all lists them; {} has every one",
            plural(
                busy.len() - shown,
                "more link direction",
                "more link directions"
            ),
            summary.display()
        );
    }
    if !v.all && idle > 0 {
        let _ = writeln!(
            o,
            "({} no packet: not listed; --all lists them)",
            plural(idle, "link direction carried", "link directions carried")
        );
    }
    let _ = writeln!(
        o,
        "q drops: packets the queue refused; lost: packets the link's loss model dropped \
         (random or\n  scripted); max q: most packets queued."
    );
    if delays {
        let _ = writeln!(
            o,
            "qd p50/p95: the packets' queueing delay (admission to the start of transmission), \
             median\n  and 95th percentile."
        );
    }
}

/// goodput.csv bins above the path's slowest link: in-order delivery after
/// a repair, which a plot shows as a spike.
fn bins_above_rate(o: &mut String, v: &RunView, paths: &[FlowPath]) {
    let secs_per_bin = v.bin.as_secs_f64();
    if v.goodput.is_empty() || secs_per_bin == 0.0 {
        return;
    }
    let mut found: Vec<(usize, usize, f64)> = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        let Some(limit) = p.bottleneck.map(Rate::as_mbps_f64) else {
            continue;
        };
        let (mut n, mut max) = (0, 0.0f64);
        for r in &p.rows {
            let mbps = r.bytes as f64 * 8.0 / r.bin.as_secs_f64().max(1e-12) / 1e6;
            if mbps > limit * (1.0 + 1e-9) {
                n += 1;
                max = max.max(mbps);
            }
        }
        if n > 0 {
            found.push((i, n, max));
        }
    }
    if found.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "\ngoodput.csv has bins above a flow's slowest link: bytes held out of order behind \
         a loss\nare delivered at once when it is repaired."
    );
    for &(i, n, max) in found.iter().take(3) {
        let rate = paths[i].bottleneck.map(rate_text).unwrap_or_default();
        let _ = writeln!(
            o,
            "  {}: {} above {rate}, up to {max:.2} Mbit/s",
            v.summary.flows[i].name,
            plural(n, "bin", "bins")
        );
    }
    if found.len() > 3 {
        let _ = writeln!(
            o,
            "  and {}",
            plural(found.len() - 3, "more flow", "more flows")
        );
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use pep_sim::Simulation;

    use super::*;
    use crate::sim_cmd::{load, Changes};

    fn repo(rel: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(rel)
    }

    /// The table `pep sim run [file] --duration d [--all]` prints.
    fn table(file: Option<&str>, duration: Option<&str>, all: bool) -> String {
        let changes = Changes {
            duration: duration.map(str::to_string),
            ..Changes::default()
        };
        let path = file.map(repo);
        let sc = load(path.as_deref(), &changes).unwrap();
        let mut sim = Simulation::new(&sc);
        sim.run();
        let summary = sim.summary();
        let out = Path::new("out").join(&sc.name);
        // The files the run would write beside summary.json, by the rule
        // that writes them.
        let (_, tables) = sim.results(&summary);
        let every = |name: &str| match tables.iter().any(|t| t.name == name) {
            true => format!("{name}.csv"),
            false => "summary.json".into(),
        };
        let (every_flow, every_link) = (every("flows"), every("link_totals"));
        render(&RunView {
            scenario: &sc,
            summary: &summary,
            goodput: &sim.metrics().goodput,
            bin: sim.metrics().bin_every,
            out: &out,
            every_flow: &every_flow,
            every_link: &every_link,
            all,
        })
    }

    /// Compares with `src/snapshots/<name>.txt`; `PEP_UPDATE_SNAPSHOTS=1`
    /// rewrites it instead (then read the diff before committing).
    fn snapshot(name: &str, got: &str) {
        let file = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src/snapshots")
            .join(format!("{name}.txt"));
        if std::env::var_os("PEP_UPDATE_SNAPSHOTS").is_some() {
            std::fs::write(&file, got).unwrap();
            return;
        }
        let want = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(
            got == want,
            "the summary of {name} differs from {}:\n--- got\n{got}\n--- want\n{want}",
            file.display()
        );
    }

    #[test]
    fn snapshot_of_the_default_shows_the_peps_gain() {
        let t = table(None, None, false);
        snapshot("default", &t);
        // What the snapshot must hold, said once more in words: both
        // downloads complete and the PEP's is the sooner.
        assert!(t.contains("The PEP's gain"), "{t}");
        assert!(t.contains("s sooner"), "{t}");
    }

    #[test]
    fn snapshot_of_scripted_drops_counts_the_three_losses() {
        let t = table(Some("scenarios/examples/scripted-drops.toml"), None, false);
        snapshot("scripted-drops", &t);
        // Segments 20, 22 and 24 are dropped on r1->receiver: the lost
        // column has them, the queue none.
        let row = t.lines().find(|l| l.starts_with("r1->receiver")).unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!((cells[3], cells[4]), ("0", "3"), "{row}");
    }

    #[test]
    fn snapshot_of_200_link_directions_says_what_it_hides() {
        let file = "scenarios/gschwandtner/ftp50-pep.toml";
        let t = table(Some(file), Some("20s"), false);
        snapshot("ftp50-pep-20s", &t);
        assert!(t.contains("more flows not shown: --all lists them"), "{t}");
        assert!(t.contains("more link directions not shown: --all"), "{t}");
        // Uncut: a row per flow and per link direction, and no note.
        let all = table(Some(file), Some("20s"), true);
        let sc = load(Some(&repo(file)), &Changes::default()).unwrap();
        let rows = |t: &str, ends: &[String]| {
            t.lines()
                .filter(|l| ends.iter().any(|n| l.split_whitespace().next() == Some(n)))
                .count()
        };
        let flows: Vec<String> = sc.flows.iter().map(|f| f.name.clone()).collect();
        assert_eq!(rows(&all, &flows), sc.flows.len());
        assert_eq!(rows(&all, &sc.link_directions()), 2 * sc.links.len());
        assert!(!all.contains("not shown"), "{all}");
    }

    #[test]
    fn plurals_agree_with_their_count() {
        assert_eq!(plural(1, "job", "jobs"), "1 job");
        assert_eq!(plural(0, "job", "jobs"), "0 jobs");
        assert_eq!(plural(2, "packet", "packets"), "2 packets");
    }
}
