//! Scripted conversations with the sink: data segments in, exact ACKs out.
//! Offsets are bytes from the first data byte (peer ISN + 1).

use pep_core::{Duration, Flags, FlowId, Instant, Segment, Seq};

use super::sink::MAX_OOO_RANGES;
use super::*;

const FLOW: FlowId = FlowId(3);
const MSS: u32 = 1000;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

struct Script {
    rx: TcpSink,
    now: Instant,
    base: Seq,
    tmpl: Segment,
}

/// What one ACK says: ACK offset and SACK blocks as offsets.
#[derive(Debug, PartialEq, Eq)]
struct Ack {
    ack: i64,
    sack: Vec<(i64, i64)>,
}

fn a(ack: i64) -> Ack {
    Ack { ack, sack: vec![] }
}
fn sa(ack: i64, sack: &[(i64, i64)]) -> Ack {
    Ack {
        ack,
        sack: sack.to_vec(),
    }
}

impl Script {
    fn new(cfg: SinkConfig) -> Script {
        let base = cfg.peer_isn + 1;
        Script {
            rx: TcpSink::new(FLOW, &cfg),
            now: Instant::ZERO,
            base,
            tmpl: Segment {
                flow: FLOW,
                ack: Seq(1),
                flags: Flags::ACK,
                len: MSS,
                hdr_len: 40,
                wnd: 1 << 30,
                ..Segment::default()
            },
        }
    }
    fn at(&mut self, t: Duration) -> &mut Self {
        self.now = Instant::ZERO + t;
        self
    }
    fn drain(&mut self) -> Vec<Ack> {
        let mut v = Vec::new();
        while let Some(seg) = self.rx.poll_transmit(self.now) {
            assert_eq!(seg.flow, FLOW);
            assert!(seg.is_pure_ack());
            assert_eq!((seg.len, seg.hdr_len, seg.seq), (0, 40, Seq(1)));
            let rel = |s: Seq| s.diff(self.base) as i64;
            v.push(Ack {
                ack: rel(seg.ack),
                sack: seg
                    .sack
                    .as_slice()
                    .iter()
                    .map(|&(l, r)| (rel(l), rel(r)))
                    .collect(),
            });
        }
        v
    }
    fn feed(&mut self, seg: Segment) -> Vec<Ack> {
        self.rx.handle_segment(self.now, &seg);
        self.drain()
    }
    /// A full segment at `off`.
    fn data(&mut self, off: u32) -> Vec<Ack> {
        let seg = Segment {
            seq: self.base + off,
            ..self.tmpl
        };
        self.feed(seg)
    }
    fn fire(&mut self) -> Vec<Ack> {
        let t = self.rx.poll_timeout().expect("timer running");
        self.now = t;
        self.rx.handle_timeout(t);
        self.drain()
    }
    /// Checks the byte and ACK identities documented on `SinkStats`.
    fn check_identities(&self) {
        let s = self.rx.stats();
        assert_eq!(
            s.bytes_received,
            s.bytes_in_order + s.bytes_out_of_order + s.bytes_duplicate + s.bytes_dropped
        );
        assert_eq!(
            s.acks_sent + s.acks_replaced,
            s.acks_by_count + s.acks_by_timer + s.acks_immediate + s.acks_window_update
        );
    }
}

fn delayed(count: u32) -> SinkConfig {
    SinkConfig {
        ack: AckPolicy::Delayed {
            count,
            timeout: ms(100),
        },
        ..SinkConfig::default()
    }
}

#[test]
fn every_policy_acks_each_segment() {
    let mut s = Script::new(SinkConfig::default());
    assert_eq!(s.data(0), [a(1000)]);
    assert_eq!(s.data(1000), [a(2000)]);
    assert_eq!(s.rx.delivered_bytes(), 2000);
    assert_eq!(s.rx.poll_timeout(), None);
    let st = *s.rx.stats();
    assert_eq!(
        (st.acks_sent, st.acks_by_count, st.acks_immediate),
        (2, 2, 0)
    );
    s.check_identities();
}

#[test]
fn acks_advertise_the_configured_window() {
    let mut s = Script::new(SinkConfig {
        rwnd: 20_000,
        ..SinkConfig::default()
    });
    s.rx.handle_segment(
        s.now,
        &Segment {
            seq: s.base,
            ..s.tmpl
        },
    );
    let ack = s.rx.poll_transmit(s.now).unwrap();
    assert_eq!(ack.wnd, 20_000);
    assert_eq!(ack.flags, Flags::ACK);
    assert!(ack.sack.is_empty());
}

#[test]
fn delayed_acks_every_second_segment() {
    let mut s = Script::new(delayed(2));
    assert_eq!(s.data(0), []);
    assert_eq!(s.rx.poll_timeout(), Some(Instant::ZERO + ms(100)));
    s.at(ms(10));
    assert_eq!(s.data(1000), [a(2000)]);
    assert_eq!(s.rx.poll_timeout(), None);
    assert_eq!(s.data(2000), []);
    assert_eq!(s.data(3000), [a(4000)]);
    assert_eq!(s.rx.stats().acks_by_count, 2);
    s.check_identities();
}

#[test]
fn delayed_ack_timer_fires_for_a_lone_segment_at_exactly_the_timeout() {
    let mut s = Script::new(delayed(2));
    s.at(ms(5));
    assert_eq!(s.data(0), []);
    let due = Instant::ZERO + ms(105);
    assert_eq!(s.rx.poll_timeout(), Some(due));
    // One nanosecond early: nothing.
    s.rx.handle_timeout(due - Duration(1));
    assert_eq!(s.drain(), []);
    assert_eq!(s.fire(), [a(1000)]);
    assert_eq!(s.now, due);
    assert_eq!(s.rx.poll_timeout(), None);
    assert_eq!(s.rx.stats().acks_by_timer, 1);
    s.check_identities();
}

#[test]
fn bsd_tick_fires_at_the_next_tick_after_deferral() {
    // BSD's fast timer: a 200 ms tick and no extra timeout, so a deferred
    // ACK leaves at the next multiple of 200 ms: 0 to 200 ms later.
    let cfg = SinkConfig {
        ack: AckPolicy::Delayed {
            count: 2,
            timeout: Duration::ZERO,
        },
        delack_tick: Some(ms(200)),
        ..SinkConfig::default()
    };
    let mut s = Script::new(cfg);
    for (deferred, due) in [(250, 400), (399, 400), (400, 600), (1, 200)] {
        s.at(ms(deferred));
        let off = s.rx.delivered_bytes() as u32;
        assert_eq!(s.data(off), []);
        assert_eq!(
            s.rx.poll_timeout(),
            Some(Instant::ZERO + ms(due)),
            "deferred at {deferred} ms"
        );
        assert_eq!(s.fire().len(), 1);
    }
    s.check_identities();
}

#[test]
fn tick_rounds_a_timeout_up_to_the_tick() {
    let cfg = SinkConfig {
        ack: AckPolicy::Delayed {
            count: 2,
            timeout: ms(100),
        },
        delack_tick: Some(ms(200)),
        ..SinkConfig::default()
    };
    let mut s = Script::new(cfg);
    s.at(ms(150));
    assert_eq!(s.data(0), []);
    // 150 + 100 = 250 ms, rounded up to the 400 ms tick.
    assert_eq!(s.rx.poll_timeout(), Some(Instant::ZERO + ms(400)));
}

#[test]
fn later_segments_do_not_restart_the_delayed_ack_timer() {
    let mut s = Script::new(delayed(3));
    assert_eq!(s.data(0), []);
    s.at(ms(60));
    assert_eq!(s.data(1000), []);
    assert_eq!(s.rx.poll_timeout(), Some(Instant::ZERO + ms(100)));
    assert_eq!(s.fire(), [a(2000)]);
}

#[test]
fn out_of_order_segments_are_acked_at_once() {
    let mut s = Script::new(delayed(2));
    assert_eq!(s.data(0), []);
    // Out of order: an immediate ACK, which also covers the held segment.
    assert_eq!(s.data(2000), [a(1000)]);
    assert_eq!(s.rx.poll_timeout(), None);
    // Another: a duplicate ACK.
    assert_eq!(s.data(3000), [a(1000)]);
    let st = *s.rx.stats();
    assert_eq!((st.acks_immediate, st.dup_acks_sent), (2, 1));
    assert_eq!(st.bytes_out_of_order, 2000);
    assert_eq!(s.rx.delivered_bytes(), 1000);
    s.check_identities();
}

#[test]
fn a_segment_filling_a_hole_is_acked_at_once() {
    let mut s = Script::new(delayed(2));
    s.data(0);
    s.data(2000);
    s.data(4000);
    // Fills part of the gap: immediate, cumulative to 3000.
    assert_eq!(s.data(1000), [a(3000)]);
    // Fills the rest.
    assert_eq!(s.data(3000), [a(5000)]);
    assert_eq!(s.rx.ooo_ranges(), 0);
    assert_eq!(s.rx.delivered_bytes(), 5000);
    // Back to in-order with no hole: delayed again.
    assert_eq!(s.data(5000), []);
    assert_eq!(s.rx.stats().acks_immediate, 4);
    s.check_identities();
}

#[test]
fn sack_blocks_most_recent_first() {
    let mut s = Script::new(SinkConfig {
        sack: true,
        ..SinkConfig::default()
    });
    assert_eq!(s.data(0), [a(1000)]);
    assert_eq!(s.data(2000), [sa(1000, &[(2000, 3000)])]);
    assert_eq!(s.data(4000), [sa(1000, &[(4000, 5000), (2000, 3000)])]);
    assert_eq!(
        s.data(6000),
        [sa(1000, &[(6000, 7000), (4000, 5000), (2000, 3000)])]
    );
    // Four ranges: only the three most recent are reported.
    assert_eq!(
        s.data(8000),
        [sa(1000, &[(8000, 9000), (6000, 7000), (4000, 5000)])]
    );
    // 3000 joins two ranges; the merged block comes first.
    assert_eq!(
        s.data(3000),
        [sa(1000, &[(2000, 5000), (8000, 9000), (6000, 7000)])]
    );
    // A duplicate inside a range makes it the most recent again.
    assert_eq!(
        s.data(6000),
        [sa(1000, &[(6000, 7000), (2000, 5000), (8000, 9000)])]
    );
    // Cumulative progress removes covered ranges.
    assert_eq!(s.data(1000), [sa(5000, &[(6000, 7000), (8000, 9000)])]);
    s.check_identities();
}

#[test]
fn duplicates_are_counted_and_acked_at_once() {
    let mut s = Script::new(delayed(2));
    s.data(0);
    s.data(1000);
    assert_eq!(s.data(0), [a(2000)]);
    // Overlapping: 500 old bytes, 1000 new.
    let seg = Segment {
        seq: s.base + 1500,
        len: 1500,
        ..s.tmpl
    };
    assert_eq!(s.feed(seg), []);
    let st = *s.rx.stats();
    assert_eq!(st.bytes_duplicate, 1500);
    assert_eq!(st.dup_acks_sent, 1);
    assert_eq!(s.rx.delivered_bytes(), 3000);
    s.check_identities();
}

#[test]
fn data_beyond_the_window_is_dropped() {
    let mut s = Script::new(SinkConfig {
        rwnd: 4000,
        ..SinkConfig::default()
    });
    assert_eq!(s.data(4000), [a(0)]);
    // Straddling the right edge: the part inside is kept.
    let seg = Segment {
        seq: s.base + 3500,
        ..s.tmpl
    };
    assert_eq!(s.feed(seg), [a(0)]);
    let st = *s.rx.stats();
    assert_eq!((st.bytes_dropped, st.bytes_out_of_order), (1500, 500));
    s.check_identities();
}

#[test]
fn reassembly_record_is_bounded() {
    // A window wide enough for every range (two segments each).
    let mut s = Script::new(SinkConfig {
        rwnd: 1 << 26,
        ..SinkConfig::default()
    });
    for k in 0..MAX_OOO_RANGES as u32 {
        s.data(2000 + 2 * k * MSS);
    }
    assert_eq!(s.rx.ooo_ranges(), MAX_OOO_RANGES);
    // One more separate range does not fit; joining an existing one does.
    s.data(2000 + 2 * MAX_OOO_RANGES as u32 * MSS);
    assert_eq!(s.rx.stats().bytes_dropped, 1000);
    s.data(3000);
    assert_eq!(s.rx.ooo_ranges(), MAX_OOO_RANGES - 1);
    assert_eq!(s.data(0), [a(1000)]);
    assert_eq!(s.data(1000), [a(5000)]);
    s.check_identities();
}

#[test]
fn fin_is_acked_at_once_in_or_out_of_order() {
    let mut s = Script::new(delayed(2));
    s.data(0);
    let fin = Segment {
        seq: s.base + 2000,
        len: 500,
        flags: Flags::ACK | Flags::FIN,
        ..s.tmpl
    };
    // Out of order: acknowledged, not consumed.
    assert_eq!(s.feed(fin), [a(1000)]);
    assert!(!s.rx.fin_received());
    // The hole fills: RCV.NXT moves past the data and the FIN.
    assert_eq!(s.data(1000), [a(2501)]);
    assert!(s.rx.fin_received());
    assert_eq!(s.rx.delivered_bytes(), 2500);
    // A retransmitted FIN is a duplicate.
    assert_eq!(s.feed(fin), [a(2501)]);
    s.check_identities();
}

#[test]
fn syn_is_answered_with_a_syn_ack() {
    let mut s = Script::new(SinkConfig {
        isn: Seq(7000),
        ..SinkConfig::default()
    });
    let syn = Segment {
        seq: Seq(100),
        len: 0,
        flags: Flags::SYN,
        ..s.tmpl
    };
    s.rx.handle_segment(s.now, &syn);
    let sa = s.rx.poll_transmit(s.now).unwrap();
    assert_eq!(sa.flags, Flags::SYN | Flags::ACK);
    assert_eq!((sa.seq, sa.ack, sa.wnd), (Seq(7000), Seq(101), 65_535));
    assert_eq!(s.rx.poll_transmit(s.now), None);
    // Data from ISN + 1; the ACKs carry the sink's ISN + 1.
    s.rx.handle_segment(
        s.now,
        &Segment {
            seq: Seq(101),
            ..s.tmpl
        },
    );
    let ack = s.rx.poll_transmit(s.now).unwrap();
    assert_eq!((ack.seq, ack.ack), (Seq(7001), Seq(1101)));
    assert_eq!(s.rx.stats().syn_acks_sent, 1);
}

#[test]
fn window_probe_is_answered() {
    let mut s = Script::new(delayed(2));
    s.data(0);
    s.data(1000);
    let probe = Segment {
        seq: s.base + 1999,
        len: 0,
        ..s.tmpl
    };
    assert_eq!(s.feed(probe), [a(2000)]);
    // A pure ACK in sequence (the sender's ACK of our nothing) is not.
    let plain = Segment {
        seq: s.base + 2000,
        len: 0,
        ..s.tmpl
    };
    assert_eq!(s.feed(plain), []);
}

#[test]
fn sequence_numbers_wrap() {
    let mut s = Script::new(SinkConfig {
        peer_isn: Seq(u32::MAX - 1500),
        sack: true,
        ..SinkConfig::default()
    });
    assert_eq!(s.data(0), [a(1000)]);
    assert_eq!(s.data(2000), [sa(1000, &[(2000, 3000)])]); // crosses zero
    assert_eq!(s.data(1000), [a(3000)]);
    assert_eq!(s.rx.rcv_nxt(), Seq(1500));
    assert_eq!(s.rx.delivered_bytes(), 3000);
}

#[test]
fn segments_of_other_flows_are_ignored() {
    let mut s = Script::new(SinkConfig::default());
    let other = Segment {
        flow: FlowId(99),
        seq: s.base,
        ..s.tmpl
    };
    assert_eq!(s.feed(other), []);
    assert_eq!(s.rx.stats().segments_received, 0);
}

/// A buffered receiver with room for `segments` segments.
fn buffered(segments: u32) -> SinkConfig {
    SinkConfig {
        rwnd: segments * MSS,
        mss: MSS,
        app_reads: true,
        ..SinkConfig::default()
    }
}

/// The window the last ACK of `s` advertised, from a fresh poll.
fn last_wnd(s: &mut Script, off: u32) -> u32 {
    // Re-deliver a duplicate to make the sink speak; its ACK carries the window.
    let seg = Segment {
        seq: s.base + off,
        ..s.tmpl
    };
    s.rx.handle_segment(s.now, &seg);
    let mut w = None;
    while let Some(a) = s.rx.poll_transmit(s.now) {
        w = Some(a.wnd);
    }
    w.expect("an ACK")
}

#[test]
fn unread_data_closes_the_window_and_reads_reopen_it() {
    let mut s = Script::new(buffered(4));
    for i in 0..4 {
        s.data(i * MSS);
    }
    assert_eq!(s.rx.readable(), 4000);
    assert_eq!(s.rx.window(), 0);
    assert_eq!(last_wnd(&mut s, 0), 0);
    // A segment beyond the closed window is dropped, not recorded.
    assert_eq!(s.data(4000), [a(4000)]);
    assert_eq!(s.rx.stats().bytes_dropped, 1000);
    // Reading one segment opens less than two segments: no update yet.
    assert_eq!(s.rx.read(1000), 1000);
    assert!(s.drain().is_empty());
    // Reading a second one opens two: a window update advertising 2000.
    assert_eq!(s.rx.read(1000), 1000);
    let mut acks = Vec::new();
    while let Some(seg) = s.rx.poll_transmit(s.now) {
        acks.push((seg.ack, seg.wnd));
    }
    assert_eq!(acks, [(s.base + 4000, 2000)]);
    assert_eq!(s.rx.stats().acks_window_update, 1);
    // The data now fits.
    assert_eq!(s.data(4000), [a(5000)]);
    assert_eq!(s.rx.delivered_bytes(), 5000);
    assert_eq!(s.rx.read(u64::MAX), 3000);
    assert_eq!(s.drain(), [a(5000)]);
    s.check_identities();
}

#[test]
fn small_buffers_update_at_half_the_buffer() {
    // Two segments of buffer: two segments would be the whole buffer, so
    // half of it (one segment) is enough for an update.
    let mut s = Script::new(buffered(2));
    s.data(0);
    s.data(MSS);
    assert_eq!(s.rx.window(), 0);
    s.rx.read(1000);
    assert_eq!(s.drain(), [a(2000)]);
    s.check_identities();
}

#[test]
fn without_app_reads_nothing_waits() {
    let mut s = Script::new(SinkConfig::default());
    s.data(0);
    assert_eq!((s.rx.readable(), s.rx.read(10_000)), (0, 0));
    assert_eq!(s.rx.window(), 65_535);
}

#[test]
fn a_read_while_an_ack_is_due_adds_no_second_ack() {
    // Buffered, every 2nd segment: the count ACK and the read's window
    // update would both fire on the 2nd segment; one ACK carries both.
    let mut s = Script::new(SinkConfig {
        ack: AckPolicy::Delayed {
            count: 2,
            timeout: ms(100),
        },
        ..buffered(8)
    });
    s.rx.handle_segment(
        s.now,
        &Segment {
            seq: s.base,
            ..s.tmpl
        },
    );
    s.rx.read(u64::MAX);
    assert!(s.drain().is_empty(), "one segment read: no update yet");
    s.rx.handle_segment(
        s.now,
        &Segment {
            seq: s.base + MSS,
            ..s.tmpl
        },
    );
    s.rx.read(u64::MAX);
    assert_eq!(s.drain(), [a(2000)]);
    let st = *s.rx.stats();
    assert_eq!((st.acks_by_count, st.acks_window_update), (1, 0));
    s.check_identities();
}

#[test]
fn counts_increments_and_splits_duplicate_bytes() {
    let mut s = Script::new(delayed(3));
    s.data(0);
    s.data(1000);
    assert_eq!(s.rx.stats().count_increments, 2);
    // Entirely duplicate: 1000 B duplicate-only.
    s.data(0);
    // Half old, half new: 500 B partly duplicate.
    let seg = Segment {
        seq: s.base + 1500,
        ..s.tmpl
    };
    s.feed(seg);
    let st = *s.rx.stats();
    assert_eq!(st.bytes_duplicate_only, 1000);
    assert_eq!(st.bytes_partly_duplicate, 500);
    assert_eq!(
        st.bytes_duplicate,
        st.bytes_duplicate_only + st.bytes_partly_duplicate
    );
    s.check_identities();
}

#[test]
fn adaptive_interval_widens_in_order_and_falls_back_on_a_hole() {
    let mut s = Script::new(SinkConfig {
        ack: AckPolicy::Adaptive {
            min: 2,
            max: 4,
            timeout: ms(100),
        },
        ..SinkConfig::default()
    });
    // ACKs after 2, then 3, then 4, then 4 segments.
    let mut acked = Vec::new();
    for i in 0..13u32 {
        for ack in s.data(i * MSS) {
            acked.push(ack.ack / MSS as i64);
        }
    }
    assert_eq!(acked, [2, 5, 9, 13]);
    assert_eq!(s.rx.stats().ack_interval, 4);
    // A hole: immediate duplicate ACK, then the fill is ACKed at once and
    // the interval is back to 2.
    assert_eq!(s.data(14 * MSS), [a(13_000)]);
    assert_eq!(s.data(13 * MSS), [a(15_000)]);
    assert!(s.data(15 * MSS).is_empty());
    assert_eq!(s.data(16 * MSS), [a(17_000)]);
    assert_eq!(s.rx.stats().ack_interval, 3);
    assert_eq!(s.rx.adaptive_stats().unwrap().fell_back, 1);
    // The timer sends a partial count and halves the interval (not below 2).
    s.data(17 * MSS);
    assert_eq!(s.fire(), [a(18_000)]);
    s.check_identities();
}

/// An outgoing data segment of the sink's host (bidirectional flows).
fn outgoing() -> Segment {
    Segment {
        flow: FLOW,
        seq: Seq(5000),
        flags: Flags::ACK,
        len: MSS,
        hdr_len: 40,
        wnd: 1 << 30,
        ..Segment::default()
    }
}

#[test]
fn data_carries_a_held_delayed_ack_and_stops_its_timer() {
    let mut s = Script::new(delayed(2));
    assert_eq!(s.data(0), []);
    assert!(s.rx.poll_timeout().is_some());
    let mut seg = outgoing();
    s.rx.piggyback(&mut seg);
    assert_eq!(seg.ack, s.base + 1000);
    assert_eq!(seg.wnd, 65_535, "the receiver's window, not the sender's");
    assert_eq!(s.rx.poll_timeout(), None, "the ACK went out on data");
    assert_eq!(s.drain(), []);
    // The next segment starts a new count: with no data to carry it, the
    // delayed-ACK rules apply (the count here).
    assert_eq!(s.data(1000), []);
    assert_eq!(s.data(2000), [a(3000)]);
    // Data that owes nothing is not a piggybacked ACK.
    let mut seg = outgoing();
    s.rx.piggyback(&mut seg);
    // And with no data at all, the timer sends it.
    assert_eq!(s.data(3000), []);
    assert_eq!(s.fire(), [a(4000)]);
    let st = *s.rx.stats();
    assert_eq!((st.acks_piggybacked, st.acks_replaced), (1, 0));
    assert_eq!((st.acks_by_count, st.acks_by_timer), (1, 1));
    s.check_identities();
}

#[test]
fn data_replaces_queued_acks_and_carries_sack_blocks() {
    let mut s = Script::new(SinkConfig {
        sack: true,
        ..SinkConfig::default()
    });
    s.rx.handle_segment(
        s.now,
        &Segment {
            seq: s.base + 2000,
            ..s.tmpl
        },
    );
    // An out-of-order segment queued an immediate ACK; data carries it.
    let mut seg = outgoing();
    s.rx.piggyback(&mut seg);
    assert_eq!(seg.ack, s.base);
    assert_eq!(seg.sack.as_slice(), &[(s.base + 2000, s.base + 3000)]);
    assert_eq!(s.drain(), []);
    let st = *s.rx.stats();
    assert_eq!(
        (st.acks_piggybacked, st.acks_replaced, st.acks_sent),
        (1, 1, 0)
    );
    s.check_identities();
}

#[test]
fn a_pure_ack_inside_the_window_is_acceptable_and_not_answered() {
    let mut s = Script::new(SinkConfig::default());
    assert_eq!(s.data(0), [a(1000)]);
    let tmpl = s.tmpl;
    let ack = |off: u32| Segment {
        seq: Seq(1) + off,
        len: 0,
        ..tmpl
    };
    // A bidirectional peer's pure ACK carries its SND.MAX, which may be
    // above our RCV.NXT: acceptable (RFC 9293 3.10.7.4), no reply.
    assert_eq!(s.feed(ack(3000)), []);
    // Below RCV.NXT (a window probe) or beyond the window: answered.
    assert_eq!(s.feed(ack(999)), [a(1000)]);
    assert_eq!(s.feed(ack(1000 + 65_536)), [a(1000)]);
}
