//! The credit gate driven by a scripted model: a local FIFO fed by on/off
//! arrivals, a tunnel that sends one packet per serialization time while it
//! has unsent bytes. Polling and event-driven checks are compared on the
//! same input.

use std::collections::VecDeque;

use super::*;

const PKT: u32 = 1040;
/// Model resolution.
const STEP: u64 = 10_000;

struct Run {
    /// (packet id, admission time ns), in admission order.
    admitted: Vec<(u64, u64)>,
    /// Arrival time of each packet id.
    arrived: Vec<u64>,
    /// Largest unsent tunnel backlog seen, bytes.
    max_backlog: u64,
    tunnel_sent: u64,
    retx_bytes: u64,
    credit_plus_backlog_ok: bool,
}

/// 2 s: arrivals at 20 Mbit/s for 200 ms, then 300 ms off, repeated; the
/// tunnel sends at 10 Mbit/s. Every `retx_every`-th tunnel transmission is
/// a retransmission (sends no backlog, but `output()` still adds credit).
fn run(mode: CheckMode, buffer_start: u64, retx_every: Option<u64>) -> Run {
    let cfg = CreditConfig {
        buffer_start,
        packet: PKT,
        mode,
    };
    let mut credit = Credit::new(cfg, Instant::ZERO);
    let mut queue: VecDeque<u64> = VecDeque::new();
    let arrival_gap = 416_000; // 1040 B at 20 Mbit/s
    let tx_time = 832_000; // at 10 Mbit/s
    let mut next_arrival = 0u64;
    let mut next_tx_free = 0u64;
    let mut backlog = 0u64;
    let mut out = Run {
        admitted: vec![],
        arrived: vec![],
        max_backlog: 0,
        tunnel_sent: 0,
        retx_bytes: 0,
        credit_plus_backlog_ok: true,
    };
    let mut sends = 0u64;
    let end = 2_000_000_000u64;
    let mut t = 0u64;
    while t < end {
        let now = Instant(t);
        let mut event = false;
        while next_arrival <= t {
            if next_arrival % 500_000_000 < 200_000_000 {
                queue.push_back(out.arrived.len() as u64);
                out.arrived.push(next_arrival);
                event = true;
            }
            next_arrival += arrival_gap;
        }
        if next_tx_free <= t {
            sends += 1;
            let retx = retx_every.is_some_and(|k| sends.is_multiple_of(k));
            if retx {
                credit.on_output(PKT, true);
                out.retx_bytes += PKT as u64;
                next_tx_free = t + tx_time;
                event = true;
            } else if backlog >= PKT as u64 {
                backlog -= PKT as u64;
                credit.on_output(PKT, false);
                out.tunnel_sent += PKT as u64;
                next_tx_free = t + tx_time;
                event = true;
            }
        }
        let poll = credit.poll_timeout().is_some_and(|at| at <= now) && credit.handle_timeout(now);
        if poll || (event && credit.checks_on_events()) {
            let mut q = Model {
                queue: &mut queue,
                admitted: &mut out.admitted,
                backlog: &mut backlog,
                t,
            };
            credit.check(&mut q);
        }
        out.max_backlog = out.max_backlog.max(backlog);
        if credit.buffer_count() + backlog as i64 != (buffer_start + out.retx_bytes) as i64 {
            out.credit_plus_backlog_ok = false;
        }
        t += STEP;
    }
    out
}

struct Model<'a> {
    queue: &'a mut VecDeque<u64>,
    admitted: &'a mut Vec<(u64, u64)>,
    backlog: &'a mut u64,
    t: u64,
}

impl LocalQueue for Model<'_> {
    fn waiting(&self) -> bool {
        !self.queue.is_empty()
    }
    fn admit_next(&mut self) -> Option<u32> {
        let id = self.queue.pop_front()?;
        self.admitted.push((id, self.t));
        *self.backlog += PKT as u64;
        Some(PKT)
    }
}

impl LocalQueue for VecDeque<u32> {
    fn waiting(&self) -> bool {
        !self.is_empty()
    }
    fn admit_next(&mut self) -> Option<u32> {
        self.pop_front()
    }
}

fn poll(ms: u64) -> CheckMode {
    CheckMode::Poll {
        interval: Duration::from_millis(ms),
    }
}

/// Mean admission delay (arrival to admission), seconds.
fn mean_wait(r: &Run) -> f64 {
    let sum: u64 = r
        .admitted
        .iter()
        .map(|&(id, at)| at - r.arrived[id as usize])
        .sum();
    sum as f64 / r.admitted.len() as f64 * 1e-9
}

#[test]
fn polling_and_events_admit_the_same_packets_in_the_same_order() {
    let ev = run(CheckMode::Event, 20 * PKT as u64, None);
    let po = run(poll(1), 20 * PKT as u64, None);
    // Offered 20 Mbit/s for 40% of the time = 8 Mbit/s < 10: everything
    // gets in, in arrival order, in both modes.
    assert_eq!(ev.admitted.len(), ev.arrived.len());
    assert_eq!(po.admitted.len(), po.arrived.len());
    let ids = |r: &Run| r.admitted.iter().map(|a| a.0).collect::<Vec<_>>();
    assert_eq!(ids(&ev), ids(&po));
    // Each packet enters later with polling, never earlier, and by at most
    // two intervals (plus model steps): one waiting for the check, one
    // because the tunnel, restarting after an idle spell, started sending
    // (and so giving credit) up to one interval later.
    for (e, p) in ev.admitted.iter().zip(&po.admitted) {
        assert!(p.1 >= e.1, "{p:?} before {e:?}");
        assert!(p.1 - e.1 <= 2_000_000 + 2 * STEP, "{p:?} vs {e:?}");
    }
    // The tunnel carries the same bytes within a packet or two.
    assert!(ev.tunnel_sent.abs_diff(po.tunnel_sent) <= 2 * PKT as u64);
}

#[test]
fn credit_bounds_the_tunnel_backlog_to_buffer_start() {
    for mode in [CheckMode::Event, poll(1), poll(10)] {
        let r = run(mode, 20 * PKT as u64, None);
        assert!(r.credit_plus_backlog_ok, "{mode:?}");
        assert!(
            r.max_backlog <= 20 * PKT as u64,
            "{mode:?}: {}",
            r.max_backlog
        );
        // The bound is reached: arrivals outrun the tunnel in each burst.
        assert!(
            r.max_backlog >= 19 * PKT as u64,
            "{mode:?}: {}",
            r.max_backlog
        );
    }
}

#[test]
fn retransmissions_add_credit_and_raise_the_bound_for_good() {
    // As the thesis's output(): every tenth tunnel transmission is a
    // retransmission; it moves no backlog but adds a packet of credit.
    let r = run(CheckMode::Event, 20 * PKT as u64, Some(10));
    assert!(r.credit_plus_backlog_ok);
    assert!(r.retx_bytes > 0);
    assert!(r.max_backlog > 20 * PKT as u64, "{}", r.max_backlog);
    assert!(r.max_backlog <= 20 * PKT as u64 + r.retx_bytes);
}

#[test]
fn the_check_interval_adds_delay_not_throughput_loss() {
    let ev = run(CheckMode::Event, 20 * PKT as u64, None);
    let waits: Vec<f64> = [1, 3, 10]
        .iter()
        .map(|&ms| mean_wait(&run(poll(ms), 20 * PKT as u64, None)))
        .collect();
    let base = mean_wait(&ev);
    eprintln!("mean admission wait: event {base:.5} s, poll 1/3/10 ms {waits:.5?}");
    // Longer intervals delay admission more, by at most two intervals (see
    // above) on average.
    assert!(
        base < waits[0] && waits[0] < waits[1] && waits[1] < waits[2],
        "{base} {waits:?}"
    );
    for (w, ms) in waits.iter().zip([1.0, 3.0, 10.0]) {
        assert!(w - base <= 2.0 * ms * 1e-3 + 2e-5, "{ms} ms: {w} vs {base}");
    }
    for ms in [1, 3, 10] {
        let r = run(poll(ms), 20 * PKT as u64, None);
        assert!(
            r.tunnel_sent.abs_diff(ev.tunnel_sent) <= 2 * PKT as u64,
            "{ms} ms"
        );
    }
}

#[test]
fn the_timer_reschedules_one_interval_after_it_fires() {
    let mut c = Credit::new(CreditConfig::default(), Instant::ZERO);
    assert_eq!(c.poll_timeout(), Some(Instant(10_000_000)));
    assert!(!c.handle_timeout(Instant(9_999_999)));
    assert!(c.handle_timeout(Instant(10_000_005)));
    assert_eq!(c.poll_timeout(), Some(Instant(20_000_005)));
    let e = Credit::new(
        CreditConfig {
            mode: CheckMode::Event,
            ..CreditConfig::default()
        },
        Instant::ZERO,
    );
    assert_eq!(e.poll_timeout(), None);
}

#[test]
fn a_check_needs_one_packet_of_credit_and_pays_per_packet() {
    let cfg = CreditConfig {
        buffer_start: 2 * PKT as u64 + 100,
        packet: PKT,
        mode: CheckMode::Event,
    };
    let mut c = Credit::new(cfg, Instant::ZERO);
    let mut q: VecDeque<u32> = [PKT, PKT, PKT].into();
    assert_eq!(c.check(&mut q), 2);
    assert_eq!(c.buffer_count(), 100);
    assert_eq!(c.stats().blocked_checks, 1);
    c.on_output(939, false);
    assert!(!c.allows());
    c.on_output(1, false);
    assert!(c.allows());
}

#[test]
fn framing_maps_the_stream_back_to_flows_in_order() {
    let mut f = Framing::new();
    // Interleaved writes of three flows with a deterministic pattern.
    let mut expect = [0u64; 3];
    let mut order = vec![];
    for i in 0..300u64 {
        let flow = (((i / 2) * 7) % 3) as u32;
        let n = 1 + (i * 37) % 1500;
        f.push(flow, n);
        expect[flow as usize] += n;
        order.push((flow, n));
    }
    // Adjacent writes of one flow share a chunk.
    assert_eq!(f.chunks(), 150);
    // Delivered in odd-sized pieces: concatenating the pieces gives back
    // each flow's writes in order.
    let mut got = [0u64; 3];
    let mut pieces: Vec<(u32, u64)> = vec![];
    let total: u64 = expect.iter().sum();
    let mut left = total;
    let mut k = 0u64;
    while left > 0 {
        let n = (1 + (k * 911) % 4000).min(left);
        f.pop(n, |flow, b| {
            got[flow as usize] += b;
            match pieces.last_mut() {
                Some(p) if p.0 == flow => p.1 += b,
                _ => pieces.push((flow, b)),
            }
        });
        left -= n;
        k += 1;
    }
    assert_eq!(got, expect);
    let mut merged: Vec<(u32, u64)> = vec![];
    for (fl, n) in order {
        match merged.last_mut() {
            Some(p) if p.0 == fl => p.1 += n,
            _ => merged.push((fl, n)),
        }
    }
    assert_eq!(pieces, merged);
    assert_eq!(f.in_tunnel(), 0);
}

#[test]
#[should_panic(expected = "beyond what was framed")]
fn framing_refuses_bytes_never_written() {
    let mut f = Framing::new();
    f.push(0, 10);
    f.pop(11, |_, _| {});
}

#[test]
fn bounded_pop_stops_at_the_first_flow_without_room() {
    // Stream: 0:1000, 1:500, 0:700, 2:300. Flow 1 has room for 200 only:
    // split end takes flow 0's 1000, 200 of flow 1, and nothing behind it
    // (flow 0's second chunk and flow 2 wait in the one stream).
    let mut f = Framing::new();
    for (fl, n) in [(0, 1000), (1, 500), (0, 700), (2, 300)] {
        f.push(fl, n);
    }
    let mut room = [u64::MAX, 200, u64::MAX];
    let mut got = [0u64; 3];
    let mut take = |fl: u32, n: u64| {
        let k = n.min(room[fl as usize]);
        room[fl as usize] -= k;
        got[fl as usize] += k;
        k
    };
    let taken = f.pop_bounded(10_000, &mut take);
    assert_eq!(taken, 1200);
    assert_eq!(got, [1000, 200, 0]);
    assert_eq!(f.head_flow(), Some(1));
    assert_eq!(f.in_tunnel(), 1300);
    // The tunnel has delivered only 100 more in-order bytes: no more than
    // that is taken, whatever the room.
    let mut all = |fl: u32, n: u64| {
        got[fl as usize] += n;
        n
    };
    let taken = f.pop_bounded(100, &mut all);
    assert_eq!((taken, got), (100, [1000, 300, 0]));
    // Room again: the rest comes out in order, as with `pop`.
    let taken = f.pop_bounded(10_000, |fl, n| {
        got[fl as usize] += n;
        n
    });
    assert_eq!((taken, got), (1200, [1700, 500, 300]));
    assert_eq!(f.in_tunnel(), 0);
}

#[test]
fn flow_credit_bounds_each_flow_separately() {
    let mut c = FlowCredit::new(2, 10_000);
    assert_eq!(c.allowance(0), 10_000);
    c.on_written(0, 10_000);
    // Flow 0 is out of credit; flow 1 is not affected.
    assert_eq!((c.allowance(0), c.allowance(1)), (0, 10_000));
    c.on_acked(0, 4_000);
    assert_eq!((c.allowance(0), c.outstanding(0)), (4_000, 6_000));
    // An older cumulative report changes nothing.
    c.on_acked(0, 3_000);
    assert_eq!(c.allowance(0), 4_000);
    c.on_written(1, 2_500);
    assert_eq!(c.allowance(1), 7_500);
}

#[test]
#[should_panic(expected = "over its credit")]
fn flow_credit_refuses_writes_over_the_window() {
    let mut c = FlowCredit::new(1, 100);
    c.on_written(0, 101);
}
