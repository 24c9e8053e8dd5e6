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

/// What one side hands the other at a window's end. Sent back and forth,
/// so that each side fills the other's emptied vectors next time.
#[derive(Default)]
pub(crate) struct Batch {
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

    fn stops(&self, limit: Instant) -> Stops {
        Stops {
            next: self.next,
            window: self.window,
            limit,
            done: false,
        }
    }
}

/// The stops from a window's end to a limit: every window's end up to it,
/// then the limit itself unless it is one.
#[derive(Clone, Copy)]
struct Stops {
    next: Instant,
    window: Duration,
    limit: Instant,
    done: bool,
}

impl Iterator for Stops {
    type Item = Stop;
    fn next(&mut self) -> Option<Stop> {
        if self.done {
            return None;
        }
        if self.next <= self.limit {
            let at = self.next;
            self.next += self.window;
            self.done = at == self.limit;
            return Some(Stop { at, exchange: true });
        }
        self.done = true;
        Some(Stop {
            at: self.limit,
            exchange: false,
        })
    }
}

impl Stops {
    /// The first window's end past the limit.
    fn after(mut self) -> Instant {
        self.by_ref().for_each(drop);
        self.next
    }
}

/// Port `i` sends from a far-side node (its reverse arrives there).
fn leaves_far(far_node: &[bool], ports: &[crate::sim::Port], i: usize) -> bool {
    far_node[ports[i ^ 1].to as usize]
}

impl Simulation {
    /// Runs both sides of a cut run to `limit`; at the end of the run,
    /// joins them.
    pub(crate) fn run_cut(&mut self, limit: Instant) {
        let mut cut = self.cut.take().expect("a cut run");
        let limit = limit.min(self.end);
        let stops = cut.stops(limit);
        let (fwd, rev, window) = (cut.fwd, cut.rev, cut.window);
        if cut.parallel {
            let far = &mut *cut.far;
            // Room for two: a side may hand over its next batch before the
            // other has taken the last one.
            let (to_far, from_near) = sync_channel(2);
            let (to_near, from_far) = sync_channel(2);
            std::thread::scope(|s| {
                s.spawn(move || far.run_side(stops, rev, fwd, window, &to_near, &from_near));
                // Owned here, so that a panic on this side drops them and
                // the other side's wait ends instead of hanging the scope.
                let (tx, rx) = (to_far, from_far);
                self.run_side(stops, fwd, rev, window, &tx, &rx);
            });
        } else {
            for stop in stops {
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
        cut.next = stops.after();
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
        stops: Stops,
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
        let mut b = self.cut_spare.take().unwrap_or_default();
        self.ports[port]
            .link
            .take_arriving(self.now, by, &mut b.packets);
        b.agents.extend(
            self.agents
                .iter_mut()
                .enumerate()
                .filter_map(|(i, a)| a.agent.cut_send().map(|m| (i, m))),
        );
        b
    }

    /// Takes what the other side sent: its packets into direction `port`
    /// (to be delivered here at their arrival times), its agents' messages.
    /// Keeps the emptied batch for this side's next one.
    fn cut_accept(&mut self, port: usize, mut b: Batch) {
        for (t, p) in b.packets.drain(..) {
            // Lookahead: nothing may cross later than it is due here.
            debug_assert!(t > self.now, "a packet due at {t} crossed at {}", self.now);
            self.ports[port].link.inject(t, p);
        }
        self.rearm_port(port);
        for (i, m) in b.agents.drain(..) {
            self.agents[i].agent.cut_receive(m);
        }
        self.cut_spare = Some(b);
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
        for i in 0..self.ports.len() {
            if leaves_far(&far_node, &self.ports, i) {
                std::mem::swap(&mut self.ports[i], &mut far.ports[i]);
            }
        }
        // Each direction of the cut link was delivered by its far copy.
        for p in [fwd, rev] {
            self.ports[p].link.stats.delivered_packets = far.ports[p].link.stats.delivered_packets;
        }
        for m in 0..self.media.len() {
            let port = self.ports.iter().position(|p| p.medium == m as u32);
            if port.is_some_and(|i| leaves_far(&far_node, &self.ports, i)) {
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
        // Per agent: (all on the far side, on both sides).
        let agent_sides: Vec<(bool, bool)> = self
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
        for ((mine, theirs), &sides) in self
            .agents
            .iter_mut()
            .zip(&mut far.agents)
            .zip(&agent_sides)
        {
            match sides {
                (true, _) => std::mem::swap(&mut mine.agent, &mut theirs.agent),
                (_, true) => {
                    if let Some(state) = theirs.agent.cut_take() {
                        mine.agent.cut_join(state);
                    }
                }
                _ => {}
            }
        }
        let flows = &self.flows;
        merge_metrics(
            &mut self.metrics,
            far.metrics,
            |port| leaves_far(&far_node, &self.ports, port as usize),
            |flow| far_node[flows[flow as usize].dst as usize],
        );
        self.agent_rows = merge_agent_rows(
            std::mem::take(&mut self.agent_rows),
            std::mem::take(&mut far.agent_rows),
            &agent_sides,
        );
        self.traces.append(&mut far.traces);
        self.traces.sort_by_key(|t| t.index);
        // The far side's sampling events repeat the near side's.
        self.events += far.events - far.sampling_events;
    }
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

#[cfg(test)]
mod tests {
    use std::sync::mpsc::sync_channel;

    use super::*;
    use crate::scenario::Scenario;

    /// The loading tests' host - router - host line, 2 s, cut at its
    /// 10 ms link.
    fn near() -> (Simulation, Stops) {
        let text = crate::scenario::tests::base_with(
            "duration = \"10s\"\n",
            "duration = \"2s\"\ncut = \"r-b\"\n",
        );
        let sc = Scenario::from_toml_str(&text, "line.toml").unwrap();
        let sim = Simulation::new(&sc);
        let stops = sim.cut.as_ref().unwrap().stops(sim.end);
        (sim, stops)
    }

    #[test]
    fn stops_end_at_the_limit_with_an_exchange_at_every_window() {
        let (sim, stops) = near();
        let all: Vec<(u64, bool)> = stops
            .map(|s| (s.at.as_nanos() / 1_000_000, s.exchange))
            .collect();
        // 2 s in windows of 10 ms: 200 exchanges, the last at the end.
        assert_eq!(all.len(), 200);
        assert!(all.iter().all(|&(_, x)| x));
        assert_eq!(all[0].0, 10);
        assert_eq!(all[199].0, 2000);
        let short = sim
            .cut
            .as_ref()
            .unwrap()
            .stops(Instant::ZERO + Duration::from_millis(25));
        let at: Vec<(u64, bool)> = short
            .map(|s| (s.at.as_nanos() / 1_000_000, s.exchange))
            .collect();
        assert_eq!(at, vec![(10, true), (20, true), (25, false)]);
        assert_eq!(short.after(), Instant::ZERO + Duration::from_millis(30));
    }

    /// What a side does when the other's thread has died (dropping its
    /// channel ends as it unwinds): it stops waiting and returns, so the
    /// thread scope can re-raise the panic instead of hanging.
    #[test]
    fn a_side_stops_when_the_other_side_is_gone() {
        for gone in ["sender", "receiver"] {
            let (mut sim, stops) = near();
            let (fwd, rev, window) = {
                let c = sim.cut.as_ref().unwrap();
                (c.fwd, c.rev, c.window)
            };
            let (tx, their_rx) = sync_channel(2);
            let (their_tx, rx) = sync_channel::<Batch>(2);
            match gone {
                "sender" => drop(their_tx),
                _ => drop(their_rx),
            }
            let (done, finished) = sync_channel(1);
            std::thread::spawn(move || {
                sim.run_side(stops, fwd, rev, window, &tx, &rx);
                done.send(sim.now).unwrap();
            });
            let now = finished
                .recv_timeout(std::time::Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("the side waited for a {gone} that is gone"));
            // It ran its first window, then found the other side gone.
            assert_eq!(now, Instant::ZERO + Duration::from_millis(10), "{gone}");
        }
    }
}
