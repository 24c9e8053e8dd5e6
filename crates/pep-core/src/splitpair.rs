//! # Distributed split-connection PEP (Gschwandtner 2009)
//!
//! Two PEP nodes at the ends of a long fat pipe. *Split start* terminates
//! every sender's connection behind a local queue; all flows' bytes go over
//! ONE tunnel connection to *split end*, which hands each flow's bytes to
//! its own connection toward the receiver. This module holds the two pieces
//! of that design that are not TCP:
//!
//! * [`Credit`]: the thesis's flow control at split start (section 3.2,
//!   5.1.2). The tunnel sender holds `buffer_count_`, starting at
//!   `buffer_start_`. Its `output()` adds the size of **every** packet it
//!   sends, retransmissions included (the thesis modifies `output()`, which
//!   ns-2 calls for retransmissions too). A packet leaves the local queue
//!   for the receiving stack only while `buffer_count_` is at least one
//!   packet (`packet_size_ + header_size_`), and each one taken subtracts
//!   its size. Without retransmissions, `buffer_count_` plus the bytes
//!   written to the tunnel and not yet sent stays equal to `buffer_start_`,
//!   so the tunnel's unsent backlog never exceeds `buffer_start_`; each
//!   retransmitted byte raises that bound by one byte for good.
//!   Two ways to decide *when* to look at the queue:
//!   [`CheckMode::Poll`] is the thesis's `SendTimer`: `checkSend()` runs
//!   every `send_check_interval_` and loops while the queue has packets and
//!   the credit allows. [`CheckMode::Event`] needs no timer: the only
//!   events that can make a check succeed are an arrival at the local queue
//!   and a tunnel transmission (credit grows only in `output()`), so the
//!   driver checks right after each. The thesis's argument against events
//!   (section 5.1.2: forwarding events lost while the tunnel is congested)
//!   does not apply when the credit increase itself is an event.
//! * [`Framing`]: the `recv_`/`send_` tables. The thesis moves one source
//!   address per packet from split start to split end in a `pepid_` header
//!   field. Here the tunnel is a byte stream, and the table is the ordered
//!   list of (flow, bytes) chunks in tunnel stream order; split end walks it
//!   as the tunnel delivers in-order bytes. As the thesis's `SplitManager`,
//!   one table is shared by both nodes (it is what an in-band frame header
//!   would carry); a real two-node deployment would send it in band.
//!
//! All sizes are bytes on the wire (payload plus header), as the thesis's
//! `buffer_start_ = 200 * 1040`.

use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;

use crate::time::{Duration, Instant};

/// When split start looks at its local queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckMode {
    /// `checkSend()` every `interval` (the thesis: 10 ms in table 5.1, 1 ms
    /// in chapter 3, 3 ms in the example script).
    Poll { interval: Duration },
    /// After every arrival and every tunnel transmission; no timer.
    Event,
}

/// Credit parameters (the thesis's `SplitManager` fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CreditConfig {
    /// `buffer_start_`: initial credit in bytes. Thesis default 200 x 1040.
    pub buffer_start: u64,
    /// `packet_size_ + header_size_`: the credit a dequeue needs.
    pub packet: u32,
    pub mode: CheckMode,
}

impl Default for CreditConfig {
    fn default() -> Self {
        CreditConfig {
            buffer_start: 200 * 1040,
            packet: 1040,
            mode: CheckMode::Poll {
                interval: Duration::from_millis(10),
            },
        }
    }
}

/// Counters of the credit gate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CreditStats {
    /// Packets let through into the receiving stack, and their bytes.
    pub admitted: u64,
    pub admitted_bytes: u64,
    /// Bytes of credit added by tunnel transmissions, and of those by
    /// retransmissions.
    pub added_bytes: u64,
    pub added_retx_bytes: u64,
    /// `checkSend()` runs (polling) or checks after an event.
    pub checks: u64,
    /// Checks that found packets waiting but too little credit.
    pub blocked_checks: u64,
}

/// What [`Credit::check`] drains: the local queue and what happens to a
/// packet it lets through.
pub trait LocalQueue {
    /// Packets are waiting.
    fn waiting(&self) -> bool;
    /// Takes the next packet and hands it to the receiving stack; returns
    /// its wire size.
    fn admit_next(&mut self) -> Option<u32>;
}

/// Split start's credit (`buffer_count_`) and its check schedule.
#[derive(Clone, Debug)]
pub struct Credit {
    cfg: CreditConfig,
    /// May go below zero by less than one packet when a dequeued packet is
    /// larger than `packet` (the check is against `packet`, as the thesis).
    buffer_count: i64,
    next_check: Option<Instant>,
    stats: CreditStats,
}

impl Credit {
    /// A gate starting at `now` with `buffer_start` credit. With polling,
    /// the first check is one interval after `now`.
    pub fn new(cfg: CreditConfig, now: Instant) -> Self {
        let next_check = match cfg.mode {
            CheckMode::Poll { interval } => Some(now + interval),
            CheckMode::Event => None,
        };
        Credit {
            cfg,
            buffer_count: cfg.buffer_start as i64,
            next_check,
            stats: CreditStats::default(),
        }
    }

    /// The tunnel sent a packet of `wire` bytes (`output()`): credit grows,
    /// retransmission or not.
    #[inline]
    pub fn on_output(&mut self, wire: u32, retransmission: bool) {
        self.buffer_count += wire as i64;
        self.stats.added_bytes += wire as u64;
        if retransmission {
            self.stats.added_retx_bytes += wire as u64;
        }
    }

    /// Enough credit to take one more packet.
    #[inline]
    pub fn allows(&self) -> bool {
        self.buffer_count >= self.cfg.packet as i64
    }

    /// A packet of `wire` bytes left the local queue.
    #[inline]
    pub fn take(&mut self, wire: u32) {
        self.buffer_count -= wire as i64;
        self.stats.admitted += 1;
        self.stats.admitted_bytes += wire as u64;
    }

    /// Whether the driver should check the queue after an arrival or a
    /// tunnel transmission (event mode only).
    #[inline]
    pub fn checks_on_events(&self) -> bool {
        self.cfg.mode == CheckMode::Event
    }

    /// The `SendTimer` deadline (polling only).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.next_check
    }

    /// The timer fired: returns true if `checkSend()` runs now, and
    /// reschedules it one interval later (the thesis reschedules after the
    /// loop, which takes no simulated time).
    pub fn handle_timeout(&mut self, now: Instant) -> bool {
        match (self.next_check, self.cfg.mode) {
            (Some(at), CheckMode::Poll { interval }) if at <= now => {
                self.next_check = Some(now + interval);
                true
            }
            _ => false,
        }
    }

    /// `checkSend()`'s loop: while packets wait and the credit allows,
    /// admit the next one and pay for it. Returns the packets taken.
    #[inline]
    pub fn check(&mut self, q: &mut impl LocalQueue) -> u64 {
        self.stats.checks += 1;
        let mut n = 0;
        while q.waiting() {
            if !self.allows() {
                self.stats.blocked_checks += 1;
                break;
            }
            match q.admit_next() {
                Some(wire) => {
                    self.take(wire);
                    n += 1;
                }
                None => break,
            }
        }
        n
    }

    /// Adds `bytes` (negative: removes) outside the thesis's two rules, for
    /// drivers that charge by what a packet releases rather than per packet.
    pub fn adjust(&mut self, bytes: i64) {
        self.buffer_count += bytes;
    }

    /// For drivers that run the check loop themselves (with
    /// [`Self::allows`] and [`Self::take`]): counts one check, and whether
    /// it stopped for lack of credit with packets waiting.
    pub fn record_check(&mut self, blocked: bool) {
        self.stats.checks += 1;
        self.stats.blocked_checks += blocked as u64;
    }

    pub fn buffer_count(&self) -> i64 {
        self.buffer_count
    }
    pub fn config(&self) -> &CreditConfig {
        &self.cfg
    }
    pub fn stats(&self) -> &CreditStats {
        &self.stats
    }
}

/// The ordered table that maps the tunnel byte stream back to flows.
/// Flows are small integers (an index the driver chooses).
#[derive(Clone, Debug, Default)]
pub struct Framing {
    /// (flow, bytes) in stream order; adjacent chunks of one flow merge.
    chunks: VecDeque<(u32, u64)>,
    pushed: u64,
    popped: u64,
}

impl Framing {
    pub fn new() -> Self {
        Self::default()
    }

    /// Split start wrote `bytes` of `flow` to the tunnel.
    #[inline]
    pub fn push(&mut self, flow: u32, bytes: u64) {
        if bytes == 0 {
            return;
        }
        self.pushed += bytes;
        if let Some(last) = self.chunks.back_mut() {
            if last.0 == flow {
                last.1 += bytes;
                return;
            }
        }
        self.chunks.push_back((flow, bytes));
    }

    /// Split end received `bytes` more in-order tunnel bytes: calls
    /// `deliver(flow, n)` for each flow's share, in stream order.
    ///
    /// # Panics
    /// If more bytes are popped than were pushed (the tunnel delivered
    /// bytes split start never wrote).
    #[inline]
    pub fn pop(&mut self, mut bytes: u64, mut deliver: impl FnMut(u32, u64)) {
        assert!(
            self.popped + bytes <= self.pushed,
            "tunnel delivered {} bytes beyond what was framed",
            self.popped + bytes - self.pushed
        );
        self.popped += bytes;
        while bytes > 0 {
            let head = self.chunks.front_mut().expect("checked above");
            let n = head.1.min(bytes);
            deliver(head.0, n);
            head.1 -= n;
            bytes -= n;
            if head.1 == 0 {
                self.chunks.pop_front();
            }
        }
    }

    /// Split end may take up to `bytes` more in-order tunnel bytes, but
    /// each flow only what its buffer at split end has room for: walks the
    /// table in stream order, offering each chunk's flow its bytes;
    /// `take(flow, offered)` returns how many it took. It stops at the
    /// first flow that takes less than offered, since everything behind it
    /// in the one stream waits too (head-of-line blocking). Returns the
    /// bytes taken.
    pub fn pop_bounded(&mut self, bytes: u64, mut take: impl FnMut(u32, u64) -> u64) -> u64 {
        let mut left = bytes.min(self.in_tunnel());
        let mut taken = 0;
        while left > 0 {
            let Some(head) = self.chunks.front_mut() else {
                break;
            };
            let offered = head.1.min(left);
            let n = take(head.0, offered).min(offered);
            head.1 -= n;
            left -= n;
            taken += n;
            if head.1 == 0 {
                self.chunks.pop_front();
            }
            if n < offered {
                break;
            }
        }
        self.popped += taken;
        taken
    }

    /// Takes the chunks framed since the last call, leaving the counts: a
    /// split start whose split end runs elsewhere (a simulation cut in two)
    /// ships them there with [`Self::push`].
    pub fn take_chunks(&mut self) -> VecDeque<(u32, u64)> {
        core::mem::take(&mut self.chunks)
    }

    /// The flow at the head of the undelivered stream.
    pub fn head_flow(&self) -> Option<u32> {
        self.chunks.front().map(|c| c.0)
    }

    /// Bytes framed and not yet delivered at split end.
    pub fn in_tunnel(&self) -> u64 {
        self.pushed - self.popped
    }
    pub fn pushed(&self) -> u64 {
        self.pushed
    }
    /// Chunks in the table (memory held).
    pub fn chunks(&self) -> usize {
        self.chunks.len()
    }
}

/// Per-flow credit across the tunnel (beyond the thesis): flow `i` may
/// have at most `window` bytes written to the tunnel at split start and
/// not yet acknowledged by its destination behind split end. That bounds
/// what split end ever holds for one flow, so a receiver that stops
/// reading (or a slow access link) behind split end fills only its own
/// window, never the shared tunnel stream; its sender is held back at
/// split start by the receive window of its terminating receiver.
///
/// The acknowledgements travel back from split end; a deployment would
/// carry them in band (in the tunnel's ACK stream), as the framing.
#[derive(Clone, Debug)]
pub struct FlowCredit {
    window: u64,
    written: Vec<u64>,
    acked: Vec<u64>,
}

impl FlowCredit {
    pub fn new(flows: usize, window: u64) -> Self {
        FlowCredit {
            window,
            written: vec![0; flows],
            acked: vec![0; flows],
        }
    }

    /// Bytes flow `i` may still write to the tunnel.
    #[inline]
    pub fn allowance(&self, i: usize) -> u64 {
        self.window
            .saturating_sub(self.written[i] - self.acked[i].min(self.written[i]))
    }

    /// Split start wrote `n` bytes of flow `i`; at most its allowance.
    ///
    /// # Panics
    /// If `n` exceeds the allowance (the driver must read no more).
    #[inline]
    pub fn on_written(&mut self, i: usize, n: u64) {
        assert!(
            n <= self.allowance(i),
            "flow {i}: {n} bytes over its credit"
        );
        self.written[i] += n;
    }

    /// Flow `i`'s destination has acknowledged `total` bytes in all (a
    /// cumulative count: older reports are ignored).
    #[inline]
    pub fn on_acked(&mut self, i: usize, total: u64) {
        self.acked[i] = self.acked[i].max(total);
    }

    /// Bytes of flow `i` in the tunnel or at split end.
    pub fn outstanding(&self, i: usize) -> u64 {
        self.written[i] - self.acked[i].min(self.written[i])
    }
    pub fn window(&self) -> u64 {
        self.window
    }
}

#[cfg(test)]
mod tests;
