//! Scripted conversations with the sender, smoltcp style: ACKs are built
//! from a template, each step states only what differs, and the exact
//! segments that come out are asserted. Offsets are bytes from the first
//! data byte (ISN + 1); MSS is 1000 for readable arithmetic.

use pep_core::cc::Recovery;
use pep_core::{Duration, Flags, FlowId, Instant, Segment, Seq};

use super::*;

const MSS: u32 = 1000;
const FLOW: FlowId = FlowId(7);

/// (offset, payload length, kind) of one transmitted segment.
type Tx = (i64, u32, TxKind);

fn n(off: i64) -> Tx {
    (off, MSS, TxKind::New)
}
fn fr(off: i64) -> Tx {
    (off, MSS, TxKind::FastRetransmit)
}
fn pa(off: i64) -> Tx {
    (off, MSS, TxKind::PartialAckRetransmit)
}
fn to(off: i64) -> Tx {
    (off, MSS, TxKind::TimeoutRetransmit)
}
fn gb(off: i64) -> Tx {
    (off, MSS, TxKind::GoBackN)
}
fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn cfg() -> TcpConfig {
    TcpConfig {
        mss: MSS,
        ..TcpConfig::default()
    }
}

struct Script {
    tx: TcpSender,
    now: Instant,
    /// First data byte's sequence number.
    base: Seq,
    /// The receiver's ACK, of which each step changes a field or two.
    tmpl: Segment,
    /// Every segment sent, in order.
    sent: Vec<Segment>,
}

impl Script {
    fn new(cfg: TcpConfig, app: AppSource) -> Script {
        let tmpl = Segment {
            flow: FLOW,
            seq: Seq(1),
            flags: Flags::ACK,
            hdr_len: 40,
            wnd: cfg.initial_rwnd,
            ..Segment::default()
        };
        Script {
            tx: TcpSender::new(FLOW, &cfg, app, Instant::ZERO),
            now: Instant::ZERO,
            base: cfg.isn + 1,
            tmpl,
            sent: Vec::new(),
        }
    }
    fn bulk(cfg: TcpConfig) -> Script {
        Script::new(cfg, AppSource::Bulk)
    }
    fn at(&mut self, t: Duration) -> &mut Self {
        self.now = Instant::ZERO + t;
        self
    }
    /// Drains the sender.
    fn out(&mut self) -> Vec<Tx> {
        let mut v = Vec::new();
        while let Some((seg, kind)) = self.tx.poll_transmit(self.now) {
            assert_eq!(seg.flow, FLOW);
            assert_eq!(seg.hdr_len, 40);
            v.push((seg.seq.diff(self.base) as i64, seg.len, kind));
            self.sent.push(seg);
        }
        v
    }
    fn feed(&mut self, seg: Segment) -> Vec<Tx> {
        self.tx.handle_segment(self.now, &seg);
        self.out()
    }
    /// An ACK of everything below `off`.
    fn ack(&mut self, off: u32) -> Vec<Tx> {
        let seg = Segment {
            ack: self.base + off,
            ..self.tmpl
        };
        self.feed(seg)
    }
    /// The same, advertising a new window (which the template keeps).
    fn ack_wnd(&mut self, off: u32, wnd: u32) -> Vec<Tx> {
        self.tmpl.wnd = wnd;
        self.ack(off)
    }
    /// `k` identical ACKs; returns what the last one released.
    fn dups(&mut self, off: u32, k: usize) -> Vec<Vec<Tx>> {
        (0..k).map(|_| self.ack(off)).collect()
    }
    /// Jumps to the sender's deadline and fires it.
    fn fire(&mut self) -> Vec<Tx> {
        let t = self.tx.poll_timeout().expect("a timer is running");
        self.now = t;
        self.tx.handle_timeout(t);
        self.out()
    }
}

fn offsets(from: i64, k: i64) -> Vec<Tx> {
    (0..k).map(|i| n(from + i * MSS as i64)).collect()
}

#[test]
fn initial_window_is_ten_full_segments() {
    let mut s = Script::bulk(cfg());
    assert_eq!(s.out(), offsets(0, 10));
    assert_eq!(s.out(), []);
    let seg = s.sent[0];
    assert_eq!(seg.seq, Seq(1)); // ISN 0, SYN consumed
    assert_eq!(seg.ack, Seq(1));
    assert!(seg.flags.contains(Flags::ACK) && !seg.flags.contains(Flags::SYN));
    assert!(seg.wnd >= 1 << 20);
    assert_eq!(
        s.tx.poll_timeout(),
        Some(Instant::ZERO + Duration::from_secs(1))
    );
    assert_eq!(s.tx.snd_nxt(), Seq(10_001));
    assert_eq!(s.tx.stats().segments_sent, 10);
    assert_eq!(s.tx.stats().bytes_sent, 10_000);
}

#[test]
fn slow_start_opens_one_segment_per_ack() {
    let mut s = Script::bulk(cfg());
    s.out();
    s.at(ms(100));
    assert_eq!(s.ack(1000), [n(10_000), n(11_000)]);
    assert_eq!(s.tx.cwnd(), 11_000);
    assert_eq!(s.ack(2000), [n(12_000), n(13_000)]);
    assert_eq!(s.tx.cwnd(), 12_000);
    // A stretch ACK for two segments opens the window by one SMSS only
    // (RFC 5681 eq. 2), so three segments go out.
    assert_eq!(s.ack(4000), [n(14_000), n(15_000), n(16_000)]);
    assert_eq!(s.tx.cwnd(), 13_000);
    assert_eq!(s.tx.srtt(), Some(ms(100)));
}

#[test]
fn congestion_avoidance_opens_about_one_segment_per_window() {
    let mut s = Script::bulk(TcpConfig {
        initial_ssthresh: 10_000,
        ..cfg()
    });
    s.out();
    s.at(ms(100));
    let mut released = 0;
    for k in 1..=10 {
        released += s.ack(k * MSS).len();
    }
    // Ten ACKs of one segment: cwnd += 1000*1000/cwnd each, just under one
    // SMSS in total; one new segment per ACK.
    assert_eq!(released, 10);
    let w = s.tx.cwnd();
    assert!(w > 10_900 && w < 11_000, "{w}");
    // The next ACK crosses 11000 and releases two.
    assert_eq!(s.ack(11 * MSS).len(), 2);
}

#[test]
fn receiver_window_limits_sending() {
    let mut s = Script::bulk(TcpConfig {
        initial_rwnd: 3000,
        ..cfg()
    });
    assert_eq!(s.out(), offsets(0, 3));
    assert_eq!(s.ack(1000), [n(3000)]);
    // The window grows to 5000: SND.UNA + 5000 = 7000.
    assert_eq!(s.ack_wnd(2000, 5000), [n(4000), n(5000), n(6000)]);
    // A window update without new data is not a duplicate ACK.
    assert_eq!(s.ack_wnd(2000, 6000), [n(7000)]);
    assert_eq!(s.tx.stats().dupacks_received, 0);
}

#[test]
fn zero_window_is_probed_by_the_persist_timer() {
    let mut s = Script::bulk(TcpConfig {
        initial_window: 2,
        ..cfg()
    });
    assert_eq!(s.out(), offsets(0, 2));
    s.at(ms(100));
    assert_eq!(s.ack_wnd(2000, 0), []);
    // Nothing outstanding, window zero: the persist timer runs (RTO 1 s).
    assert_eq!(s.tx.poll_timeout(), Some(Instant::ZERO + ms(1100)));
    assert_eq!(s.fire(), [(1999, 0, TxKind::WindowProbe)]);
    let probe = *s.sent.last().unwrap();
    assert!(probe.is_pure_ack());
    // Still zero: the next probe comes after twice the interval.
    assert_eq!(s.ack(2000), []);
    assert_eq!(s.tx.poll_timeout(), Some(Instant::ZERO + ms(3100)));
    assert_eq!(s.fire(), [(1999, 0, TxKind::WindowProbe)]);
    assert_eq!(s.tx.poll_timeout(), Some(Instant::ZERO + ms(7100)));
    // The window opens: cwnd is 3000 (IW 2 plus one ACK).
    s.at(ms(7200));
    assert_eq!(s.ack_wnd(2000, 10_000), offsets(2000, 3));
    assert_eq!(s.tx.poll_timeout(), Some(Instant::ZERO + ms(8200)));
    let st = s.tx.stats();
    assert_eq!((st.window_probes, st.timeouts, st.segments_sent), (2, 0, 5));
}

#[test]
fn three_dupacks_trigger_exactly_one_fast_retransmit() {
    let mut s = Script::bulk(cfg());
    s.out();
    assert_eq!(s.ack(1000), [n(10_000), n(11_000)]);
    let r = s.dups(1000, 3);
    assert_eq!(r, [vec![], vec![], vec![fr(1000)]]);
    // FlightSize 11000 -> ssthresh 5500; window 5500 + 3*1000.
    assert_eq!(s.tx.ssthresh(), 5500);
    assert_eq!(s.tx.cwnd(), 5500);
    assert_eq!(s.tx.cc_window(), 8500);
    assert!(s.tx.in_recovery());
    // Each further duplicate inflates by one SMSS; new data once the
    // inflated window exceeds the 11000 bytes outstanding.
    let r = s.dups(1000, 5);
    assert_eq!(
        r,
        [vec![], vec![], vec![], vec![n(12_000)], vec![n(13_000)]]
    );
    let st = s.tx.stats();
    assert_eq!(st.fast_retransmits, 1);
    assert_eq!(st.dupacks_received, 8);
    assert_eq!(st.retransmitted_segments, 1);
}

#[test]
fn acks_that_are_not_duplicates() {
    let mut s = Script::bulk(cfg());
    s.out();
    s.ack(1000);
    // (b) carries data; (c) FIN set; (e) window changed.
    let with_data = Segment {
        ack: Seq(1001),
        len: 100,
        ..s.tmpl
    };
    let with_fin = Segment {
        ack: Seq(1001),
        flags: Flags::ACK | Flags::FIN,
        ..s.tmpl
    };
    for seg in [with_data, with_fin, with_data] {
        assert_eq!(s.feed(seg), []);
    }
    assert_eq!(s.ack_wnd(1000, 70_000), []);
    assert_eq!(s.tx.stats().dupacks_received, 0);
    // ACKs of unsent data and old ACKs are ignored.
    assert_eq!(s.ack(50_000), []);
    assert_eq!(s.ack(500), []);
    assert_eq!(s.tx.snd_una(), Seq(1001));
    // (a) nothing outstanding: an ACK at SND.UNA is not a duplicate.
    let mut s = Script::bulk(TcpConfig {
        initial_window: 1,
        ..cfg()
    });
    s.out();
    s.tmpl.wnd = 0;
    s.ack(1000);
    s.dups(1000, 3);
    assert_eq!(s.tx.stats().dupacks_received, 0);
}

/// Ten segments, the 2nd, 4th and 6th lost (offsets 1000, 3000, 5000);
/// the receiver's ACK stream, up to the first partial ACK, is identical
/// for Reno and NewReno.
fn three_drops(recovery: Recovery) -> Script {
    let mut s = Script::bulk(TcpConfig { recovery, ..cfg() });
    assert_eq!(s.out(), offsets(0, 10));
    s.at(ms(100));
    assert_eq!(s.ack(1000), [n(10_000), n(11_000)]);
    // Segments 2000, 4000, 6000..9000, 10000, 11000 arrive: 8 duplicates.
    let r = s.dups(1000, 8);
    assert_eq!(r[2], [fr(1000)]);
    assert_eq!(r[6], [n(12_000)]);
    assert_eq!(r[7], [n(13_000)]);
    assert_eq!(r.concat().len(), 3);
    s
}

#[test]
fn newreno_retransmits_each_hole_on_partial_acks_and_exits_on_full_ack() {
    let mut s = three_drops(Recovery::NewReno);
    s.at(ms(200));
    // The retransmission of 1000 arrives: ACK 3000 is partial (recover is
    // 12000). Window 13500 - 2000 + 1000 = 12500 allows one new segment.
    assert_eq!(s.ack(3000), [pa(3000), n(14_000)]);
    assert!(s.tx.in_recovery());
    assert_eq!(s.tx.cc_window(), 12_500);
    // The first partial ACK restarted the timer.
    let deadline = s.tx.poll_timeout();
    assert_eq!(deadline, Some(Instant::ZERO + ms(1200)));
    s.at(ms(300));
    assert_eq!(s.ack(5000), [pa(5000), n(15_000)]);
    // The second did not ("Impatient" variant).
    assert_eq!(s.tx.poll_timeout(), deadline);
    s.at(ms(400));
    // Full ACK: everything up to 16000. cwnd = ssthresh = 5500, nothing in
    // flight: five segments.
    assert_eq!(s.ack(16_000), offsets(16_000, 5));
    assert!(!s.tx.in_recovery());
    assert_eq!((s.tx.cwnd(), s.tx.ssthresh()), (5500, 5500));
    let st = s.tx.stats();
    assert_eq!(st.fast_retransmits, 1);
    assert_eq!(st.partial_ack_retransmits, 2);
    assert_eq!(st.timeouts, 0);
    assert_eq!(st.retransmitted_segments, 3);
}

#[test]
fn reno_exits_on_the_first_partial_ack_and_times_out() {
    let mut s = three_drops(Recovery::Reno);
    s.at(ms(200));
    // Deflate to ssthresh: 11000 outstanding > 5500, nothing to send.
    assert_eq!(s.ack(3000), []);
    assert!(!s.tx.in_recovery());
    assert_eq!(s.tx.cwnd(), 5500);
    // More duplicates cannot start another fast retransmit (3000 does not
    // cover more than recover = 12000).
    let r = s.dups(3000, 4);
    assert!(r.concat().is_empty());
    assert_eq!(s.tx.stats().fast_retransmits, 1);
    // The timer, restarted by the ACK at 200 ms, fires one RTO later.
    assert_eq!(s.tx.poll_timeout(), Some(Instant::ZERO + ms(1200)));
    assert_eq!(s.fire(), [to(3000)]);
    assert_eq!(s.tx.cwnd(), 1000);
    // FlightSize 14000 - 3000 = 11000.
    assert_eq!(s.tx.ssthresh(), 5500);
    // The receiver held 4000: ACK 5000 moves on, and the rest follows in
    // slow start from there (go-back-N below SND.MAX = 14000).
    s.at(ms(1300));
    assert_eq!(s.ack(5000), [gb(5000), gb(6000)]);
    let st = s.tx.stats();
    assert_eq!((st.timeouts, st.partial_ack_retransmits), (1, 0));
}

#[test]
fn tahoe_fast_retransmit_goes_back_n_in_slow_start() {
    let mut s = Script::bulk(TcpConfig {
        recovery: Recovery::Tahoe,
        ..cfg()
    });
    s.out();
    s.ack(1000);
    let r = s.dups(1000, 5);
    assert_eq!(r[2], [fr(1000)]);
    assert!(r[3].is_empty() && r[4].is_empty());
    assert_eq!(s.tx.cwnd(), 1000);
    assert!(!s.tx.in_recovery());
    // ACK 3000 (the receiver had 2000): cwnd 2000, resend from 3000.
    assert_eq!(s.ack(3000), [gb(3000), gb(4000)]);
    assert_eq!(s.tx.stats().retransmitted_segments, 3);
}

#[test]
fn rto_backs_off_doubling_up_to_max_rto() {
    let mut s = Script::bulk(TcpConfig {
        initial_window: 1,
        max_rto: Duration::from_secs(5),
        ..cfg()
    });
    assert_eq!(s.out(), [n(0)]);
    let mut fired_at = vec![];
    for _ in 0..5 {
        assert_eq!(s.fire(), [to(0)]);
        fired_at.push(s.now.as_nanos() / 1_000_000_000);
    }
    // Deadlines 1, 1+2, 3+4, 7+5, 12+5 seconds.
    assert_eq!(fired_at, [1, 3, 7, 12, 17]);
    // ssthresh halved once (2 SMSS floor), then held.
    assert_eq!(s.tx.ssthresh(), 2000);
    assert_eq!(s.tx.stats().timeouts, 5);
}

#[test]
fn karn_no_sample_from_a_retransmitted_segment() {
    let mut s = Script::bulk(TcpConfig {
        initial_window: 1,
        ..cfg()
    });
    s.out();
    assert_eq!(s.fire(), [to(0)]);
    assert_eq!(s.tx.rto(), Duration::from_secs(2));
    // The ACK may answer either transmission: no sample, backoff kept.
    s.at(ms(1050));
    assert_eq!(s.ack(1000), [n(1000), n(2000)]);
    assert_eq!(s.tx.srtt(), None);
    assert_eq!(s.tx.rto(), Duration::from_secs(2));
    assert_eq!(s.tx.poll_timeout(), Some(Instant::ZERO + ms(3050)));
    // A new segment's ACK gives the first sample and ends the backoff.
    s.at(ms(1150));
    s.ack(2000);
    assert_eq!(s.tx.srtt(), Some(ms(100)));
    assert_eq!(s.tx.rto(), Duration::from_secs(1));
}

#[test]
fn finite_source_sends_a_short_last_segment_and_fin() {
    let mut s = Script::new(cfg(), AppSource::Finite(2500));
    assert_eq!(
        s.out(),
        [
            n(0),
            n(1000),
            (2000, 500, TxKind::New),
            (2500, 0, TxKind::Fin)
        ]
    );
    let fin = *s.sent.last().unwrap();
    assert!(fin.flags.contains(Flags::FIN | Flags::ACK));
    assert_eq!(fin.seq_len(), 1);
    s.at(ms(50));
    assert_eq!(s.ack(2500), []);
    assert!(s.tx.is_complete() && !s.tx.is_closed());
    assert_eq!(s.tx.completion_time(), Some(Instant::ZERO + ms(50)));
    assert!(s.tx.poll_timeout().is_some()); // the FIN is outstanding
    s.at(ms(60));
    assert_eq!(s.ack(2501), []);
    assert!(s.tx.is_closed());
    assert_eq!(s.tx.poll_timeout(), None);
    assert_eq!(s.tx.completion_time(), Some(Instant::ZERO + ms(50)));
    assert_eq!(s.tx.bytes_acked(), 2500);
}

#[test]
fn lost_fin_is_retransmitted_by_the_timer() {
    let mut s = Script::new(cfg(), AppSource::Finite(1000));
    assert_eq!(s.out(), [n(0), (1000, 0, TxKind::Fin)]);
    s.at(ms(100));
    s.ack(1000);
    assert!(s.tx.is_complete());
    assert_eq!(s.fire(), [(1000, 0, TxKind::TimeoutRetransmit)]);
    assert!(s.sent.last().unwrap().flags.contains(Flags::FIN));
    s.ack(1001);
    assert!(s.tx.is_closed());
}

#[test]
fn handshake_sends_syn_then_data_after_syn_ack() {
    let mut s = Script::bulk(TcpConfig {
        handshake: true,
        isn: Seq(1000),
        ..cfg()
    });
    assert_eq!(s.out(), [(-1, 0, TxKind::Syn)]);
    let syn = s.sent[0];
    assert_eq!(syn.flags, Flags::SYN);
    assert_eq!(syn.seq, Seq(1000));
    assert_eq!(
        s.tx.poll_timeout(),
        Some(Instant::ZERO + Duration::from_secs(1))
    );
    // Plain ACKs are ignored before the SYN-ACK.
    assert_eq!(s.ack(0), []);
    s.at(ms(100));
    let syn_ack = Segment {
        seq: Seq(5000),
        ack: Seq(1001),
        flags: Flags::SYN | Flags::ACK,
        wnd: 4000,
        ..s.tmpl
    };
    assert_eq!(s.feed(syn_ack), offsets(0, 4)); // rwnd 4000
    assert_eq!(s.sent[1].seq, Seq(1001));
    assert_eq!(s.sent[1].ack, Seq(5001));
    assert_eq!(s.tx.srtt(), Some(ms(100)));
}

#[test]
fn lost_syn_is_retransmitted_and_rto_reinitialised_to_three_seconds() {
    let mut s = Script::bulk(TcpConfig {
        handshake: true,
        ..cfg()
    });
    s.out();
    assert_eq!(s.fire(), [(-1, 0, TxKind::TimeoutRetransmit)]);
    assert_eq!(s.sent[1].flags, Flags::SYN);
    s.at(ms(1100));
    let syn_ack = Segment {
        ack: Seq(1),
        flags: Flags::SYN | Flags::ACK,
        ..s.tmpl
    };
    assert_eq!(s.feed(syn_ack).len(), 10);
    assert_eq!(s.tx.srtt(), None); // Karn
    assert_eq!(s.tx.rto(), Duration::from_secs(3)); // RFC 6298 (5.7)
    let st = s.tx.stats();
    assert_eq!((st.timeouts, st.retransmitted_segments), (1, 1));
}

#[test]
fn max_burst_limits_segments_per_ack() {
    let mut s = Script::bulk(TcpConfig {
        max_burst: Some(3),
        ..cfg()
    });
    assert_eq!(s.out(), offsets(0, 3));
    assert_eq!(s.ack(1000), offsets(3000, 3));
    // A stretch ACK for five segments: cwnd allows more, the burst not.
    assert_eq!(s.ack(6000), offsets(6000, 3));
    assert!(s.tx.cc_window() - (s.tx.snd_nxt().diff(s.tx.snd_una()) as u64) > 3000);
    // The retransmission a duplicate ACK demands is not counted.
    let r = s.dups(6000, 3);
    assert_eq!(r[2], [fr(6000)]);
}

#[test]
fn sequence_numbers_wrap() {
    let isn = Seq(u32::MAX - 2500);
    let mut s = Script::bulk(TcpConfig { isn, ..cfg() });
    assert_eq!(s.out(), offsets(0, 10));
    let raw: Vec<u32> = s.sent.iter().take(5).map(|g| g.seq.0).collect();
    assert_eq!(
        raw,
        [u32::MAX - 2499, u32::MAX - 1499, u32::MAX - 499, 500, 1500]
    );
    s.at(ms(100));
    assert_eq!(s.ack(1000), [n(10_000), n(11_000)]);
    let r = s.dups(1000, 3);
    assert_eq!(r[2], [fr(1000)]);
    assert_eq!(s.tx.ssthresh(), 5500);
    assert_eq!(s.ack(5000).first(), Some(&pa(5000)));
    assert_eq!(s.ack(12_000), offsets(12_000, 5));
    assert!(!s.tx.in_recovery());
    assert_eq!(s.tx.snd_una(), isn + 12_001);
}

fn sr(off: i64) -> Tx {
    (off, MSS, TxKind::SackRetransmit)
}

impl Script {
    /// An ACK of everything below `off` carrying SACK blocks (offsets).
    fn sack(&mut self, off: u32, blocks: &[(u32, u32)]) -> Vec<Tx> {
        let mut sack = pep_core::SackBlocks::new();
        for &(l, r) in blocks {
            sack.push(self.base + l, self.base + r);
        }
        let seg = Segment {
            ack: self.base + off,
            sack,
            ..self.tmpl
        };
        self.feed(seg)
    }
}

#[test]
fn sack_recovery_sends_by_pipe_and_next_seg() {
    // As `three_drops`: 1000, 3000 and 5000 lost, every other segment of
    // 0..12000 arrives; the receiver SACKs what it holds, newest first.
    let mut s = Script::bulk(TcpConfig {
        recovery: Recovery::Sack,
        ..cfg()
    });
    assert_eq!(s.out(), offsets(0, 10));
    s.at(ms(100));
    assert_eq!(s.ack(1000), [n(10_000), n(11_000)]);
    // Two duplicates: IsLost(1000) is not yet true (2000 bytes above).
    assert_eq!(s.sack(1000, &[(2000, 3000)]), []);
    assert_eq!(s.sack(1000, &[(4000, 5000), (2000, 3000)]), []);
    // The third: fast retransmit; ssthresh = cwnd = 11000 / 2, no inflation.
    let b3 = [(6000, 7000), (4000, 5000), (2000, 3000)];
    assert_eq!(s.sack(1000, &b3), [fr(1000)]);
    assert_eq!((s.tx.cwnd(), s.tx.cc_window()), (5500, 5500));
    // An ACK repeating known blocks is not a duplicate, sends nothing.
    assert_eq!(s.sack(1000, &b3), []);
    assert_eq!(s.tx.stats().dupacks_received, 3);
    // 3000 is now lost (3000 bytes SACKed above it) and out of the pipe:
    // pipe = 5000..6000, 8000..12000 and the retransmission = 6000.
    assert_eq!(
        s.sack(1000, &[(6000, 8000), (4000, 5000), (2000, 3000)]),
        []
    );
    // 5000 lost too: pipe 4000, room for one: the lowest hole (rule 1).
    assert_eq!(
        s.sack(1000, &[(6000, 9000), (4000, 5000), (2000, 3000)]),
        [sr(3000)]
    );
    let b = [(6000, 10_000), (4000, 5000), (2000, 3000)];
    assert_eq!(s.sack(1000, &b), [sr(5000)]);
    // Nothing left to repair: new data (rule 2), one per segment leaving.
    let b = [(6000, 11_000), (4000, 5000), (2000, 3000)];
    assert_eq!(s.sack(1000, &b), [n(12_000)]);
    let b = [(6000, 12_000), (4000, 5000), (2000, 3000)];
    assert_eq!(s.sack(1000, &b), [n(13_000)]);
    // The retransmission of 1000 arrives: a partial ACK, new data only.
    s.at(ms(200));
    let b = [(4000, 5000), (6000, 12_000)];
    assert_eq!(s.sack(3000, &b), [n(14_000)]);
    assert!(s.tx.in_recovery());
    // The other two: SND.UNA passes RecoveryPoint (12000) and recovery
    // ends with cwnd = ssthresh.
    assert_eq!(s.sack(5000, &[(6000, 12_000)]), [n(15_000)]);
    assert_eq!(s.sack(12_000, &[]), [n(16_000)]);
    assert!(!s.tx.in_recovery());
    assert_eq!(s.tx.cwnd(), 5500);
    let st = s.tx.stats();
    assert_eq!(
        (st.fast_retransmits, st.sack_retransmits, st.timeouts),
        (1, 2, 0)
    );
    assert_eq!(st.partial_ack_retransmits, 0);
}

/// `cubic-ns2` (ns-2's `Agent/TCP/Linux`) grows its window only on an ACK
/// that found it full; RFC 5681 senders grow on every ACK of new data.
#[test]
fn linux_agent_grows_only_when_the_window_was_full() {
    for (growth, grows) in [
        (pep_core::cc::Growth::CubicNs2, false),
        (pep_core::cc::Growth::default(), true),
    ] {
        let cfg = TcpConfig { growth, ..cfg() };
        // Three segments written, a window of ten: application-limited.
        let mut s = Script::new(cfg, AppSource::Open(3000));
        assert_eq!(s.out(), offsets(0, 3));
        s.at(ms(100));
        s.ack(1000);
        let expect = if grows { 11_000 } else { 10_000 };
        assert_eq!(s.tx.cwnd(), expect, "{growth:?}");
    }
    // Window-limited, it grows as any slow start does.
    let mut s = Script::bulk(TcpConfig {
        growth: pep_core::cc::Growth::CubicNs2,
        ..cfg()
    });
    s.out();
    s.at(ms(100));
    assert_eq!(s.ack(1000), [n(10_000), n(11_000)]);
    assert_eq!(s.tx.cwnd(), 11_000);
}

/// `cubic-ns2` restarts the retransmission timer on every ACK while data
/// is outstanding, duplicates too (the agent's `renew_timer`); RFC 6298
/// only on new data.
#[test]
fn linux_agent_restarts_the_timer_on_every_ack() {
    for (growth, renews) in [
        (pep_core::cc::Growth::CubicNs2, true),
        (pep_core::cc::Growth::default(), false),
    ] {
        let mut s = Script::bulk(TcpConfig { growth, ..cfg() });
        s.out();
        let first = s.tx.poll_timeout().expect("timer");
        s.at(ms(300));
        s.ack(0); // a duplicate: nothing new acknowledged
        let after = s.tx.poll_timeout().expect("timer");
        assert_eq!(after != first, renews, "{growth:?}");
        if renews {
            assert_eq!(after, first + ms(300));
        }
    }
}
