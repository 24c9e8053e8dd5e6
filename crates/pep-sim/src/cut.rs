//! A run cut in two at one link (`scenario.cut`), each side on its own
//! thread: conservative parallel simulation with the link's delay as the
//! lookahead.
//!
//! Each side is a whole [`Simulation`] built from the scenario that runs
//! only its own nodes: flows start where their sender is, agents wake where
//! they sit, and an agent on both ends of the link runs as two halves
//! ([`crate::agent::NodeAgent::cut`]). Nothing crosses the link sooner than
//! its delay `d`, so the sides run the same window `(W, W + d]` at once.
//! At each window's end `W`, each side hands the other the packets its
//! direction of the link has finished sending that arrive by `W + d`
//! ([`LinkDir::take_arriving`]), which the other puts in its copy of the
//! direction ([`LinkDir::inject`]) to deliver at their times, plus
//! whatever the split agents exchange. Every packet a side must deliver in
//! a window was serialized before it began, so nothing arrives late.
//!
//! Each side's events keep their order by (time, order scheduled) within
//! the side, so a cut run is deterministic and the same on one thread or
//! two ([`Simulation::set_parallel`]). It is not byte-identical to the
//! uncut run: events at the same nanosecond on one side may now run in
//! another order relative to an arrival from the other side.
//!
//! When the run reaches its end, the far side's state is moved into the
//! near one ([`Simulation`] `join`), so summaries, series and traces read
//! as for an uncut run.
//!
//! [`LinkDir::take_arriving`]: pep_core::link::LinkDir::take_arriving
//! [`LinkDir::inject`]: pep_core::link::LinkDir::inject

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use pep_core::{Duration, Instant};

use crate::agent::CutMessage;
use crate::metrics::Metrics;
use crate::packet::Packet;
use crate::scenario::CutSpec;
use crate::sim::{AgentRow, Simulation};

/// The far side of a cut run, held by the near side.
pub(crate) struct Cut {
    far: Box<Simulation>,
    /// `far_node[n]`: node `n` runs on the far side.
    far_node: Vec<bool>,
    /// The cut link's near-to-far direction and its reverse.
    fwd: usize,
    rev: usize,
    /// The lookahead: the shorter of the link's two delays.
    window: Duration,
    /// The next window's end.
    next: Instant,
    /// Run the sides on two threads (else alternately on one).
    parallel: bool,
}

/// What one side hands the other at a window's end.
struct Batch {
    /// Arrival time and packet, in arrival order.
    packets: Vec<(Instant, Packet)>,
    /// Agent index and its message.
    agents: Vec<(usize, CutMessage)>,
}

/// Where one run segment stops: a window's end (exchange) or the caller's
/// limit.
#[derive(Clone, Copy)]
struct Stop {
    at: Instant,
    exchange: bool,
}

impl Cut {
    pub(crate) fn new(spec: &CutSpec, far: Simulation, window: Duration) -> Cut {
        Cut {
            far: Box::new(far),
            far_node: spec.far.clone(),
            fwd: spec.link * 2,
            rev: spec.link * 2 + 1,
            window,
            next: Instant::ZERO + window,
            parallel: std::thread::available_parallelism().is_ok_and(|n| n.get() > 1),
        }
    }

    /// Node `n` runs on the far side.
    pub(crate) fn is_far(&self, n: crate::packet::NodeIndex) -> bool {
        self.far_node[n as usize]
    }

    pub(crate) fn far_mut(&mut self) -> &mut Simulation {
        &mut self.far
    }

    pub(crate) fn parallel(&self) -> bool {
        self.parallel
    }

    pub(crate) fn set_parallel(&mut self, on: bool) {
        self.parallel = on;
    }

    /// The stops from now to `limit`, and the window end after them.
    fn plan(&self, limit: Instant) -> (Vec<Stop>, Instant) {
        let mut stops = Vec::new();
        let mut next = self.next;
        while next <= limit {
            stops.push(Stop {
                at: next,
                exchange: true,
            });
            next += self.window;
        }
        if stops.last().is_none_or(|s| s.at < limit) {
            stops.push(Stop {
                at: limit,
                exchange: false,
            });
        }
        (stops, next)
    }
}

impl Simulation {
    /// Runs both sides of a cut run to `limit`; at the end of the run,
    /// joins them.
    pub(crate) fn run_cut(&mut self, limit: Instant) {
        let mut cut = self.cut.take().expect("a cut run");
        let limit = limit.min(self.end);
        let (stops, next) = cut.plan(limit);
        let (fwd, rev, window) = (cut.fwd, cut.rev, cut.window);
        if cut.parallel {
            let far = &mut *cut.far;
            let (to_far, from_near) = sync_channel(1);
            let (to_near, from_far) = sync_channel(1);
            let far_stops = stops.clone();
            std::thread::scope(|s| {
                s.spawn(move || far.run_side(&far_stops, rev, fwd, window, &to_near, &from_near));
                // Owned here, so that a panic on this side drops them and
                // the other side's wait ends instead of hanging the scope.
                let (tx, rx) = (to_far, from_far);
                self.run_side(&stops, fwd, rev, window, &tx, &rx);
            });
        } else {
            for stop in &stops {
                self.run_local(stop.at);
                cut.far.run_local(stop.at);
                if stop.exchange {
                    let out = self.cut_batch(fwd, stop.at + window);
                    let back = cut.far.cut_batch(rev, stop.at + window);
                    cut.far.cut_accept(fwd, out);
                    self.cut_accept(rev, back);
                }
            }
        }
        cut.next = next;
        if self.now == self.end {
            self.join(*cut);
        } else {
            self.cut = Some(cut);
        }
    }

    /// One side's part of [`Self::run_cut`] on its own thread: `out` is the
    /// direction it sends across, `inn` the one it receives.
    fn run_side(
        &mut self,
        stops: &[Stop],
        out: usize,
        inn: usize,
        window: Duration,
        tx: &SyncSender<Batch>,
        rx: &Receiver<Batch>,
    ) {
        for stop in stops {
            self.run_local(stop.at);
            if stop.exchange {
                let batch = self.cut_batch(out, stop.at + window);
                // A send or receive fails only when the other side's thread
                // died (it panicked); the scope re-raises that panic.
                if tx.send(batch).is_err() {
                    return;
                }
                let Ok(back) = rx.recv() else {
                    return;
                };
                self.cut_accept(inn, back);
            }
        }
    }

    /// What crosses from this side at a window's end: the packets on
    /// direction `port` that arrive by `by`, and the agents' messages.
    fn cut_batch(&mut self, port: usize, by: Instant) -> Batch {
        let mut packets = Vec::new();
        self.ports[port]
            .link
            .take_arriving(self.now, by, &mut packets);
        let agents = self
            .agents
            .iter_mut()
            .enumerate()
            .filter_map(|(i, a)| a.agent.cut_send().map(|m| (i, m)))
            .collect();
        Batch { packets, agents }
    }

    /// Takes what the other side sent: its packets into direction `port`
    /// (to be delivered here at their arrival times), its agents' messages.
    fn cut_accept(&mut self, port: usize, b: Batch) {
        for (t, p) in b.packets {
            // Lookahead: nothing may cross later than it is due here.
            debug_assert!(t > self.now, "a packet due at {t} crossed at {}", self.now);
            self.ports[port].link.inject(t, p);
        }
        self.rearm_port(port);
        for (i, m) in b.agents {
            self.agents[i].agent.cut_receive(m);
        }
    }

    /// Moves the far side's state into this one at the end of the run.
    fn join(&mut self, cut: Cut) {
        let Cut {
            far,
            far_node,
            fwd,
            rev,
            ..
        } = cut;
        let mut far = *far;
        let far_port = |sim: &Simulation, i: usize| far_node[sim.ports[i ^ 1].to as usize];
        for i in 0..self.ports.len() {
            if far_port(self, i) {
                std::mem::swap(&mut self.ports[i], &mut far.ports[i]);
            }
        }
        // Each direction of the cut link was delivered by its far copy.
        for p in [fwd, rev] {
            self.ports[p].link.stats.delivered_packets = far.ports[p].link.stats.delivered_packets;
        }
        for m in 0..self.media.len() {
            let port = self.ports.iter().position(|p| p.medium == m as u32);
            if port.is_some_and(|i| far_port(self, i)) {
                std::mem::swap(&mut self.media[m], &mut far.media[m]);
            }
        }
        for (mine, theirs) in self.cpus.iter_mut().zip(far.cpus.iter_mut()) {
            if far_node[mine.node as usize] {
                std::mem::swap(mine, theirs);
            }
        }
        for (mine, theirs) in self.flows.iter_mut().zip(far.flows.iter_mut()) {
            if far_node[mine.src as usize] {
                std::mem::swap(&mut mine.sender, &mut theirs.sender);
                std::mem::swap(&mut mine.retransmissions, &mut theirs.retransmissions);
                mine.local_drops = theirs.local_drops;
                std::mem::swap(&mut mine.generator, &mut theirs.generator);
            }
            if far_node[mine.dst as usize] {
                std::mem::swap(&mut mine.sink, &mut theirs.sink);
                mine.reader_busy = theirs.reader_busy;
            }
        }
        for (mine, theirs) in self.agents.iter_mut().zip(far.agents.iter_mut()) {
            let on_far = mine.nodes.iter().filter(|&&n| far_node[n as usize]).count();
            if on_far == mine.nodes.len() {
                std::mem::swap(&mut mine.agent, &mut theirs.agent);
            } else if on_far > 0 {
                if let Some(state) = theirs.agent.cut_take() {
                    mine.agent.cut_join(state);
                }
            }
        }
        let flows = &self.flows;
        merge_metrics(
            &mut self.metrics,
            far.metrics,
            |port| far_port_static(&far_node, &self.ports, port),
            |flow| far_node[flows[flow as usize].dst as usize],
        );
        let agent_nodes: Vec<(bool, bool)> = self
            .agents
            .iter()
            .map(|a| {
                let on_far = a.nodes.iter().filter(|&&n| far_node[n as usize]).count();
                (
                    on_far == a.nodes.len(),
                    on_far > 0 && on_far < a.nodes.len(),
                )
            })
            .collect();
        self.agent_rows = merge_agent_rows(
            std::mem::take(&mut self.agent_rows),
            std::mem::take(&mut far.agent_rows),
            &agent_nodes,
        );
        self.traces.append(&mut far.traces);
        self.traces.sort_by_key(|t| t.index);
        // The far side's sampling events repeat the near side's.
        self.events += far.events - far.sampling_events;
    }
}

fn far_port_static(far_node: &[bool], ports: &[crate::sim::Port], i: u32) -> bool {
    far_node[ports[i as usize ^ 1].to as usize]
}

/// Each row from the side that owns what it measures: a link direction
/// from the side it leaves, goodput from the receiver's side, windows from
/// the sender's (the other side never starts that sender, so it has no
/// rows for it).
fn merge_metrics(
    near: &mut Metrics,
    far: Metrics,
    far_port: impl Fn(u32) -> bool,
    far_sink: impl Fn(u32) -> bool,
) {
    debug_assert_eq!(near.links.len(), far.links.len());
    for (mine, theirs) in near.links.iter_mut().zip(far.links) {
        debug_assert_eq!((mine.t, mine.port), (theirs.t, theirs.port));
        if far_port(mine.port) {
            *mine = theirs;
        }
    }
    for (mine, theirs) in near.queues.iter_mut().zip(far.queues) {
        if far_port(mine.port) {
            *mine = theirs;
        }
    }
    for (mine, theirs) in near.goodput.iter_mut().zip(far.goodput) {
        if far_sink(mine.flow) {
            *mine = theirs;
        }
    }
    near.cwnd = merge_sorted(std::mem::take(&mut near.cwnd), far.cwnd, |r| (r.t, r.flow));
    near.tseq = merge_sorted(std::mem::take(&mut near.tseq), far.tseq, |r| (r.t, r.flow));
}

/// Merges two lists sorted by `key`; on equal keys the near side's first.
fn merge_sorted<T, K: Ord>(a: Vec<T>, b: Vec<T>, key: impl Fn(&T) -> K) -> Vec<T> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let mut b = b.into_iter().peekable();
    for x in a {
        while b.peek().is_some_and(|y| key(y) < key(&x)) {
            out.extend(b.next());
        }
        out.push(x);
    }
    out.extend(b);
    out
}

/// Agent samples: an agent's rows from the side it sits on; a split
/// agent's two halves each report their share, and the shares add up.
/// `agents[i]` = (all on the far side, on both sides).
fn merge_agent_rows(
    near: Vec<AgentRow>,
    far: Vec<AgentRow>,
    agents: &[(bool, bool)],
) -> Vec<AgentRow> {
    debug_assert_eq!(near.len(), far.len());
    near.into_iter()
        .zip(far)
        .map(|(mut mine, theirs)| {
            debug_assert_eq!(
                (mine.t, mine.agent, mine.name),
                (theirs.t, theirs.agent, theirs.name)
            );
            match agents[mine.agent as usize] {
                (true, _) => theirs,
                (_, true) => {
                    mine.value += theirs.value;
                    mine
                }
                _ => mine,
            }
        })
        .collect()
}
