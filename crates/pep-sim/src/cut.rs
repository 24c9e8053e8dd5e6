//! A run cut in two at one link (`scenario.cut`), each side on its own
//! thread: conservative parallel simulation with the link's delay as the
//! lookahead.
//!
//! Each side is a whole [`Simulation`] built from the scenario that runs
//! only its own nodes: flows start where their sender is, agents wake where
//! they sit, and an agent on both ends of the link runs as two halves
//! ([`crate::agent::NodeAgent::cut`]). Nothing crosses the link sooner than
//! its delay `d` (the lookahead). The sides stop to exchange every
//! `s = d / STEPS` of simulated time (fewer stops per `d` for a link
//! shorter than `STEPS` times 10 ms): at a stop `W`, each side hands the
//! other the packets its direction of the link has finished sending that
//! arrive by `W + d` ([`LinkDir::take_arriving`]), plus whatever the split
//! agents exchange. Those packets all arrive after `W + d - s`, so the
//! other side needs them only when it stops there: it takes them in then,
//! `STEPS - 1` stops later, putting them in its copy of the direction
//! ([`LinkDir::inject`]) to deliver at their times. Nothing arrives late,
//! and either side may run up to `d - s` ahead of the other: a side waits
//! only when the other falls that far behind, not whenever one stretch of
//! its work is longer, as with one exchange per `d`.
//!
//! The near-to-far direction's queue and transmitter run on the far side
//! (unless a capture records that direction): the near side only offers
//! what it sends on it, with the time, and marks where its sampling events
//! fell among the offers; the far side replays both in that order when it
//! takes a batch in, then runs the transmitter up to the stop the batch
//! was sent at ([`Simulation::replay`]). Nothing on the near side reads
//! that queue, so the run is the same, and the near side, which carries
//! the senders and split start, has that much less to do.
//!
//! Each side's events keep their order by (time, order scheduled) within
//! the side, and a batch is always taken in at the same stop, so a cut run
//! is deterministic and the same on one thread or two
//! ([`Simulation::set_parallel`]). It is not byte-identical to the uncut
//! run: events at the same nanosecond on one side may now run in another
//! order relative to an arrival from the other side.
//!
//! When the run reaches its end, the far side's state is moved into the
//! near one ([`Simulation`] `join`), so summaries, series and traces read
//! as for an uncut run.
//!
//! [`LinkDir::take_arriving`]: pep_core::link::LinkDir::take_arriving
//! [`LinkDir::inject`]: pep_core::link::LinkDir::inject

use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::OnceLock;

use pep_core::{Duration, Instant};

use crate::agent::CutMessage;
use crate::metrics::{LinkRow, Metrics, QueueRow};
use crate::packet::Packet;
use crate::scenario::CutSpec;
use crate::sim::{AgentRow, Simulation, FED, NONE};

/// Stops per lookahead: a side may run `STEPS - 1` stops ahead of the
/// other. More stops smooth out more of the two sides' uneven stretches
/// of work, at a channel hand-over each (docs/simulator.md has the
/// measurements).
const STEPS: u64 = 5;
/// Fewer stops per lookahead where they would come more often than this:
/// a short link's lookahead already means many hand-overs.
const MIN_STEP_NS: u64 = 10_000_000;

/// The far side of a cut run, held by the near side.
pub(crate) struct Cut {
    far: Box<Simulation>,
    /// `far_node[n]`: node `n` runs on the far side.
    far_node: Vec<bool>,
    /// The cut link's near-to-far direction and its reverse.
    fwd: usize,
    rev: usize,
    plan: Plan,
    /// The next stop.
    next: Instant,
    /// Run the sides on two threads (else alternately on one).
    parallel: bool,
    /// The near-to-far direction's transmitter runs on the far side
    /// (decided at the first run: not with a capture of that direction).
    remote: Option<bool>,
}

/// A sampling event on the side that offers, and how many offers came
/// before it in the batch: the side that transmits replays it there.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mark {
    before: u32,
    at: Instant,
    kind: MarkKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MarkKind {
    /// Queue lengths sampled.
    Sample,
    /// A bin of link use closed.
    Bin,
}

/// The side that runs the near side's transmitter: what its replay of the
/// other side's sampling events has written so far.
#[derive(Debug, Default)]
pub(crate) struct Fed {
    port: usize,
    samples: usize,
    bins: usize,
    last_bin: Instant,
    last_bytes: u64,
    last_busy: u64,
}

/// When the sides stop to exchange, and when they take in what the other
/// sent.
#[derive(Clone, Copy, Debug)]
struct Plan {
    /// The shorter of the link's two delays.
    lookahead: Duration,
    /// Time between stops.
    step: Duration,
    /// Stops per lookahead (at least 1): the batch sent at stop `i` is
    /// taken in at stop `i + lag - 1`.
    lag: u64,
}

impl Plan {
    fn new(lookahead: Duration) -> Plan {
        let steps = (lookahead.as_nanos() / MIN_STEP_NS).clamp(1, STEPS);
        let step = Duration::from_nanos((lookahead.as_nanos() / steps).max(1));
        Plan {
            lookahead,
            step,
            lag: (lookahead.as_nanos() / step.as_nanos()).max(1),
        }
    }

    /// How many of the other side's batches a side must have taken in when
    /// it leaves the stop at `at`: those whose packets may arrive before
    /// the next stop.
    fn due(&self, at: Instant) -> u64 {
        (at.as_nanos() / self.step.as_nanos() + 1).saturating_sub(self.lag)
    }
}

/// What one side hands the other at a stop. Sent back and forth,
/// so that each side fills the other's emptied vectors next time.
#[derive(Default)]
pub(crate) struct Batch {
    /// The stop it was sent at.
    at: Instant,
    /// Arrival time and packet, in arrival order.
    packets: Vec<(Instant, Packet)>,
    /// Packets offered to the transmitter the other side runs, with the
    /// times they were sent, and the sampling events among them.
    offers: Vec<(Instant, Packet)>,
    marks: Vec<Mark>,
    /// Agent index and its message.
    agents: Vec<(usize, CutMessage)>,
}

/// Where one run segment stops: a step (exchange) or the caller's
/// limit.
#[derive(Clone, Copy)]
struct Stop {
    at: Instant,
    exchange: bool,
}

impl Cut {
    pub(crate) fn new(spec: &CutSpec, far: Simulation, lookahead: Duration) -> Cut {
        let plan = Plan::new(lookahead);
        Cut {
            far: Box::new(far),
            far_node: spec.far.clone(),
            fwd: spec.link * 2,
            rev: spec.link * 2 + 1,
            plan,
            next: Instant::ZERO + plan.step,
            parallel: std::thread::available_parallelism().is_ok_and(|n| n.get() > 1),
            remote: None,
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
            step: self.plan.step,
            limit,
            done: false,
        }
    }
}

/// The stops from the next one to a limit: every step up to it, then the
/// limit itself unless it is a step.
#[derive(Clone, Copy)]
struct Stops {
    next: Instant,
    step: Duration,
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
            self.next += self.step;
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
    /// The first step past the limit.
    fn after(mut self) -> Instant {
        self.by_ref().for_each(drop);
        self.next
    }
}

/// Port `i` sends from a far-side node (its reverse arrives there).
fn leaves_far(far_node: &[bool], ports: &[crate::sim::Port], i: usize) -> bool {
    far_node[ports[i ^ 1].to as usize]
}

/// Waits for the other side's next batch, polling before it blocks.
///
/// The side with less work waits at most of its stops, tens of
/// microseconds each. Parked in the channel, it costs the other side a wake-up system
/// call at each of its sends (40,000 in a 2000 s ftp50-pep run, about
/// half a second of kernel time on that side, which is the one the run
/// waits for) and wakes late itself. Polling keeps it on its core. Only
/// with two cores or more: on one, the poll would hold the core the other
/// side needs. A count, not a clock: nothing in the simulator reads the
/// wall clock.
fn receive(rx: &Receiver<Batch>) -> Option<Batch> {
    for _ in 0..polls() {
        match rx.try_recv() {
            Ok(b) => return Some(b),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => std::hint::spin_loop(),
        }
    }
    rx.recv().ok()
}

/// How many times [`receive`] polls: up to a millisecond or so.
fn polls() -> u32 {
    static POLLS: OnceLock<u32> = OnceLock::new();
    *POLLS.get_or_init(|| match std::thread::available_parallelism() {
        Ok(n) if n.get() >= 2 => 20_000,
        _ => 0,
    })
}

impl Simulation {
    /// Runs both sides of a cut run to `limit`; at the end of the run,
    /// joins them.
    pub(crate) fn run_cut(&mut self, limit: Instant) {
        let mut cut = self.cut.take().expect("a cut run");
        if cut.remote.is_none() {
            self.prepare_remote(&mut cut);
        }
        let limit = limit.min(self.end);
        let stops = cut.stops(limit);
        let (fwd, rev, plan) = (cut.fwd, cut.rev, cut.plan);
        if cut.parallel {
            let far = &mut *cut.far;
            // Room for every batch a side can be ahead by, so that a send
            // never waits (see `run_side`).
            let room = 2 * plan.lag as usize;
            let (to_far, from_near) = sync_channel(room);
            let (to_near, from_far) = sync_channel(room);
            let from_near = std::thread::scope(|s| {
                let other = s.spawn(move || {
                    far.run_side(stops, rev, fwd, plan, &to_near, &from_near);
                    from_near
                });
                // Owned here, so that a panic on this side drops them and
                // the other side's wait ends instead of hanging the scope.
                let (tx, rx) = (to_far, from_far);
                self.run_side(stops, fwd, rev, plan, &tx, &rx);
                let other = other.join();
                // Batches a side has not needed yet wait for the next call
                // (the other side has sent all it will once it is done).
                self.cut_pending.extend(rx.try_iter());
                other
            });
            match from_near {
                Ok(rx) => cut.far.cut_pending.extend(rx.try_iter()),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        } else {
            for stop in stops {
                self.run_local(stop.at);
                cut.far.run_local(stop.at);
                if stop.exchange {
                    let out = self.cut_batch(fwd, stop.at + plan.lookahead);
                    let back = cut.far.cut_batch(rev, stop.at + plan.lookahead);
                    cut.far.cut_pending.push_back(out);
                    self.cut_pending.push_back(back);
                    // On one thread every batch due has been sent.
                    let due = plan.due(stop.at);
                    let near_in = self.take_in(rev, due, None);
                    let far_in = cut.far.take_in(fwd, due, None);
                    debug_assert!(near_in && far_in);
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

    /// One side of [`Self::run_cut`] on its own thread: `out` is the
    /// direction it sends across, `inn` the one it receives.
    ///
    /// It sends a batch at every stop and waits only for the batches due
    /// (`Plan::due`), so it runs at most `lag - 1` stops ahead of the
    /// other side; the other side's unreceived batches are then at most
    /// `2 lag - 2`, which the channels have room for.
    fn run_side(
        &mut self,
        stops: Stops,
        out: usize,
        inn: usize,
        plan: Plan,
        tx: &SyncSender<Batch>,
        rx: &Receiver<Batch>,
    ) {
        for stop in stops {
            self.run_local(stop.at);
            if stop.exchange {
                let batch = self.cut_batch(out, stop.at + plan.lookahead);
                // A send or receive fails only when the other side's thread
                // died (it panicked); the scope re-raises that panic.
                if tx.send(batch).is_err() || !self.take_in(inn, plan.due(stop.at), Some(rx)) {
                    return;
                }
            }
        }
    }

    /// Takes in the other side's batches until `due` have been: first
    /// those already received, then (on two threads) from `rx`, waiting
    /// for them. False if the other side is gone.
    fn take_in(&mut self, port: usize, due: u64, rx: Option<&Receiver<Batch>>) -> bool {
        while self.cut_taken < due {
            let next = self.cut_pending.pop_front();
            let Some(b) = next.or_else(|| receive(rx?)) else {
                return false;
            };
            self.cut_accept(port, b);
        }
        true
    }

    /// What crosses from this side at a stop: the packets on direction
    /// `port` that arrive by `by`, and the agents' messages.
    fn cut_batch(&mut self, port: usize, by: Instant) -> Batch {
        let mut b = self.cut_spare.take().unwrap_or_default();
        b.at = self.now;
        if self.cut_offering {
            // The emptied vectors go back to fill with the next stop's.
            std::mem::swap(&mut b.offers, &mut self.cut_offers);
            std::mem::swap(&mut b.marks, &mut self.cut_marks);
        } else {
            self.ports[port]
                .link
                .take_arriving(self.now, by, &mut b.packets);
        }
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
        // Even with no offers: the transmitter moves on to the stop.
        self.replay(&mut b.offers, &mut b.marks, b.at);
        self.rearm_port(port);
        for (i, m) in b.agents.drain(..) {
            self.agents[i].agent.cut_receive(m);
        }
        self.cut_spare = Some(b);
        self.cut_taken += 1;
    }

    /// At the first run: unless a capture on this side records the cut
    /// link's near-to-far direction, its transmitter moves to the far side
    /// (the side that sends on it now only offers packets), which evens
    /// out the two sides' work. The result is the same: nothing on the
    /// sending side reads that direction's queue, and the far side replays
    /// the offers and this side's sampling events in their order.
    fn prepare_remote(&mut self, cut: &mut Cut) {
        let fwd = cut.fwd;
        let traced = self.traces.iter().any(|t| t.ports.contains(&fwd));
        let remote = self.ports[fwd].medium == NONE && !traced;
        cut.remote = Some(remote);
        if !remote {
            return;
        }
        self.hops.offer(fwd as u32);
        self.cut_offering = true;
        let far = &mut *cut.far;
        far.ports[fwd].medium = FED;
        far.cut_fed = Some(Box::new(Fed {
            port: fwd,
            ..Fed::default()
        }));
    }

    /// A packet sent on the cut link's direction whose transmitter runs on
    /// the other side: it goes there with the next batch.
    #[cold]
    #[inline(never)]
    pub(crate) fn offer(&mut self, p: Packet) {
        self.cut_offers.push((self.now, p));
    }

    /// A sampling event here, placed among the offers.
    #[cold]
    pub(crate) fn mark(&mut self, kind: MarkKind) {
        self.cut_marks.push(Mark {
            before: self.cut_offers.len() as u32,
            at: self.now,
            kind,
        });
    }

    /// The fed direction's arrivals due now (see [`Self::replay`]: its
    /// transmitter is already as far as it can be).
    pub(crate) fn on_fed_link(&mut self, i: usize) {
        let now = self.now;
        let to = self.ports[i].to;
        let deadline = loop {
            match self.ports[i].link.deliver_or_deadline(now) {
                Ok(p) => self.arrive(to, p),
                Err(d) => break d,
            }
        };
        // The replay completed every transmission whose packet is due by
        // now (debug builds check): the deadline is a later arrival.
        debug_assert!(deadline.is_none_or(|t| t > now), "fed link behind at {now}");
        self.arm_port(i, deadline.filter(|&t| t > now));
    }

    /// Runs the fed direction's transmitter through the other side's
    /// offers and sampling events in their order (as `send` and the
    /// sampling events would have there), then as far as they reach:
    /// `until`, the stop they were sent at: every offer before it is in.
    fn replay(
        &mut self,
        offers: &mut Vec<(Instant, Packet)>,
        marks: &mut Vec<Mark>,
        until: Instant,
    ) {
        let Some(mut fed) = self.cut_fed.take() else {
            return;
        };
        let port = fed.port;
        let from = self.ports[port ^ 1].to;
        let mut marks_left = marks.drain(..).peekable();
        for (k, (t, p)) in offers.drain(..).enumerate() {
            while let Some(m) = marks_left.next_if(|m| m.before as usize <= k) {
                self.replay_mark(&mut fed, m);
            }
            self.enqueue_on(port, from, t, p);
        }
        for m in marks_left {
            self.replay_mark(&mut fed, m);
        }
        self.ports[port].link.advance(until);
        self.cut_fed = Some(fed);
    }

    /// Writes the fed direction's rows of a sampling event the other side
    /// had, over the placeholders this side's own event wrote.
    fn replay_mark(&mut self, fed: &mut Fed, m: Mark) {
        let port = fed.port;
        let link = &mut self.ports[port].link;
        link.advance(m.at);
        let n = self.ports.len();
        let link = &self.ports[port].link;
        match m.kind {
            MarkKind::Sample => {
                if self.metrics.series.queues {
                    let row = &mut self.metrics.queues[fed.samples * n + port];
                    debug_assert_eq!((row.t, row.port as usize), (m.at, port));
                    *row = QueueRow {
                        t: m.at,
                        port: port as u32,
                        packets: link.queue.len_packets() as u32,
                        bytes: link.queue.len_bytes(),
                    };
                }
                fed.samples += 1;
            }
            MarkKind::Bin => {
                let bin = m.at - fed.last_bin;
                // `close_bin` writes nothing for an empty bin.
                if bin == Duration::ZERO {
                    return;
                }
                let s = link.stats;
                if self.metrics.series.links {
                    let row = &mut self.metrics.links[fed.bins * n + port];
                    debug_assert_eq!((row.t, row.port as usize), (m.at, port));
                    *row = LinkRow {
                        t: m.at,
                        bin,
                        port: port as u32,
                        bytes: s.tx_bytes - fed.last_bytes,
                        busy_ns: (s.busy_ns - fed.last_busy).min(bin.as_nanos()),
                    };
                }
                fed.bins += 1;
                fed.last_bin = m.at;
                fed.last_bytes = s.tx_bytes;
                fed.last_busy = s.busy_ns;
            }
        }
    }

    /// Moves the far side's state into this one at the end of the run.
    fn join(&mut self, cut: Cut) {
        let Cut {
            far,
            far_node,
            fwd,
            rev,
            remote,
            ..
        } = cut;
        let mut far = *far;
        // The last stops' batches were never due: their packets arrive
        // after the end, but offers, sampling events and the agents'
        // messages are state to join.
        for side in [&mut *self, &mut far] {
            for mut b in std::mem::take(&mut side.cut_pending) {
                side.replay(&mut b.offers, &mut b.marks, b.at);
                for (i, m) in b.agents {
                    side.agents[i].agent.cut_receive(m);
                }
            }
        }
        // And what this side offered since its last stop.
        let (mut offers, mut marks) = (
            std::mem::take(&mut self.cut_offers),
            std::mem::take(&mut self.cut_marks),
        );
        let end = far.end;
        far.replay(&mut offers, &mut marks, end);
        let remote = remote == Some(true);
        if remote {
            // Its transmitter ran on the far side, and so did its samples.
            std::mem::swap(&mut self.ports[fwd], &mut far.ports[fwd]);
            self.ports[fwd].medium = NONE;
        }
        for i in 0..self.ports.len() {
            if leaves_far(&far_node, &self.ports, i) {
                std::mem::swap(&mut self.ports[i], &mut far.ports[i]);
            }
        }
        // Each direction of the cut link was delivered by its far copy.
        for p in [fwd, rev].into_iter().filter(|&p| !(remote && p == fwd)) {
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
            } else {
                // Refused by the cut link's queue, run on the far side.
                mine.local_drops += theirs.local_drops;
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
            |port| {
                (remote && port as usize == fwd)
                    || leaves_far(&far_node, &self.ports, port as usize)
            },
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
    fn stops_end_at_the_limit_with_an_exchange_at_every_step() {
        let (sim, stops) = near();
        let all: Vec<(u64, bool)> = stops
            .map(|s| (s.at.as_nanos() / 1_000_000, s.exchange))
            .collect();
        // 2 s in steps of 10 ms (the link's delay: one stop per
        // lookahead on so short a link): 200 exchanges, the last at the end.
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

    /// A batch is taken in `lag - 1` stops after it was sent: the last stop
    /// before its earliest packet can arrive.
    #[test]
    fn batches_are_taken_in_at_the_last_stop_before_they_are_needed() {
        let ms = Duration::from_millis;
        let at = |t: u64| Instant::ZERO + ms(t);
        // The Gschwandtner split link: five stops per 250 ms.
        let plan = Plan::new(ms(250));
        assert_eq!((plan.step, plan.lag), (ms(50), 5));
        // Stops 1 to 4 (50 to 200 ms) need nothing yet; stop 5 (250 ms)
        // needs the batch of stop 1, whose packets arrive after 50 +
        // 250 - 50 ms.
        assert_eq!(plan.due(at(200)), 0);
        assert_eq!(plan.due(at(250)), 1);
        assert_eq!(plan.due(at(2_000_000)), 39_996);
        // Shorter links: no stop closer than 10 ms to the next.
        let thirty = Plan::new(ms(30));
        assert_eq!((thirty.step, thirty.lag), (ms(10), 3));
        let ten = Plan::new(ms(10));
        assert_eq!((ten.step, ten.lag), (ms(10), 1));
        assert_eq!(ten.due(at(10)), 1);
        let tiny = Plan::new(Duration::from_nanos(3));
        assert_eq!((tiny.step.as_nanos(), tiny.lag), (3, 1));
        // Not a multiple of the step: the lag rounds down (taken in early).
        let odd = Plan::new(ms(47));
        assert_eq!((odd.step.as_nanos(), odd.lag), (11_750_000, 4));
    }

    /// The near-to-far direction's transmitter runs on the far side: the
    /// near copy of the link never transmits, the far copy does, and the
    /// joined run has the far copy's counters and rows.
    #[test]
    fn the_cut_links_transmitter_runs_on_the_far_side() {
        let (mut sim, _) = near();
        sim.set_parallel(false);
        sim.run_until(Instant::ZERO + Duration::from_millis(500));
        let c = sim.cut.as_ref().unwrap();
        assert_eq!(c.remote, Some(true));
        let fwd = c.fwd;
        assert_eq!(sim.ports[fwd].link.stats.tx_packets, 0);
        assert!(c.far.ports[fwd].link.stats.tx_packets > 0);
        sim.run();
        assert!(!sim.is_cut());
        let joined = sim.ports[fwd].link.stats;
        assert!(joined.tx_packets > 0 && joined.delivered_packets > 0);
        // Everything sent was delivered but what was still on the link.
        assert!(
            joined.tx_packets - joined.delivered_packets < 20,
            "{joined:?}"
        );
    }

    /// What a side does when the other's thread has died (dropping its
    /// channel ends as it unwinds): it stops waiting and returns, so the
    /// thread scope can re-raise the panic instead of hanging.
    #[test]
    fn a_side_stops_when_the_other_side_is_gone() {
        // A gone receiver fails the first stop's send; a gone sender, the
        // first wait for a batch (the same stop's: one stop per lookahead
        // on this 10 ms link).
        for (gone, stopped_ms) in [("sender", 10), ("receiver", 10)] {
            let (mut sim, stops) = near();
            let (fwd, rev, plan) = {
                let c = sim.cut.as_ref().unwrap();
                (c.fwd, c.rev, c.plan)
            };
            let (tx, their_rx) = sync_channel(10);
            let (their_tx, rx) = sync_channel::<Batch>(10);
            match gone {
                "sender" => drop(their_tx),
                _ => drop(their_rx),
            }
            let (done, finished) = sync_channel(1);
            std::thread::spawn(move || {
                sim.run_side(stops, fwd, rev, plan, &tx, &rx);
                done.send(sim.now).unwrap();
            });
            let now = finished
                .recv_timeout(std::time::Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("the side waited for a {gone} that is gone"));
            assert_eq!(
                now,
                Instant::ZERO + Duration::from_millis(stopped_ms),
                "{gone}"
            );
        }
    }
}
