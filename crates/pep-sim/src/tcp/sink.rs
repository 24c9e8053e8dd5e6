//! The receiver: reassembly record, delayed ACKs, SACK blocks.
//!
//! By default the sink hands in-order data to the application as soon as it
//! arrives ([`TcpSink::delivered_bytes`] is what goodput is measured from),
//! so its advertised window is the constant `rwnd`. With
//! [`SinkConfig::app_reads`] the data waits in a receive buffer of `rwnd`
//! bytes until the driver's application calls [`TcpSink::read`]; the window
//! is then the free space, its right edge never moves left (RFC 9293), and a
//! read that moves the edge by two segments or half the buffer sends a
//! window update (BSD's `tcp_output` rule, which also avoids the silly
//! window syndrome). Out-of-order data is recorded
//! as sequence ranges (no payload exists in the simulator), at most
//! [`MAX_OOO_RANGES`] of them; a segment that would need one more is
//! discarded, as a receiver out of reassembly buffers would.
//!
//! ## When an ACK is sent
//! * In-order data, no hole: per [`AckPolicy`] (every segment, or every
//!   `count`-th with a timer started by the first unacknowledged segment
//!   and not restarted by later ones, as ns-2's DelAck sink).
//! * At once (RFC 5681 section 4.2): "A TCP receiver SHOULD send an
//!   immediate duplicate ACK when an out-of-order segment arrives" and
//!   "SHOULD send an immediate ACK when the incoming segment fills in all or
//!   part of a gap in the sequence space"; also for duplicates and data
//!   beyond the window (RFC 9293: an unacceptable segment is answered with
//!   an ACK), for a zero-length segment outside the window (a window
//!   probe), and for a FIN.
//!
//! An immediate ACK also acknowledges any data the delayed-ACK logic was
//! holding, and cancels its timer.

use pep_core::ack_interval::{AdaptiveAckConfig, AdaptiveAckInterval};
use pep_core::{Duration, Flags, FlowId, Instant, SackBlocks, Segment, Seq, Timestamps};

use super::config::{AckPolicy, AppSource, SinkConfig, TcpConfig};
use super::sender::TcpSender;

/// Most out-of-order ranges the sink records: far more than any window
/// here leaves (a slow start that overshoots a long fat pipe's queue
/// leaves a hole every other segment; ns-2's sink and Linux keep them all).
pub const MAX_OOO_RANGES: usize = 16_384;

/// SACK blocks per ACK (RFC 2018 allows 3 alongside timestamps; ns-2's
/// sink sends up to 3).
const MAX_SACK_BLOCKS: usize = 3;

/// Receiver counters. Identities, once the outputs are drained:
///
/// * `bytes_received` = `bytes_in_order` + `bytes_out_of_order` +
///   `bytes_duplicate` + `bytes_dropped`;
/// * `acks_sent` = `acks_by_count` + `acks_by_timer` + `acks_immediate` +
///   `acks_window_update`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SinkStats {
    /// Segments received for this flow (any kind).
    pub segments_received: u64,
    /// Payload bytes received.
    pub bytes_received: u64,
    /// New bytes of segments that began at or below RCV.NXT.
    pub bytes_in_order: u64,
    /// New bytes of segments that began above RCV.NXT (recorded for later).
    pub bytes_out_of_order: u64,
    /// Bytes received before (below RCV.NXT or already recorded).
    pub bytes_duplicate: u64,
    /// Of those, the bytes of segments that were entirely duplicate
    /// (Johnson's `t_rcvdupbyte`).
    pub bytes_duplicate_only: u64,
    /// Of those, the duplicate bytes of segments that also carried new data
    /// (`t_rcvpartdupbyte`).
    pub bytes_partly_duplicate: u64,
    /// Bytes discarded: beyond the window or the reassembly record.
    pub bytes_dropped: u64,
    /// ACKs sent (SYN-ACKs not included).
    pub acks_sent: u64,
    /// ACKs sent because `count` in-order segments were waiting (all
    /// in-order ACKs under [`AckPolicy::Every`]).
    pub acks_by_count: u64,
    /// ACKs sent by the delayed-ACK timer.
    pub acks_by_timer: u64,
    /// ACKs sent at once: out-of-order data, hole fill, duplicate, FIN,
    /// probe.
    pub acks_immediate: u64,
    /// Window updates: ACKs sent because the application's reads opened
    /// the window (only with [`SinkConfig::app_reads`]).
    pub acks_window_update: u64,
    /// ACKs whose number equals that of the previous ACK sent.
    pub dup_acks_sent: u64,
    /// SYN-ACKs sent.
    pub syn_acks_sent: u64,
    /// In-order segments counted towards a delayed ACK (Johnson's `t_inc`:
    /// times the outstanding-segment count was incremented).
    pub count_increments: u64,
    /// Current ACK interval (segments per ACK) at the last ACK: `count` for
    /// a fixed policy, the adaptive interval otherwise, 1 for `Every`.
    pub ack_interval: u32,
    /// Bidirectional flows: data segments of this host's own sender that
    /// carried an ACK this receiver owed (a queued ACK or data held for a
    /// delayed ACK). `acks_sent` counts the pure ACKs.
    pub acks_piggybacked: u64,
    /// Queued ACKs whose job a piggybacking data segment did (counted in
    /// `acks_by_count`, `acks_immediate`, ... but never sent as pure ACKs).
    pub acks_replaced: u64,
}

/// The sender of a bidirectional flow's reverse data, held by the sink at
/// the same host. It starts when the first segment of the connection
/// arrives (the SYN, or the first data without a handshake): the receiving
/// application answers once the connection exists.
#[derive(Clone, Debug)]
struct Reverse {
    cfg: TcpConfig,
    app: AppSource,
    tx: Option<TcpSender>,
}

/// A received range above RCV.NXT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Range {
    start: Seq,
    end: Seq,
    /// When the range last received data (larger: more recent), for
    /// RFC 2018's most-recent-first block order.
    stamp: u64,
}

/// A TCP receiver (one direction of a connection).
#[derive(Clone, Debug)]
pub struct TcpSink {
    flow: FlowId,
    cfg: SinkConfig,
    /// Next sequence number expected.
    rcv_nxt: Seq,
    /// Out-of-order ranges above RCV.NXT: sorted, disjoint, not adjacent.
    ooo: Vec<Range>,
    /// Source of range stamps.
    stamp: u64,
    /// The FIN's sequence number, once seen.
    fin_seq: Option<Seq>,
    /// The FIN has been consumed (RCV.NXT moved past it).
    fin_received: bool,
    /// Data has arrived, so a late SYN can no longer move RCV.NXT.
    started: bool,
    /// In-order segments received but not yet acknowledged.
    unacked: u32,
    /// Delayed-ACK deadline, when data is waiting for it.
    delack_deadline: Option<Instant>,
    /// ACKs decided but not yet polled.
    acks_due: u32,
    /// A SYN arrived and awaits its SYN-ACK.
    syn_ack_due: bool,
    /// The ACK number of the last ACK sent.
    last_ack_sent: Option<Seq>,
    /// RFC 7323's TS.Recent, echoed in every ACK once the peer sends
    /// timestamps.
    ts_recent: Option<u32>,
    /// In-order payload bytes received (goodput).
    delivered: u64,
    /// When `delivered` last grew.
    last_delivery: Option<Instant>,
    /// Of those, bytes the application has not read yet (always 0 without
    /// [`SinkConfig::app_reads`]).
    unread: u64,
    /// Right edge of the last window advertised.
    edge_sent: Option<Seq>,
    /// The adaptive interval, under [`AckPolicy::Adaptive`].
    adaptive: Option<AdaptiveAckInterval>,
    stats: SinkStats,
    /// Bidirectional flows: this host's sender of the reverse data.
    reverse: Option<Box<Reverse>>,
    /// The duplicate range the next ACK reports first (RFC 2883 D-SACK).
    dsack: Option<(Seq, Seq)>,
}

impl TcpSink {
    /// A receiver for `flow`.
    ///
    /// # Panics
    /// If a delayed-ACK `count` is zero.
    pub fn new(flow: FlowId, cfg: &SinkConfig) -> Self {
        if let AckPolicy::Delayed { count, .. } = cfg.ack {
            assert!(count >= 1, "delayed-ACK count must be at least 1");
        }
        let adaptive = match cfg.ack {
            AckPolicy::Adaptive { min, max, .. } => {
                Some(AdaptiveAckInterval::new(AdaptiveAckConfig { min, max }))
            }
            _ => None,
        };
        TcpSink {
            flow,
            cfg: *cfg,
            rcv_nxt: cfg.peer_isn + 1,
            // Grows (a handful of times at most) up to MAX_OOO_RANGES, so a
            // flow without losses does not pay for the whole record.
            ooo: Vec::with_capacity(8),
            stamp: 0,
            fin_seq: None,
            fin_received: false,
            started: false,
            unacked: 0,
            delack_deadline: None,
            acks_due: 0,
            syn_ack_due: false,
            last_ack_sent: None,
            ts_recent: None,
            delivered: 0,
            last_delivery: None,
            unread: 0,
            edge_sent: None,
            adaptive,
            stats: SinkStats {
                ack_interval: match cfg.ack {
                    AckPolicy::Every => 1,
                    AckPolicy::Delayed { count, .. } => count,
                    AckPolicy::Adaptive { min, .. } => min,
                },
                ..SinkStats::default()
            },
            reverse: None,
            dsack: None,
        }
    }

    /// Makes this receiver one end of a bidirectional connection: its host
    /// also sends `app`'s data back with sender settings `cfg` (no
    /// handshake of its own: its ISN is this receiver's, which the SYN-ACK
    /// announces), and ACKs due go out on that data when there is some.
    pub fn with_reverse(mut self, cfg: &TcpConfig, app: AppSource) -> Self {
        let cfg = TcpConfig {
            isn: self.cfg.isn,
            handshake: false,
            reverse: None,
            ..*cfg
        };
        self.reverse = Some(Box::new(Reverse { cfg, app, tx: None }));
        self
    }

    /// The reverse data's sender (bidirectional flows), once started.
    pub fn reverse_sender(&self) -> Option<&TcpSender> {
        self.reverse.as_ref().and_then(|r| r.tx.as_ref())
    }

    /// Puts the ACK this receiver would send now on `seg`, an outgoing
    /// data segment of the same host (RFC 9293: every segment after the
    /// SYN carries the current acknowledgment): ACK number, window, SACK
    /// blocks and timestamp echo. Whatever ACK was owed (queued, or
    /// in-order data held for a delayed ACK) is thereby sent, and the
    /// delayed-ACK timer stops (BSD's `tcp_output`, Linux's
    /// `tcp_event_ack_sent`).
    pub fn piggyback(&mut self, seg: &mut Segment) {
        let owed = self.acks_due > 0 || self.unacked > 0;
        if owed {
            self.stats.acks_piggybacked += 1;
            self.stats.acks_replaced += self.acks_due as u64;
        }
        self.acks_due = 0;
        self.unacked = 0;
        self.delack_deadline = None;
        seg.flags = seg.flags | Flags::ACK;
        seg.ack = self.rcv_nxt;
        if self.cfg.sack {
            seg.sack = self.sack_blocks();
            self.dsack = None;
        }
        self.advertise_window(seg);
        if let (Some(ts), Some(ecr)) = (seg.ts.as_mut(), self.ts_recent) {
            ts.ecr = ecr;
        }
        self.last_ack_sent = Some(self.rcv_nxt);
    }

    // ---- driver interface -------------------------------------------------

    /// A segment from the sender arrived.
    pub fn handle_segment(&mut self, now: Instant, seg: &Segment) {
        if seg.flow != self.flow {
            return;
        }
        if self.is_next_in_order(seg) {
            // What the general path below does with such a segment, in
            // short: it is all of most segments a receiver gets.
            let len = seg.len as u64;
            self.stats.segments_received += 1;
            self.stats.bytes_received += len;
            self.stats.bytes_in_order += len;
            self.rcv_nxt = seg.seq + seg.len;
            self.delivered += len;
            self.last_delivery = Some(now);
            if self.cfg.app_reads {
                self.unread += len;
            }
            self.ack_in_order(now);
            return;
        }
        if self.reverse.is_some() {
            self.reverse_on_segment(now, seg);
        }
        self.stats.segments_received += 1;
        if let Some(ts) = seg.ts {
            // RFC 7323 4.3: TS.Recent is the TSval of a segment at or below
            // Last.ACK.sent, so a delayed ACK echoes the earliest segment
            // it acknowledges.
            if seg.seq.le(self.last_ack_sent.unwrap_or(self.rcv_nxt)) {
                self.ts_recent = Some(ts.val);
            }
        }
        if seg.flags.contains(Flags::SYN) {
            if !self.started {
                self.rcv_nxt = seg.seq + 1;
            }
            self.syn_ack_due = true;
            return;
        }
        let fin = seg.flags.contains(Flags::FIN);
        if seg.len == 0 && !fin {
            // A pure ACK. One outside the window is a probe: RFC 9293 3.10.7.4,
            // "If an incoming segment is not acceptable, an acknowledgment
            // should be sent in reply". Acceptable (3.10.7.4's test for a
            // zero-length segment): RCV.NXT =< SEG.SEQ =< the right edge; a
            // bidirectional peer's pure ACKs carry its SND.MAX, which may be
            // above RCV.NXT while its data is in flight.
            if seg.seq.lt(self.rcv_nxt) || seg.seq.gt(self.right_edge()) {
                self.ack_immediately();
            }
            return;
        }
        self.started = true;
        let before = self.rcv_nxt;
        let had_hole = !self.ooo.is_empty();
        self.stats.bytes_received += seg.len as u64;
        let dup_before = self.stats.bytes_duplicate;
        self.absorb(seg.seq, seg.len);
        if self.cfg.dsack && self.stats.bytes_duplicate > dup_before {
            let dup = self.stats.bytes_duplicate - dup_before;
            self.note_duplicate(seg.seq, seg.len, before, dup);
        }
        if fin && self.fin_seq.is_none() && (seg.seq + seg.len).le(self.right_edge()) {
            self.fin_seq = Some(seg.seq + seg.len);
        }
        let fin_consumed = self.consume_fin();
        let fresh = self.rcv_nxt.bytes_since(before) as u64 - fin_consumed as u64;
        self.delivered += fresh;
        if fresh > 0 {
            self.last_delivery = Some(now);
        }
        if self.cfg.app_reads {
            self.unread += fresh;
        }

        let advanced = self.rcv_nxt.gt(before);
        if fin || !advanced || seg.seq.gt(before) || had_hole {
            // FIN, duplicate, out-of-order (or beyond the window), or a
            // segment at RCV.NXT filling part of a hole.
            if !advanced || seg.seq.gt(before) || had_hole {
                if let Some(a) = self.adaptive.as_mut() {
                    a.on_disorder();
                }
            }
            self.ack_immediately();
            return;
        }
        self.ack_in_order(now);
    }

    /// A data segment at RCV.NXT that fits the window, with no FIN, no
    /// timestamps, nothing out of order held and no FIN seen, on a
    /// one-way connection that has started: [`Self::handle_segment`]'s
    /// general path would only move RCV.NXT and count it.
    #[inline(always)]
    fn is_next_in_order(&self, seg: &Segment) -> bool {
        seg.seq == self.rcv_nxt
            && seg.len > 0
            && self.started
            && seg.flags.0 & (Flags::SYN.0 | Flags::FIN.0) == 0
            && seg.ts.is_none()
            && self.ooo.is_empty()
            && self.fin_seq.is_none()
            && self.reverse.is_none()
            && (seg.seq + seg.len).le(self.right_edge())
    }

    /// The ACK policy for in-order data that advanced RCV.NXT.
    #[inline(always)]
    fn ack_in_order(&mut self, now: Instant) {
        let (count, timeout) = match self.cfg.ack {
            AckPolicy::Every => {
                self.stats.acks_by_count += 1;
                self.queue_ack();
                return;
            }
            AckPolicy::Delayed { count, timeout } => (count, timeout),
            AckPolicy::Adaptive { timeout, .. } => {
                (self.adaptive.map_or(1, |a| a.interval()), timeout)
            }
        };
        self.unacked += 1;
        self.stats.count_increments += 1;
        if self.unacked >= count {
            self.stats.acks_by_count += 1;
            let window_segments = self.cfg.rwnd / self.cfg.mss.max(1);
            if let Some(a) = self.adaptive.as_mut() {
                a.on_count_ack(window_segments);
            }
            self.queue_ack();
        } else if self.delack_deadline.is_none() {
            self.delack_deadline = Some(delack_deadline(now, timeout, self.cfg.delack_tick));
        }
    }

    /// The delayed-ACK deadline may have passed.
    pub fn handle_timeout(&mut self, now: Instant) {
        if let Some(tx) = self.reverse.as_mut().and_then(|r| r.tx.as_mut()) {
            tx.handle_timeout(now);
        }
        if let Some(at) = self.delack_deadline {
            if now >= at {
                self.stats.acks_by_timer += 1;
                if let Some(a) = self.adaptive.as_mut() {
                    a.on_timer_ack();
                }
                self.queue_ack();
            }
        }
    }

    /// Puts the receive window in `seg` and remembers the right edge it
    /// advertises (computed once: with `edge_sent` at the edge,
    /// `right_edge()` would answer it again).
    #[inline(always)]
    fn advertise_window(&mut self, seg: &mut Segment) {
        let edge = self.right_edge();
        self.edge_sent = Some(edge);
        seg.wnd = edge.bytes_since(self.rcv_nxt);
    }

    /// The next ACK (or SYN-ACK) to send. Drain until `None` after every
    /// input.
    ///
    /// Inline: every drain ends with nothing due, which is three compares;
    /// building an ACK is [`Self::poll_ack`].
    #[inline]
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Segment> {
        if !self.syn_ack_due && self.acks_due == 0 && self.reverse.is_none() {
            return None;
        }
        self.poll_ack(now)
    }

    #[inline(never)]
    fn poll_ack(&mut self, now: Instant) -> Option<Segment> {
        if self.syn_ack_due {
            self.syn_ack_due = false;
            self.stats.syn_acks_sent += 1;
            return Some(self.segment(self.cfg.isn, Flags::SYN | Flags::ACK));
        }
        if self.reverse.is_some() {
            if let Some(seg) = self.reverse_poll(now) {
                return Some(seg);
            }
        }
        if self.acks_due == 0 {
            return None;
        }
        self.acks_due -= 1;
        let mut seg = self.segment(self.cfg.isn + 1, Flags::ACK);
        if let Some(tx) = self.reverse.as_ref().and_then(|r| r.tx.as_ref()) {
            // RFC 9293: a pure ACK carries SND.NXT; SND.MAX here, which the
            // peer always finds acceptable (a go-back-N SND.NXT may be below
            // its RCV.NXT and draw an ACK back).
            seg.seq = tx.snd_max();
            if let Some(ts) = seg.ts.as_mut() {
                ts.val = super::sender::ts_clock(now);
            }
        }
        if self.cfg.sack {
            seg.sack = self.sack_blocks();
            self.dsack = None;
        }
        self.stats.acks_sent += 1;
        if let Some(a) = &self.adaptive {
            self.stats.ack_interval = a.interval();
        }
        self.advertise_window(&mut seg);
        if self.last_ack_sent == Some(self.rcv_nxt) {
            self.stats.dup_acks_sent += 1;
        }
        self.last_ack_sent = Some(self.rcv_nxt);
        Some(seg)
    }

    /// The application takes up to `max` bytes of in-order data; returns
    /// how many it got. Queues a window update when the read moves the
    /// advertised edge far enough (see the module doc). Without
    /// [`SinkConfig::app_reads`] there is never anything to read.
    pub fn read(&mut self, max: u64) -> u64 {
        let n = self.unread.min(max);
        if n == 0 {
            return 0;
        }
        self.unread -= n;
        // An ACK already due carries the new window.
        if self.acks_due > 0 {
            return n;
        }
        if let Some(sent) = self.edge_sent {
            let opened = self.right_edge().bytes_since(sent) as u64;
            let threshold = (2 * self.cfg.mss as u64).min(self.cfg.rwnd as u64 / 2);
            if self.right_edge().gt(sent) && opened >= threshold.max(1) {
                self.stats.acks_window_update += 1;
                self.queue_ack();
            }
        }
        n
    }

    /// When `handle_timeout` is next wanted (the delayed-ACK timer, and the
    /// reverse sender's timers in a bidirectional flow).
    #[inline]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let tx = self.reverse.as_ref().and_then(|r| r.tx.as_ref());
        match (self.delack_deadline, tx.and_then(|t| t.poll_timeout())) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    // ---- getters ------------------------------------------------------------

    pub fn flow(&self) -> FlowId {
        self.flow
    }
    /// In-order payload bytes delivered to the application (goodput).
    pub fn delivered_bytes(&self) -> u64 {
        self.delivered
    }
    /// When in-order bytes last arrived (a finite flow's last byte: its
    /// completion as the receiver sees it, which a splitting PEP's sender
    /// leg does not).
    pub fn last_delivery(&self) -> Option<Instant> {
        self.last_delivery
    }
    pub fn rcv_nxt(&self) -> Seq {
        self.rcv_nxt
    }
    pub fn fin_received(&self) -> bool {
        self.fin_received
    }
    /// Out-of-order ranges currently recorded.
    pub fn ooo_ranges(&self) -> usize {
        self.ooo.len()
    }
    pub fn stats(&self) -> &SinkStats {
        &self.stats
    }
    /// The adaptive interval's counters, under [`AckPolicy::Adaptive`].
    pub fn adaptive_stats(&self) -> Option<pep_core::ack_interval::AdaptiveAckStats> {
        self.adaptive.map(|a| a.stats)
    }
    /// In-order bytes waiting for the application ([`Self::read`]).
    pub fn readable(&self) -> u64 {
        self.unread
    }
    /// The window the next ACK advertises.
    pub fn window(&self) -> u32 {
        (self.cfg.rwnd as u64).saturating_sub(self.unread) as u32
    }

    /// Highest sequence number the receive buffer accepts (exclusive).
    fn right_edge(&self) -> Seq {
        let edge = self.rcv_nxt + self.window();
        // Never left of what was advertised (RFC 9293 3.8.6.2.2).
        match self.edge_sent {
            Some(sent) if sent.gt(edge) => sent,
            _ => edge,
        }
    }

    // ---- internals ------------------------------------------------------------

    /// Bidirectional: the segment's ACK part goes to the reverse sender,
    /// which the connection's first segment starts.
    #[cold]
    fn reverse_on_segment(&mut self, now: Instant, seg: &Segment) {
        let Some(r) = self.reverse.as_deref_mut() else {
            return;
        };
        let tx =
            r.tx.get_or_insert_with(|| TcpSender::new(seg.flow, &r.cfg, r.app, now));
        if seg.has_ack() && !seg.flags.contains(Flags::SYN) {
            tx.handle_segment(now, seg);
        }
    }

    /// Bidirectional: the reverse sender's next segment, carrying this
    /// receiver's ACK.
    #[cold]
    fn reverse_poll(&mut self, now: Instant) -> Option<Segment> {
        let tx = self.reverse.as_mut()?.tx.as_mut()?;
        let (mut seg, _) = tx.poll_transmit(now)?;
        self.piggyback(&mut seg);
        Some(seg)
    }

    fn segment(&self, seq: Seq, flags: Flags) -> Segment {
        Segment {
            flow: self.flow,
            seq,
            ack: self.rcv_nxt,
            flags,
            len: 0,
            hdr_len: self.cfg.hdr_len,
            wnd: self.window(),
            sack: SackBlocks::new(),
            ts: self.ts_recent.map(|ecr| Timestamps { val: 0, ecr }),
        }
    }

    fn queue_ack(&mut self) {
        self.acks_due += 1;
        self.unacked = 0;
        self.delack_deadline = None;
    }

    fn ack_immediately(&mut self) {
        self.stats.acks_immediate += 1;
        self.queue_ack();
    }

    /// Records payload `[seq, seq + len)`, advancing RCV.NXT over what has
    /// become contiguous, and counts every byte once.
    fn absorb(&mut self, seq: Seq, len: u32) {
        let dup_before = self.stats.bytes_duplicate;
        self.absorb_ranges(seq, len);
        let dup = self.stats.bytes_duplicate - dup_before;
        if dup == len as u64 {
            self.stats.bytes_duplicate_only += dup;
        } else {
            self.stats.bytes_partly_duplicate += dup;
        }
    }

    fn absorb_ranges(&mut self, seq: Seq, len: u32) {
        let end = seq + len;
        if end.le(self.rcv_nxt) {
            self.stats.bytes_duplicate += len as u64;
            return;
        }
        let s = seq.max(self.rcv_nxt);
        self.stats.bytes_duplicate += s.bytes_since(seq) as u64;
        let e = end.min(self.right_edge());
        if e.le(s) {
            self.stats.bytes_dropped += end.bytes_since(s) as u64;
            return;
        }
        self.stats.bytes_dropped += end.bytes_since(e) as u64;
        // Only the ranges that overlap [s, e) cover any of it.
        let lo = self.ooo.partition_point(|r| r.end.le(s));
        let hi = self.ooo.partition_point(|r| r.start.lt(e));
        let covered: u32 = self.ooo[lo..hi.max(lo)]
            .iter()
            .map(|r| e.min(r.end).bytes_since(s.max(r.start)))
            .sum();
        let fresh = (e.bytes_since(s) - covered) as u64;
        self.stats.bytes_duplicate += covered as u64;

        if s == self.rcv_nxt {
            self.stats.bytes_in_order += fresh;
            self.rcv_nxt = e;
            // The ranges now contiguous go in one drain (a repair after a
            // long burst of losses may join many).
            let mut k = 0;
            while let Some(r) = self.ooo.get(k) {
                if r.start.gt(self.rcv_nxt) {
                    break;
                }
                self.rcv_nxt = self.rcv_nxt.max(r.end);
                k += 1;
            }
            self.ooo.drain(..k);
        } else if self.record(s, e) {
            self.stats.bytes_out_of_order += fresh;
        } else {
            self.stats.bytes_dropped += fresh;
        }
    }

    /// Merges `[s, e)` (above RCV.NXT) into the range list; false if it
    /// needed a new range and the list is full.
    fn record(&mut self, s: Seq, e: Seq) -> bool {
        self.stamp += 1;
        // Ranges i..j overlap or touch [s, e].
        // Sorted and disjoint: both by binary search.
        let i = self.ooo.partition_point(|r| r.end.lt(s));
        let j = self.ooo.partition_point(|r| r.start.le(e));
        if i >= j {
            if self.ooo.len() == MAX_OOO_RANGES {
                return false;
            }
            let r = Range {
                start: s,
                end: e,
                stamp: self.stamp,
            };
            self.ooo.insert(i, r);
            return true;
        }
        let merged = Range {
            start: s.min(self.ooo[i].start),
            end: e.max(self.ooo[j - 1].end),
            stamp: self.stamp,
        };
        self.ooo[i] = merged;
        self.ooo.drain(i + 1..j);
        true
    }

    /// `dup` bytes of the segment `[seq, seq + len)` were duplicates (RCV.NXT
    /// was `before` it): the next ACK reports them in a D-SACK block. A
    /// wholly duplicate segment is reported whole; one that also brought
    /// new data, its part below `before` (RFC 2883 4.1.1-4.1.3).
    #[cold]
    fn note_duplicate(&mut self, seq: Seq, len: u32, before: Seq, dup: u64) {
        self.dsack = if dup == len as u64 {
            Some((seq, seq + len))
        } else if seq.lt(before) {
            Some((seq, before))
        } else {
            None
        };
    }

    /// Moves RCV.NXT past the FIN once everything before it has arrived;
    /// true if it did so now.
    fn consume_fin(&mut self) -> bool {
        if !self.fin_received && self.fin_seq == Some(self.rcv_nxt) {
            self.rcv_nxt += 1;
            self.fin_received = true;
            return true;
        }
        false
    }

    /// RFC 2018: "The first SACK block (i.e., the one immediately following
    /// the kind and length fields in the option) MUST specify the contiguous
    /// block of data containing the segment which triggered this ACK" and
    /// "The SACK option SHOULD be filled out by repeating the most recently
    /// reported SACK blocks". Ranges are stamped when data lands in them, so
    /// most-recent-first by stamp gives both.
    ///
    /// RFC 2883: a pending D-SACK block goes first ("the first block in the
    /// SACK option MUST specify the contiguous sequence space of the
    /// duplicate segment"); the regular blocks follow.
    fn sack_blocks(&self) -> SackBlocks {
        let mut blocks = SackBlocks::new();
        let mut below = u64::MAX;
        if let Some((l, r)) = self.dsack {
            blocks.push(l, r);
        }
        for _ in blocks.len()..MAX_SACK_BLOCKS {
            let next = self
                .ooo
                .iter()
                .filter(|r| r.stamp < below)
                .max_by_key(|r| r.stamp);
            let Some(r) = next else { break };
            blocks.push(r.start, r.end);
            below = r.stamp;
        }
        blocks
    }
}

/// When a delayed ACK deferred at `now` is due: `timeout` later, rounded up
/// to the timer's tick if it has one (and always strictly after `now`, since
/// a tick that has already fired cannot send it).
fn delack_deadline(now: Instant, timeout: Duration, tick: Option<Duration>) -> Instant {
    let at = now + timeout;
    match tick {
        Some(t) if t > Duration::ZERO => {
            let t = t.as_nanos();
            let up = at.as_nanos().div_ceil(t).saturating_mul(t);
            let up = if up <= now.as_nanos() { up + t } else { up };
            Instant::from_nanos(up)
        }
        _ => at,
    }
}
