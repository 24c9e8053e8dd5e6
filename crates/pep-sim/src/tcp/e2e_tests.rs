//! End to end: a sender and a sink joined by a fixed one-way delay (and,
//! optionally, a serialisation rate on the data direction), with a list of
//! data segments to lose once, driven event by event on a virtual clock.
//! A stand-in for the real engine, small enough to trust by reading.

use pep_core::cc::{Growth, Recovery};
use pep_core::{Duration, FlowId, Instant, Rate, Segment, Seq};
use proptest::prelude::*;

use super::*;

const MSS: u32 = 1000;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}
fn at_ms(v: u64) -> Instant {
    Instant::ZERO + ms(v)
}

/// A packet on the wire: arrival time, scheduling order, direction.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    arrive: Instant,
    order: u64,
    to_sink: bool,
    seg: Segment,
}

struct Pipe {
    tx: TcpSender,
    rx: TcpSink,
    now: Instant,
    /// One-way propagation delay, both directions.
    delay: Duration,
    /// Serialisation rate of the data direction, if any.
    rate: Option<Rate>,
    /// When the data direction's transmitter is next free.
    free_at: Instant,
    wire: Vec<InFlight>,
    order: u64,
    /// Data sequence numbers whose next transmission is lost.
    drops: Vec<Seq>,
    /// Data sequence numbers whose next transmission arrives this much
    /// later than it would (reordering).
    late: Vec<(Seq, Duration)>,
    /// Everything the sender sent: time, offset from the first data byte,
    /// kind.
    sent: Vec<(Instant, i64, TxKind)>,
    /// Recovery episodes: entry and exit times.
    recoveries: Vec<(Instant, Option<Instant>)>,
    /// cwnd after the last event at each instant.
    cwnd: Vec<(Instant, u64)>,
    base: Seq,
    /// An open stream's application writes this much on every ACK (before
    /// the sender is drained).
    write_per_ack: u64,
    /// Bytes written that way.
    written: u64,
}

impl Pipe {
    fn new(cfg: TcpConfig, sink: SinkConfig, app: AppSource, one_way: Duration) -> Pipe {
        Pipe {
            tx: TcpSender::new(FlowId(1), &cfg, app, Instant::ZERO),
            rx: TcpSink::new(FlowId(1), &sink),
            now: Instant::ZERO,
            delay: one_way,
            rate: None,
            free_at: Instant::ZERO,
            wire: Vec::new(),
            order: 0,
            drops: Vec::new(),
            late: Vec::new(),
            sent: Vec::new(),
            recoveries: Vec::new(),
            cwnd: Vec::new(),
            base: cfg.isn + 1,
            write_per_ack: 0,
            written: 0,
        }
    }

    fn drop_offsets(mut self, offs: &[u32]) -> Pipe {
        self.drops = offs.iter().map(|&o| self.base + o).collect();
        self
    }

    fn put(&mut self, arrive: Instant, to_sink: bool, seg: Segment) {
        self.order += 1;
        self.wire.push(InFlight {
            arrive,
            order: self.order,
            to_sink,
            seg,
        });
    }

    fn drain_tx(&mut self) {
        while let Some((seg, kind)) = self.tx.poll_transmit(self.now) {
            self.sent
                .push((self.now, seg.seq.diff(self.base) as i64, kind));
            if seg.len > 0 {
                if let Some(i) = self.drops.iter().position(|&s| s == seg.seq) {
                    self.drops.swap_remove(i);
                    continue;
                }
            }
            let extra = match self.late.iter().position(|l| l.0 == seg.seq) {
                Some(i) if seg.len > 0 => self.late.swap_remove(i).1,
                _ => Duration::ZERO,
            };
            let leave = match self.rate {
                None => self.now,
                Some(r) => {
                    let start = self.now.max(self.free_at);
                    self.free_at = start + r.tx_time(seg.wire_len() as u64);
                    self.free_at
                }
            };
            self.put(leave + self.delay + extra, true, seg);
        }
        // A poll with no input between answers from the idle cache; test
        // builds check it against a full poll (`TcpSender::check_idle`).
        assert!(self.tx.poll_transmit(self.now).is_none());
    }

    fn drain_rx(&mut self) {
        while let Some(seg) = self.rx.poll_transmit(self.now) {
            self.put(self.now + self.delay, false, seg);
        }
    }

    fn observe(&mut self) {
        let open = matches!(self.recoveries.last(), Some((_, None)));
        if self.tx.in_recovery() && !open {
            self.recoveries.push((self.now, None));
        } else if !self.tx.in_recovery() && open {
            self.recoveries.last_mut().unwrap().1 = Some(self.now);
        }
        match self.cwnd.last_mut() {
            Some(last) if last.0 == self.now => last.1 = self.tx.cwnd(),
            _ => self.cwnd.push((self.now, self.tx.cwnd())),
        }
    }

    /// Runs until nothing is left to happen or `end` is reached. At equal
    /// times packets come first (in the order sent), then the sender's
    /// timer, then the sink's.
    fn run_until(&mut self, end: Instant) -> &mut Self {
        self.drain_tx();
        self.observe();
        loop {
            let pkt = self
                .wire
                .iter()
                .enumerate()
                .min_by_key(|(_, p)| (p.arrive, p.order))
                .map(|(i, p)| (p.arrive, i));
            let t_tx = self.tx.poll_timeout();
            let t_rx = self.rx.poll_timeout();
            let Some(t) = [pkt.map(|p| p.0), t_tx, t_rx].into_iter().flatten().min() else {
                break;
            };
            if t > end {
                break;
            }
            assert!(t >= self.now, "time went backwards");
            self.now = t;
            match pkt {
                Some((pt, i)) if pt == t => {
                    let p = self.wire.swap_remove(i);
                    if p.to_sink {
                        self.rx.handle_segment(t, &p.seg);
                        self.drain_rx();
                    } else {
                        self.tx.handle_segment(t, &p.seg);
                        self.drain_tx();
                        if self.write_per_ack > 0 {
                            self.tx.write(self.write_per_ack);
                            self.written += self.write_per_ack;
                            self.drain_tx();
                        }
                    }
                }
                _ if t_tx == Some(t) => {
                    self.tx.handle_timeout(t);
                    self.drain_tx();
                }
                _ => {
                    self.rx.handle_timeout(t);
                    self.drain_rx();
                }
            }
            self.observe();
        }
        self
    }

    fn run(&mut self) -> &mut Self {
        self.run_until(Instant::ZERO + Duration::from_secs(3600))
    }

    fn cwnd_at(&self, t: Instant) -> u64 {
        self.cwnd
            .iter()
            .rev()
            .find(|c| c.0 <= t)
            .map(|c| c.1)
            .unwrap()
    }

    fn sent_of(&self, kind: TxKind) -> Vec<(Instant, i64)> {
        self.sent
            .iter()
            .filter(|s| s.2 == kind)
            .map(|s| (s.0, s.1))
            .collect()
    }
}

fn big_window(recovery: Recovery) -> (TcpConfig, SinkConfig) {
    let cfg = TcpConfig {
        mss: MSS,
        recovery,
        initial_rwnd: 1 << 30,
        ..TcpConfig::default()
    };
    let sink = SinkConfig {
        rwnd: 1 << 30,
        ..SinkConfig::default()
    };
    (cfg, sink)
}

#[test]
fn slow_start_doubles_cwnd_every_rtt() {
    let (cfg, sink) = big_window(Recovery::NewReno);
    let mut p = Pipe::new(cfg, sink, AppSource::Bulk, ms(50));
    p.run_until(at_ms(350));
    for (k, t) in [0u64, 100, 200, 300].into_iter().enumerate() {
        let sent = p.sent.iter().filter(|s| s.0 == at_ms(t)).count();
        assert_eq!(sent, 10 << k, "segments sent at {t} ms");
        assert_eq!(p.cwnd_at(at_ms(t)), (10_000 << k) as u64, "cwnd at {t} ms");
    }
    assert!(p.sent.iter().all(|s| s.2 == TxKind::New));
}

#[test]
fn delayed_acks_slow_start_by_half_again_per_rtt() {
    let (cfg, mut sink) = big_window(Recovery::NewReno);
    sink.ack = AckPolicy::delayed();
    let mut p = Pipe::new(cfg, sink, AppSource::Bulk, ms(50));
    p.run_until(at_ms(249));
    // 10 segments -> 5 ACKs -> cwnd 15; 15 segments -> 7 ACKs -> 22 (one
    // held back, waiting for a partner or its timer).
    assert_eq!(p.cwnd_at(at_ms(100)), 15_000);
    assert_eq!(p.cwnd_at(at_ms(200)), 22_000);
    let st = *p.rx.stats();
    assert_eq!(
        (st.acks_by_count, st.acks_by_timer, st.acks_immediate),
        (12, 0, 0)
    );
    // The 21 segments sent at 200 ms arrive at 250 ms, before the held
    // one's timer: 22 segments, 11 ACKs.
    p.run_until(at_ms(250));
    assert_eq!(p.rx.stats().acks_by_count, 23);
    assert_eq!(p.rx.stats().acks_by_timer, 0);
}

#[test]
fn newreno_recovers_three_drops_in_three_rtts_without_timeout() {
    let (cfg, sink) = big_window(Recovery::NewReno);
    let size = 200_000;
    let mut p = Pipe::new(cfg, sink, AppSource::Finite(size), ms(50))
        .drop_offsets(&[12_000, 15_000, 18_000]);
    p.run();
    let st = *p.tx.stats();
    assert_eq!(st.timeouts, 0);
    assert_eq!(st.fast_retransmits, 1);
    assert_eq!(st.partial_ack_retransmits, 2);
    assert_eq!(p.sent_of(TxKind::FastRetransmit), [(at_ms(200), 12_000)]);
    assert_eq!(
        p.sent_of(TxKind::PartialAckRetransmit),
        [(at_ms(300), 15_000), (at_ms(400), 18_000)]
    );
    // One recovery episode of exactly three RTTs.
    assert_eq!(p.recoveries, [(at_ms(200), Some(at_ms(500)))]);
    assert!(p.tx.is_closed());
    assert_eq!(p.rx.delivered_bytes(), size);
    assert_eq!(st.retransmitted_segments, 3);
}

#[test]
fn sack_recovers_the_same_three_drops_in_one_rtt() {
    let (cfg, mut sink) = big_window(Recovery::Sack);
    sink.sack = true;
    let size = 200_000;
    let mut p = Pipe::new(cfg, sink, AppSource::Finite(size), ms(50))
        .drop_offsets(&[12_000, 15_000, 18_000]);
    p.run();
    let st = *p.tx.stats();
    assert_eq!((st.timeouts, st.fast_retransmits), (0, 1));
    assert_eq!(p.sent_of(TxKind::FastRetransmit), [(at_ms(200), 12_000)]);
    // The other two holes are declared lost by the same round of SACKs.
    assert_eq!(
        p.sent_of(TxKind::SackRetransmit),
        [(at_ms(200), 15_000), (at_ms(200), 18_000)]
    );
    assert_eq!(p.recoveries, [(at_ms(200), Some(at_ms(300)))]);
    assert_eq!(st.retransmitted_segments, 3);
    assert!(p.tx.is_closed());
    assert_eq!(p.rx.delivered_bytes(), size);
}

#[test]
fn sack_with_the_small_window_needs_no_timeout_either() {
    let p = small_window_three_drops(Recovery::Sack);
    let st = *p.tx.stats();
    assert_eq!((st.fast_retransmits, st.timeouts), (1, 0));
    assert_eq!(st.retransmitted_segments, 3);
    // Faster than NewReno's three RTTs.
    let (start, end) = p.recoveries[0];
    assert!(end.unwrap() - start <= ms(200), "{:?}", p.recoveries);
}

/// Reno vs NewReno, window limited to 8 segments by the receiver, three
/// drops in the third window.
fn small_window_three_drops(recovery: Recovery) -> Pipe {
    let cfg = TcpConfig {
        mss: MSS,
        recovery,
        initial_rwnd: 8000,
        ..TcpConfig::default()
    };
    let sink = SinkConfig {
        rwnd: 8000,
        sack: recovery == Recovery::Sack,
        ..SinkConfig::default()
    };
    let mut p = Pipe::new(cfg, sink, AppSource::Finite(100_000), ms(50))
        .drop_offsets(&[16_000, 18_000, 20_000]);
    p.run();
    assert!(p.tx.is_closed());
    assert_eq!(p.rx.delivered_bytes(), 100_000);
    p
}

#[test]
fn reno_with_a_small_window_ends_in_a_timeout() {
    let p = small_window_three_drops(Recovery::Reno);
    let st = *p.tx.stats();
    assert_eq!(st.fast_retransmits, 1);
    assert_eq!(st.timeouts, 1);
    assert_eq!(p.sent_of(TxKind::FastRetransmit), [(at_ms(300), 16_000)]);
    // Recovery ended on the first partial ACK, one RTT later; the timer,
    // restarted then, fired one (minimum) RTO after.
    assert_eq!(p.recoveries, [(at_ms(300), Some(at_ms(400)))]);
    assert_eq!(
        p.sent_of(TxKind::TimeoutRetransmit),
        [(at_ms(1400), 18_000)]
    );
}

#[test]
fn newreno_with_the_same_small_window_does_not() {
    let p = small_window_three_drops(Recovery::NewReno);
    let st = *p.tx.stats();
    assert_eq!(
        (st.fast_retransmits, st.partial_ack_retransmits, st.timeouts),
        (1, 2, 0)
    );
    assert_eq!(p.recoveries, [(at_ms(300), Some(at_ms(600)))]);
    // Reno pays at least the (1 s minimum) RTO more.
    let reno = small_window_three_drops(Recovery::Reno);
    let (nr, r) = (
        p.tx.completion_time().unwrap(),
        reno.tx.completion_time().unwrap(),
    );
    assert!(r - nr >= Duration::from_secs(1), "NewReno {nr}, Reno {r}");
}

#[test]
fn tahoe_recovers_by_going_back_n() {
    let p = small_window_three_drops(Recovery::Tahoe);
    let st = *p.tx.stats();
    assert_eq!((st.fast_retransmits, st.timeouts), (1, 0));
    assert!(p.recoveries.is_empty());
    assert!(!p.sent_of(TxKind::GoBackN).is_empty());
}

#[test]
fn finite_transfer_with_handshake_across_sequence_wrap() {
    let cfg = TcpConfig {
        mss: 1460,
        handshake: true,
        isn: Seq(u32::MAX - 50_000),
        ..TcpConfig::default()
    };
    let sink = SinkConfig {
        ack: AckPolicy::delayed(),
        sack: true,
        isn: Seq(123),
        ..SinkConfig::default()
    };
    let size = 1_000_000;
    let mut p = Pipe::new(cfg, sink, AppSource::Finite(size), ms(20));
    p.rate = Some(Rate::mbps(10));
    p.run();
    assert!(p.tx.is_closed() && p.rx.fin_received());
    assert_eq!(p.rx.delivered_bytes(), size);
    assert_eq!(p.tx.stats().retransmitted_segments, 0);
    // 1 MB at 10 Mbit/s (with headers) takes at least 0.83 s.
    let done = p.tx.completion_time().unwrap();
    assert!(done > at_ms(830) && done < at_ms(2000), "{done}");
    assert_eq!(p.sent[0].2, TxKind::Syn);
    assert_eq!(p.rx.rcv_nxt(), cfg.isn + 1 + size as u32 + 1);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Whatever is lost (once), every variant delivers every byte exactly,
    /// in order, and closes; the sink's identities hold.
    #[test]
    fn any_drop_pattern_completes(
        recovery in prop_oneof![Just(Recovery::Tahoe), Just(Recovery::Reno), Just(Recovery::NewReno), Just(Recovery::Sack)],
        growth in prop_oneof![
            Just(Growth::default()),
            Just(Growth::Cubic(Default::default())),
            Just(Growth::Westwood)
        ],
        delayed in any::<bool>(),
        handshake in any::<bool>(),
        isn in any::<u32>(),
        rwnd_segs in 2u32..40,
        drops in proptest::collection::vec(0u32..80, 0..10),
        rate in prop_oneof![Just(None), Just(Some(Rate::mbps(5)))],
    ) {
        let cfg = TcpConfig {
            mss: MSS,
            recovery,
            growth,
            handshake,
            isn: Seq(isn),
            initial_rwnd: rwnd_segs * MSS,
            min_rto: ms(200),
            ..TcpConfig::default()
        };
        let sink = SinkConfig {
            rwnd: rwnd_segs * MSS,
            ack: if delayed { AckPolicy::delayed() } else { AckPolicy::Every },
            sack: true,
            peer_isn: Seq(isn),
            ..SinkConfig::default()
        };
        let size = 80_000 + 333;
        let offs: Vec<u32> = drops.iter().map(|d| d * MSS).collect();
        let mut p = Pipe::new(cfg, sink, AppSource::Finite(size), ms(10)).drop_offsets(&offs);
        p.rate = rate;
        p.run();
        prop_assert!(p.tx.is_closed());
        prop_assert_eq!(p.rx.delivered_bytes(), size);
        let s = *p.rx.stats();
        prop_assert_eq!(s.bytes_received, s.bytes_in_order + s.bytes_out_of_order + s.bytes_duplicate + s.bytes_dropped);
        prop_assert_eq!(s.acks_sent, s.acks_by_count + s.acks_by_timer + s.acks_immediate);
        let t = *p.tx.stats();
        if recovery != Recovery::NewReno {
            prop_assert_eq!(t.partial_ack_retransmits, 0);
        }
        if recovery != Recovery::Sack {
            prop_assert_eq!(t.sack_retransmits, 0);
        }
        if offs.is_empty() {
            prop_assert_eq!(t.retransmitted_segments, 0);
        }
        prop_assert_eq!(t.segments_sent, p.sent.iter().filter(|s| s.2 != TxKind::WindowProbe).count() as u64);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// An open stream written a little on every ACK, with losses: every
    /// poll answered from the idle cache (a write between two polls keeps
    /// a window-held sender idle) matches a full poll (`check_idle`), and
    /// the transfer is the same as without the cache: every written byte
    /// arrives.
    #[test]
    fn idle_cache_matches_full_polls_with_writes(
        recovery in prop_oneof![Just(Recovery::NewReno), Just(Recovery::Sack)],
        rwnd_segs in 2u32..40,
        write in prop_oneof![Just(300u64), Just(1000), Just(2500)],
        first in 0u64..20_000,
        drops in proptest::collection::vec(0u32..60, 0..8),
    ) {
        let (cfg, sink) = small_window(recovery, rwnd_segs);
        let offs: Vec<u32> = drops.iter().map(|d| d * MSS).collect();
        let mut p = Pipe::new(cfg, sink, AppSource::Open(first), ms(10)).drop_offsets(&offs);
        p.write_per_ack = write;
        p.rate = Some(Rate::mbps(5));
        p.run_until(at_ms(3000));
        let written = first + p.written;
        p.tx.close();
        p.write_per_ack = 0;
        p.run();
        prop_assert!(p.tx.is_closed());
        prop_assert_eq!(p.rx.delivered_bytes(), written);
    }

    /// A finite transfer with losses, `max_burst` and a small receiver
    /// window: every send decides whether the next poll would stop
    /// (`idle_after_send`: burst spent, window full, or all sent), and
    /// each poll answered so is checked against a full poll
    /// (`check_idle`; the harness ends every drain with one); the
    /// transfer completes with every byte delivered.
    #[test]
    fn stop_decided_after_a_send_matches_full_polls(
        recovery in prop_oneof![Just(Recovery::NewReno), Just(Recovery::Sack)],
        rwnd_segs in 1u32..30,
        max_burst in prop_oneof![Just(None), (1u32..4).prop_map(Some)],
        bytes in 1u64..60_000,
        delack in any::<bool>(),
        drops in proptest::collection::vec(0u32..60, 0..6),
    ) {
        let (cfg, sink) = small_window(recovery, rwnd_segs);
        let cfg = TcpConfig { max_burst, ..cfg };
        let sink = SinkConfig {
            ack: if delack { AckPolicy::delayed() } else { AckPolicy::Every },
            ..sink
        };
        let offs: Vec<u32> = drops.iter().map(|d| d * MSS).collect();
        let mut p = Pipe::new(cfg, sink, AppSource::Finite(bytes), ms(10)).drop_offsets(&offs);
        p.rate = Some(Rate::mbps(5));
        p.run();
        prop_assert!(p.tx.is_complete());
        prop_assert_eq!(p.rx.delivered_bytes(), bytes);
    }
}

/// A sender and a SACK sink with a receiver window of `rwnd_segs`
/// segments, for the idle-cache proptests (a 200 ms minimum RTO).
fn small_window(recovery: Recovery, rwnd_segs: u32) -> (TcpConfig, SinkConfig) {
    let cfg = TcpConfig {
        mss: MSS,
        recovery,
        initial_rwnd: rwnd_segs * MSS,
        min_rto: ms(200),
        ..TcpConfig::default()
    };
    let sink = SinkConfig {
        rwnd: rwnd_segs * MSS,
        sack: true,
        ..SinkConfig::default()
    };
    (cfg, sink)
}

/// RACK-TLP's sender and a SACK + D-SACK sink (the `linux` profile's loss
/// detection), 1000 B segments, a large window.
fn rack(dsack: bool) -> (TcpConfig, SinkConfig) {
    let (cfg, sink) = big_window(Recovery::Sack);
    let cfg = TcpConfig { rack: true, ..cfg };
    let sink = SinkConfig {
        sack: true,
        dsack,
        ..sink
    };
    (cfg, sink)
}

/// RFC 8985 6.2 step 4 on a path that reorders: 1 Mbit/s (8.32 ms per
/// 1040 B segment), 20 ms each way, a 4-segment window (below the 6 KB
/// BDP, so no queue: segments leave ACK-clocked 8.32 ms apart and arrive
/// so); segments 20, 40, ..., 180 arrive 15 ms late, overtaken by one
/// segment (fewer than DupThresh, so only RACK can call them lost).
/// RACK's initial window, min_RTT / 4 = 12.1 ms, is too short: the first
/// late segment is retransmitted, spuriously. Its duplicate arrival draws
/// a D-SACK, the multiplier goes to 2 (24.2 ms), and no later reordering
/// is mistaken for loss. Without D-SACK every late segment is
/// retransmitted.
#[test]
fn dsack_grows_the_reordering_window_and_stops_spurious_retransmissions() {
    let run = |dsack: bool| {
        let (cfg, sink) = rack(dsack);
        let cfg = TcpConfig {
            initial_rwnd: 4 * MSS,
            ..cfg
        };
        let sink = SinkConfig {
            rwnd: 4 * MSS,
            ..sink
        };
        let mut p = Pipe::new(cfg, sink, AppSource::Finite(200 * MSS as u64), ms(20));
        p.rate = Some(Rate::mbps(1));
        p.late = (1..10).map(|k| (p.base + k * 20 * MSS, ms(15))).collect();
        p.run();
        assert!(p.tx.is_closed());
        p
    };
    let p = run(true);
    let rexmits: Vec<i64> = p
        .sent
        .iter()
        .filter(|s| s.2.is_retransmission())
        .map(|s| s.1 / MSS as i64)
        .collect();
    let r = p.tx.rack().unwrap();
    println!(
        "with D-SACK: retransmitted {rexmits:?}, reo_wnd_mult {}, {} D-SACKs",
        r.reo_wnd_mult(),
        r.dsacks()
    );
    assert_eq!(rexmits, [20], "only the first late segment");
    assert_eq!((r.reo_wnd_mult(), r.dsacks()), (2, 1));
    assert!(r.reordering_seen());
    assert_eq!(p.tx.stats().timeouts, 0);
    // The control: the window never grows, every late segment is resent.
    let q = run(false);
    let n = q.sent.iter().filter(|s| s.2.is_retransmission()).count();
    println!("without D-SACK: {n} retransmissions");
    assert_eq!(q.tx.rack().unwrap().reo_wnd_mult(), 1);
    assert_eq!(n, 9);
}

/// A retransmission that is lost too (segment 30's first two
/// transmissions are dropped): RACK judges the resend by its own send
/// time, and once a segment sent after it is SACKed and RACK.rtt has
/// passed, it is resent (RFC 8985 6.2 step 5), well before the RTO.
/// Without this (the HighRxt rule of RFC 6675 alone) only the RTO repairs
/// it; `rack = false` shows the RTO.
#[test]
fn a_lost_retransmission_is_repaired_without_an_rto() {
    let run = |rack_on: bool| {
        let (cfg, sink) = rack(true);
        let cfg = TcpConfig {
            rack: rack_on,
            ..cfg
        };
        let mut p = Pipe::new(cfg, sink, AppSource::Finite(200 * MSS as u64), ms(20))
            .drop_offsets(&[30 * MSS, 30 * MSS]);
        p.rate = Some(Rate::mbps(10));
        p.run();
        assert!(p.tx.is_closed());
        p
    };
    let p = run(true);
    let sends: Vec<(Instant, TxKind)> = p
        .sent
        .iter()
        .filter(|s| s.1 == 30 * MSS as i64)
        .map(|s| (s.0, s.2))
        .collect();
    let st = *p.tx.stats();
    println!(
        "segment 30 sent {sends:?}; {} lost retransmissions, {} timeouts, done at {:?}",
        st.lost_retransmissions,
        st.timeouts,
        p.tx.completion_time()
    );
    assert_eq!(sends.len(), 3, "{sends:?}");
    assert_eq!(sends[0].1, TxKind::New);
    assert_eq!(sends[2].1, TxKind::SackRetransmit);
    assert_eq!((st.lost_retransmissions, st.timeouts), (1, 0));
    // The second resend follows the first by about one RTT (40 ms plus
    // queueing), not by the RTO (>= 200 ms).
    let gap = sends[2].0 - sends[1].0;
    assert!(gap < ms(120), "{gap:?}");
    let q = run(false);
    assert!(
        q.tx.stats().timeouts >= 1,
        "without RACK the RTO repairs it"
    );
    assert!(p.tx.completion_time().unwrap() < q.tx.completion_time().unwrap());
}
