//! Writing a run's results: tidy CSV files, one per kind of series, and a
//! JSON summary. Everything here is a pure function of the simulation state,
//! so the same scenario and seed give byte-identical files. Machine-dependent
//! figures (wall time, events per second) belong to the caller's `run.json`.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

use pep_core::{Duration, Instant};
use serde::{Deserialize, Serialize};

use crate::sim::Simulation;
use crate::table::{self, Cell, Column, ColumnType, Table};

/// Per-flow results.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FlowSummary {
    pub name: String,
    pub from: String,
    pub to: String,
    /// Bytes the receiver delivered in order to its application.
    pub delivered_bytes: u64,
    /// Delivered bytes over the time the flow was active (start to
    /// completion, or to the end of the run), in Mbit/s.
    pub goodput_mbps: f64,
    pub segments_sent: u64,
    pub retransmitted_segments: u64,
    pub fast_retransmits: u64,
    pub timeouts: u64,
    /// Segments the sender's own interface queue refused.
    pub local_drops: u64,
    /// Seconds from start to the last byte acknowledged (finite sources).
    pub completion_s: Option<f64>,
    /// The sender's smoothed RTT at the end of the run, in ms.
    pub srtt_ms: Option<f64>,
    /// Per-connection counters of both ends (Johnson's thesis, figure 2.1);
    /// absent where the source of the summary does not count them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<FlowCounters>,
    /// A bidirectional flow's reverse data (`reverse` in the scenario).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse: Option<ReverseSummary>,
}

/// The reverse direction of a bidirectional flow: data from `to` back to
/// `from`, and the ACKs `from` sent for it.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ReverseSummary {
    /// Bytes `from` delivered in order.
    pub delivered_bytes: u64,
    /// Over the time from the flow's start to the end of the run (or the
    /// reverse transfer's completion), Mbit/s.
    pub goodput_mbps: f64,
    pub segments_sent: u64,
    pub retransmitted_segments: u64,
    pub timeouts: u64,
    /// ACKs of the reverse data: pure ACKs, and ACKs carried by the
    /// forward data.
    pub acks_sent: u64,
    pub acks_piggybacked: u64,
}

/// Per-connection counters, named after the thesis's `struct tcpe` where
/// it has them.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct FlowCounters {
    /// ACKs the receiver sent (`t_sndacks`).
    pub acks_sent: u64,
    /// ... because the count of unacknowledged segments reached the
    /// interval (`t_ackdone`).
    pub acks_by_count: u64,
    /// ... by the delayed-ACK timer (`t_timeack`).
    pub acks_by_timer: u64,
    /// ... at once: out of order, hole fill, duplicate, FIN.
    pub acks_immediate: u64,
    /// ... because the application's reads opened the window.
    pub acks_window_update: u64,
    /// Times the outstanding-segment count was incremented (`t_inc`).
    pub count_increments: u64,
    /// The receiver's ACK interval at its last ACK (adaptive: where it
    /// ended).
    pub ack_interval: u32,
    /// Data bytes and segments the sender sent, retransmissions included
    /// (`t_sndbyte`).
    pub data_bytes_sent: u64,
    pub data_segments_sent: u64,
    /// Retransmitted segments and bytes (`t_sndrexmitpack`, `t_sndrexmitbyte`).
    pub retransmitted_segments: u64,
    pub retransmitted_bytes: u64,
    /// Segments and payload bytes the receiver got, duplicates included.
    pub segments_received: u64,
    pub bytes_received: u64,
    /// New bytes received in order (`t_rcvbyte`).
    pub bytes_in_order: u64,
    /// Bytes of entirely duplicate segments (`t_rcvdupbyte`).
    pub bytes_duplicate_only: u64,
    /// Duplicate bytes in partly duplicate segments (`t_rcvpartdupbyte`).
    pub bytes_partly_duplicate: u64,
    /// ACKs the sender received (`t_rcvackpack`), and of those duplicates
    /// (`t_rcvdupack`).
    pub acks_received: u64,
    pub dup_acks_received: u64,
    /// Bidirectional flows: ACKs the receiver's own data segments carried
    /// (`acks_sent` counts the pure ones).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub acks_piggybacked: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// Per-link-direction results.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct LinkSummary {
    pub name: String,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// Fraction of the run the transmitter was busy.
    pub utilisation: f64,
    pub queue_drops: u64,
    pub lost_packets: u64,
    pub max_queue_packets: u64,
    /// Mean, standard deviation and 99th percentile of the packets queued,
    /// over the `output.sample` samples (present when the `queues` series
    /// is recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_queue_packets: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sd_queue_packets: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_queue_packets: Option<f64>,
    /// Median and 95th percentile (nearest rank) of the packets' queueing
    /// delay, admission to the start of transmission, over every packet
    /// that started transmission, in ms; at most 1/256 below the exact
    /// value (`pep_core::queue::DelayHistogram`). Present when the
    /// `queues` series is recorded and the queue is FIFO (DropTail, RED).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_queue_delay_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p95_queue_delay_ms: Option<f64>,
}

/// The `p`-th percentile of a queue's recorded delays, in ms.
fn delay_percentile(q: &pep_core::queue::Queue<crate::packet::Packet>, p: f64) -> Option<f64> {
    let d = q.sojourn()?.histogram().percentile(p)?;
    Some(round6(d.as_millis_f64()))
}

/// Mean, standard deviation and 99th percentile (nearest rank) of port
/// `port`'s sampled queue lengths; `None` without samples.
fn queue_moments(rows: &[crate::metrics::QueueRow], port: u32) -> Option<(f64, f64, f64)> {
    let mut q: Vec<u32> = rows
        .iter()
        .filter(|r| r.port == port)
        .map(|r| r.packets)
        .collect();
    if q.is_empty() {
        return None;
    }
    let n = q.len() as f64;
    let mean = q.iter().map(|&x| x as f64).sum::<f64>() / n;
    let var = q.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
    q.sort_unstable();
    let rank = ((0.99 * n).ceil() as usize).clamp(1, q.len());
    Some((round6(mean), round6(libm::sqrt(var)), q[rank - 1] as f64))
}

/// The run summary written as `summary.json`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub scenario: String,
    pub seed: u64,
    pub duration_s: f64,
    /// Each flow's entry, in the scenario's order. `summary.json` leaves
    /// them out above [`crate::spread::PER_FLOW_LIMIT`] flows (unless
    /// `[output] per_flow`): `flows.csv` holds them, one row each, and
    /// `flow_stats` their distributions ([`Written`]). Serialized as it
    /// is (a sweep's run record), more than that many are columns
    /// ([`crate::columns`]).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "crate::columns::flows",
        deserialize_with = "crate::columns::deserialize"
    )]
    pub flows: Vec<FlowSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_stats: Option<FlowStats>,
    pub total_delivered_bytes: u64,
    pub total_goodput_mbps: f64,
    pub total_retransmitted_segments: u64,
    /// Each link direction's entry. Above [`crate::spread::LINK_LIMIT`] of
    /// them `summary.json` lists the busiest (`busiest_links`), and
    /// `link_totals.csv` has every one. Serialized as it is, more than
    /// that many are columns ([`crate::columns`]).
    #[serde(
        default,
        serialize_with = "crate::columns::links",
        deserialize_with = "crate::columns::deserialize"
    )]
    pub links: Vec<LinkSummary>,
    pub events: u64,
    pub packets_forwarded: u64,
    /// PEP agents and their totals; absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentSummary>,
}

/// The flows of a run too large to list in `summary.json`: how many, and
/// the distributions across them of what each flow's entry holds.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FlowStats {
    pub flows: u64,
    /// Flows whose last byte was acknowledged (finite sources).
    pub completed: u64,
    pub delivered_bytes: Spread,
    pub goodput_mbps: Spread,
    /// Over the completed flows; absent when none completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_s: Option<Spread>,
    /// Over the flows with an RTT estimate; absent when none has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub srtt_ms: Option<Spread>,
    pub retransmitted_segments: Spread,
    pub timeouts: Spread,
}

/// A quantity's distribution across flows: the mean and nearest-rank
/// percentiles ([`crate::spread::STATS`]).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct Spread {
    pub mean: f64,
    pub min: f64,
    pub p10: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl Spread {
    /// The statistics in [`crate::spread::STATS`]'s order.
    pub fn values(self) -> [f64; 7] {
        [
            self.mean, self.min, self.p10, self.p50, self.p90, self.p99, self.max,
        ]
    }

    fn from_values([mean, min, p10, p50, p90, p99, max]: [f64; 7]) -> Spread {
        Spread {
            mean,
            min,
            p10,
            p50,
            p90,
            p99,
            max,
        }
    }

    /// Every statistic times `k` (a change of unit).
    pub fn scaled(self, k: f64) -> Spread {
        Spread::from_values(self.values().map(|v| v * k))
    }

    fn of(mut values: Vec<f64>) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let stats = crate::spread::stats_f64(&mut values).map(round6);
        Some(Spread::from_values(stats))
    }
}

impl FlowStats {
    pub fn of(flows: &[FlowSummary]) -> FlowStats {
        let spread = |v: &dyn Fn(&FlowSummary) -> Option<f64>| -> Option<Spread> {
            Spread::of(flows.iter().filter_map(v).collect())
        };
        let zero = Spread::of(vec![0.0]).expect("one value");
        let each = |v: &dyn Fn(&FlowSummary) -> f64| spread(&|f| Some(v(f))).unwrap_or(zero);
        FlowStats {
            flows: flows.len() as u64,
            completed: flows.iter().filter(|f| f.completion_s.is_some()).count() as u64,
            delivered_bytes: each(&|f| f.delivered_bytes as f64),
            goodput_mbps: each(&|f| f.goodput_mbps),
            completion_s: spread(&|f| f.completion_s),
            srtt_ms: spread(&|f| f.srtt_ms),
            retransmitted_segments: each(&|f| f.retransmitted_segments as f64),
            timeouts: each(&|f| f.timeouts as f64),
        }
    }
}

/// `summary.json` as written: the run's [`Summary`], borrowed, with the
/// same fields in the same order, and above the per-flow limit
/// `flow_stats` in place of the flows' entries. Borrowed, so that writing
/// a million users' summary copies none of their link entries.
#[derive(Serialize)]
pub struct Written<'a> {
    scenario: &'a str,
    seed: u64,
    duration_s: f64,
    #[serde(skip_serializing_if = "<[FlowSummary]>::is_empty")]
    flows: &'a [FlowSummary],
    #[serde(skip_serializing_if = "Option::is_none")]
    flow_stats: Option<FlowStats>,
    total_delivered_bytes: u64,
    total_goodput_mbps: f64,
    total_retransmitted_segments: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    links: Option<&'a [LinkSummary]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    busiest_links: Option<Vec<&'a LinkSummary>>,
    events: u64,
    packets_forwarded: u64,
    #[serde(skip_serializing_if = "<[AgentSummary]>::is_empty")]
    agents: &'a [AgentSummary],
}

/// Link directions `summary.json` names when `link_totals.csv` has them
/// all: the busiest, by bytes sent.
pub const BUSIEST_LINKS: usize = 20;

impl<'a> Written<'a> {
    /// `s` with every flow's entry (`per_flow`), or with their
    /// distributions instead; with every link direction's entry
    /// (`every_link`), or with the [`BUSIEST_LINKS`] busiest.
    pub fn new(s: &'a Summary, per_flow: bool, every_link: bool) -> Written<'a> {
        // Taken apart so that a field added to `Summary` cannot be missed.
        let Summary {
            scenario,
            seed,
            duration_s,
            flows,
            flow_stats,
            total_delivered_bytes,
            total_goodput_mbps,
            total_retransmitted_segments,
            links,
            events,
            packets_forwarded,
            agents,
        } = s;
        let (flows, flow_stats) = if per_flow {
            (&flows[..], flow_stats.clone())
        } else {
            (&[][..], Some(FlowStats::of(flows)))
        };
        let (links, busiest_links) = if every_link {
            (Some(&links[..]), None)
        } else {
            let mut busiest: Vec<&LinkSummary> = links.iter().collect();
            // Stable: equally busy directions stay in the scenario's order.
            busiest.sort_by_key(|l| std::cmp::Reverse(l.tx_bytes));
            busiest.truncate(BUSIEST_LINKS);
            (None, Some(busiest))
        };
        Written {
            scenario,
            seed: *seed,
            duration_s: *duration_s,
            flows,
            flow_stats,
            total_delivered_bytes: *total_delivered_bytes,
            total_goodput_mbps: *total_goodput_mbps,
            total_retransmitted_segments: *total_retransmitted_segments,
            links,
            busiest_links,
            events: *events,
            packets_forwarded: *packets_forwarded,
            agents,
        }
    }
}

/// One PEP agent's totals.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AgentSummary {
    pub name: String,
    pub kind: String,
    pub nodes: Vec<String>,
    /// What the kind reports ([`crate::agent::NodeAgent::stats`]).
    pub stats: serde_json::Value,
}

pub use pep_core::time::fmt_out::{mbps, round6, secs};

fn counters(k: &crate::tcp::SinkStats, s: crate::tcp::SenderStats) -> FlowCounters {
    FlowCounters {
        acks_sent: k.acks_sent,
        acks_by_count: k.acks_by_count,
        acks_by_timer: k.acks_by_timer,
        acks_immediate: k.acks_immediate,
        acks_window_update: k.acks_window_update,
        count_increments: k.count_increments,
        ack_interval: k.ack_interval,
        data_bytes_sent: s.bytes_sent,
        data_segments_sent: s.segments_sent,
        retransmitted_segments: s.retransmitted_segments,
        retransmitted_bytes: s.retransmitted_bytes,
        segments_received: k.segments_received,
        bytes_received: k.bytes_received,
        bytes_in_order: k.bytes_in_order,
        bytes_duplicate_only: k.bytes_duplicate_only,
        bytes_partly_duplicate: k.bytes_partly_duplicate,
        acks_received: s.acks_received,
        dup_acks_received: s.dupacks_received,
        acks_piggybacked: k.acks_piggybacked,
    }
}

/// The reverse direction's summary, if the flow is bidirectional.
fn reverse(f: &crate::sim::Flow, now: Instant) -> Option<ReverseSummary> {
    let rx = f.sender.as_ref()?.reverse_sink()?;
    let tx = f.sink.reverse_sender();
    let st = tx.map(|t| *t.stats()).unwrap_or_default();
    let done = tx.and_then(|t| t.completion_time()).unwrap_or(now);
    Some(ReverseSummary {
        delivered_bytes: rx.delivered_bytes(),
        goodput_mbps: mbps(rx.delivered_bytes(), done.saturating_since(f.start)),
        segments_sent: st.segments_sent,
        retransmitted_segments: st.retransmitted_segments,
        timeouts: st.timeouts,
        acks_sent: rx.stats().acks_sent,
        acks_piggybacked: rx.stats().acks_piggybacked,
    })
}

impl Simulation {
    /// The run's summary as it stands now.
    pub fn summary(&self) -> Summary {
        let now = self.now;
        let names = &self.info.node_names;
        let flows: Vec<FlowSummary> = self
            .flows
            .iter()
            .map(|f| {
                let delivered = f.sink.delivered_bytes();
                let done = f.sender.as_ref().and_then(|s| s.completion_time());
                let active = done.unwrap_or(now).saturating_since(f.start);
                let st = f.sender.as_ref().map(|s| *s.stats());
                FlowSummary {
                    name: f.name.clone(),
                    from: names[f.src as usize].clone(),
                    to: names[f.dst as usize].clone(),
                    delivered_bytes: delivered,
                    goodput_mbps: mbps(delivered, active),
                    segments_sent: st.map_or(0, |s| s.segments_sent),
                    retransmitted_segments: st.map_or(0, |s| s.retransmitted_segments),
                    fast_retransmits: st.map_or(0, |s| s.fast_retransmits),
                    timeouts: st.map_or(0, |s| s.timeouts),
                    local_drops: f.local_drops,
                    completion_s: done.map(|t| round6((t - f.start).as_secs_f64())),
                    srtt_ms: f
                        .sender
                        .as_ref()
                        .and_then(|s| s.srtt())
                        .map(|d| round6(d.as_millis_f64())),
                    counters: Some(counters(f.sink.stats(), st.unwrap_or_default())),
                    reverse: reverse(f, now),
                }
            })
            .collect();
        let elapsed = now - Instant::ZERO;
        let links = self
            .ports
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let s = p.link.stats;
                let q = queue_moments(&self.metrics.queues, i as u32);
                LinkSummary {
                    name: self.port_names[i].clone(),
                    tx_packets: s.tx_packets,
                    tx_bytes: s.tx_bytes,
                    utilisation: if elapsed == Duration::ZERO {
                        0.0
                    } else {
                        round6(
                            (s.busy_ns.min(elapsed.as_nanos())) as f64 / elapsed.as_nanos() as f64,
                        )
                    },
                    queue_drops: p.link.queue.stats.dropped,
                    lost_packets: s.lost_packets,
                    max_queue_packets: p.max_queue as u64,
                    mean_queue_packets: q.map(|q| q.0),
                    sd_queue_packets: q.map(|q| q.1),
                    p99_queue_packets: q.map(|q| q.2),
                    p50_queue_delay_ms: delay_percentile(&p.link.queue, 50.0),
                    p95_queue_delay_ms: delay_percentile(&p.link.queue, 95.0),
                }
            })
            .collect();
        let total: u64 = flows.iter().map(|f| f.delivered_bytes).sum();
        let es = self.engine_stats();
        Summary {
            scenario: self.info.scenario.clone(),
            seed: self.info.seed,
            duration_s: round6(elapsed.as_secs_f64()),
            total_delivered_bytes: total,
            total_goodput_mbps: mbps(total, elapsed),
            total_retransmitted_segments: flows.iter().map(|f| f.retransmitted_segments).sum(),
            flows,
            flow_stats: None,
            links,
            events: es.events,
            packets_forwarded: es.packets_forwarded,
            agents: self
                .agents
                .iter()
                .map(|a| AgentSummary {
                    name: a.name.clone(),
                    kind: a.kind.clone(),
                    nodes: a.nodes.iter().map(|&n| names[n as usize].clone()).collect(),
                    stats: a.agent.stats(),
                })
                .collect(),
        }
    }

    /// The recorded series as tables (goodput, links, queues, cwnd, tseq,
    /// agents), in that order; a series not recorded has none.
    pub fn tables(&self) -> Vec<Table<'_>> {
        use ColumnType::{Float, Text, UInt};
        let m = &self.metrics;
        let flow = move |i: u32| Cell::Text(self.flows[i as usize].name.as_str().into());
        let port = move |i: u32| Cell::Text(self.port_names[i as usize].as_str().into());
        let cols = |c: &[(&str, ColumnType)]| -> Vec<Column> {
            c.iter().map(|&(n, t)| Column::new(n, t)).collect()
        };
        let mut out = Vec::new();
        if m.series.goodput && !m.per_flow {
            out.push(crate::spread::goodput(&m.goodput));
            out.push(crate::spread::goodput_total(&m.goodput));
        } else if m.series.goodput {
            let c = cols(&[
                ("time_s", Float),
                ("flow", Text),
                ("bytes", UInt),
                ("goodput_mbps", Float),
            ]);
            out.push(Table::new("goodput", c, m.goodput.len(), move |i, v| {
                let r = &m.goodput[i];
                v.extend([
                    Cell::Time(r.t),
                    flow(r.flow),
                    Cell::UInt(r.bytes),
                    Cell::Float(mbps(r.bytes, r.bin)),
                ]);
            }));
        }
        if m.series.links {
            let c = cols(&[
                ("time_s", Float),
                ("link", Text),
                ("bytes", UInt),
                ("throughput_mbps", Float),
                ("utilisation", Float),
            ]);
            out.push(Table::new("links", c, m.links.len(), move |i, v| {
                let r = &m.links[i];
                v.extend([
                    Cell::Time(r.t),
                    port(r.port),
                    Cell::UInt(r.bytes),
                    Cell::Float(mbps(r.bytes, r.bin)),
                    Cell::Float(round6(r.busy_ns as f64 / r.bin.as_nanos() as f64)),
                ]);
            }));
        }
        if m.series.queues {
            let c = cols(&[
                ("time_s", Float),
                ("link", Text),
                ("packets", UInt),
                ("bytes", UInt),
            ]);
            out.push(Table::new("queues", c, m.queues.len(), move |i, v| {
                let r = &m.queues[i];
                v.extend([
                    Cell::Time(r.t),
                    port(r.port),
                    Cell::UInt(r.packets.into()),
                    Cell::UInt(r.bytes),
                ]);
            }));
        }
        if m.series.cwnd && !m.per_flow {
            out.push(crate::spread::cwnd(&m.cwnd));
        } else if m.series.cwnd {
            let c = cols(&[
                ("time_s", Float),
                ("flow", Text),
                ("cwnd_bytes", UInt),
                ("ssthresh_bytes", UInt),
            ]);
            out.push(Table::new("cwnd", c, m.cwnd.len(), move |i, v| {
                let r = &m.cwnd[i];
                let ss = r.ssthresh.map_or(Cell::Null, Cell::UInt);
                v.extend([Cell::Time(r.t), flow(r.flow), Cell::UInt(r.cwnd), ss]);
            }));
        }
        if m.series.tseq {
            let starts: Vec<_> = self.flows.iter().map(|f| f.data_start).collect();
            let names: Vec<&str> = self.flows.iter().map(|f| f.name.as_str()).collect();
            out.push(crate::tseq::table(&m.tseq, starts, names));
        }
        if !self.agent_rows.is_empty() {
            let c = cols(&[
                ("time_s", Float),
                ("agent", Text),
                ("name", Text),
                ("value", Float),
            ]);
            out.push(Table::new(
                "agents",
                c,
                self.agent_rows.len(),
                move |i, v| {
                    let r = &self.agent_rows[i];
                    v.extend([
                        Cell::Time(r.t),
                        Cell::Text(self.agents[r.agent as usize].name.as_str().into()),
                        Cell::Text(r.name.into()),
                        Cell::Float(r.value),
                    ]);
                },
            ));
        }
        out
    }

    /// The summary and tables a run's files hold, given its
    /// [`Self::summary`]: the recorded series ([`Self::tables`]); above
    /// the per-flow limit the flows' entries as a table of their own
    /// (`flows`) with the summary's `flow_stats` in their place; above
    /// [`crate::spread::LINK_LIMIT`] link directions their entries as
    /// `link_totals`, with the busiest in the summary.
    pub fn results<'a>(&'a self, summary: &'a Summary) -> (Written<'a>, Vec<Table<'a>>) {
        let per_flow = self.metrics.per_flow;
        let every_link = summary.links.len() <= crate::spread::LINK_LIMIT;
        let mut tables = self.tables();
        if !per_flow {
            tables.push(crate::spread::flows(&summary.flows));
        }
        if !every_link {
            tables.push(crate::spread::link_totals(&summary.links));
        }
        (Written::new(summary, per_flow, every_link), tables)
    }

    /// Writes `summary.json` and one CSV per table of [`Self::results`]
    /// into `dir` (created if missing). Returns the file names written.
    pub fn write_outputs(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.write_outputs_as(dir, &[table::write_csv_file])
    }

    /// [`Self::write_outputs`] with each table written by each of
    /// `writers` (CSV, Parquet) in turn.
    pub fn write_outputs_as(
        &self,
        dir: &Path,
        writers: &[table::FileWriter],
    ) -> io::Result<Vec<String>> {
        self.write_outputs_with(dir, writers, &self.summary())
    }

    /// [`Self::write_outputs_as`] given the run's [`Self::summary`], which
    /// takes seconds to make for a million flows.
    pub fn write_outputs_with(
        &self,
        dir: &Path,
        writers: &[table::FileWriter],
        summary: &Summary,
    ) -> io::Result<Vec<String>> {
        fs::create_dir_all(dir)?;
        let (summary, tables) = self.results(summary);
        let mut written = Vec::new();
        for t in tables {
            for w in writers {
                written.push(w(&t, dir)?);
            }
        }
        // Streamed: with `per_flow`, a million flows' entries are 1.3 GB.
        let mut file = io::BufWriter::new(fs::File::create(dir.join("summary.json"))?);
        serde_json::to_writer_pretty(&mut file, &summary).map_err(io::Error::other)?;
        file.write_all(b"\n")?;
        file.flush()?;
        written.push("summary.json".to_string());
        Ok(written)
    }
}
