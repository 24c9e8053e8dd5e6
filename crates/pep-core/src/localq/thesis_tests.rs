//! The thesis's credit driven by a scripted model: the local FIFO fed by
//! on/off arrivals, a tunnel that sends one packet per serialization time
//! while it has unsent bytes. Polling and event-driven checks are compared
//! on the same input.

use super::tests::{pkt, Pkt};
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
    let mut credit = SplitStartQueue::new(
        thesis(buffer_start, mode),
        Stream::derive(1, "t"),
        Instant::ZERO,
    );
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
        while next_arrival <= t {
            if next_arrival % 500_000_000 < 200_000_000 {
                let id = out.arrived.len() as u32;
                credit.handle_arrival(now, pkt(0, id * 1000, 1000, PKT, id));
                out.arrived.push(next_arrival);
            }
            next_arrival += arrival_gap;
        }
        if next_tx_free <= t {
            sends += 1;
            let retx = retx_every.is_some_and(|k| sends.is_multiple_of(k));
            if retx {
                credit.handle_output(PKT, true);
                out.retx_bytes += PKT as u64;
                next_tx_free = t + tx_time;
            } else if backlog >= PKT as u64 {
                backlog -= PKT as u64;
                credit.handle_output(PKT, false);
                out.tunnel_sent += PKT as u64;
                next_tx_free = t + tx_time;
            }
        }
        credit.handle_timeout(now);
        while let Some(a) = credit.poll_action(now) {
            let Action::Admit(p) = a else {
                panic!("no drops from an unbounded queue");
            };
            out.admitted.push((p.id as u64, t));
            backlog += PKT as u64;
        }
        out.max_backlog = out.max_backlog.max(backlog);
        if credit.credit() + backlog as i64 != (buffer_start + out.retx_bytes) as i64 {
            out.credit_plus_backlog_ok = false;
        }
        t += STEP;
    }
    out
}

fn thesis(buffer_start: u64, check: CheckMode) -> SplitStartConfig {
    SplitStartConfig {
        discipline: Discipline::DropTail,
        limit: 100_000,
        buffer_start,
        packet: PKT,
        header: 40,
        credit: CreditPolicy::Thesis,
        check,
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
    let mut c: SplitStartQueue<Pkt> = SplitStartQueue::new(
        thesis(PKT as u64, poll(10)),
        Stream::derive(1, "t"),
        Instant::ZERO,
    );
    assert_eq!(c.poll_timeout(), Some(Instant(10_000_000)));
    c.handle_timeout(Instant(9_999_999));
    assert_eq!(c.poll_timeout(), Some(Instant(10_000_000)));
    c.handle_timeout(Instant(10_000_005));
    assert_eq!(c.poll_timeout(), Some(Instant(20_000_005)));
    assert_eq!(c.poll_action(Instant(10_000_005)), None, "an empty queue");
    assert_eq!(c.stats().checks, 1);
    let e: SplitStartQueue<Pkt> = SplitStartQueue::new(
        thesis(PKT as u64, CheckMode::Event),
        Stream::derive(1, "t"),
        Instant::ZERO,
    );
    assert_eq!(e.poll_timeout(), None);
}

#[test]
fn a_check_needs_one_packet_of_credit_and_pays_per_packet() {
    let mut c = SplitStartQueue::new(
        thesis(2 * PKT as u64 + 100, CheckMode::Event),
        Stream::derive(1, "t"),
        Instant::ZERO,
    );
    let now = Instant::ZERO;
    for id in 0..3 {
        c.handle_arrival(now, pkt(0, id * 1000, 1000, PKT, id));
    }
    let mut admitted = vec![];
    while let Some(Action::Admit(p)) = c.poll_action(now) {
        admitted.push(p.id);
    }
    assert_eq!(admitted, [0, 1]);
    assert_eq!(c.credit(), 100);
    assert_eq!(c.stats().blocked_checks, 1);
    c.handle_output(939, false);
    assert_eq!(
        c.poll_action(now),
        None,
        "1039 bytes of credit: short of a packet"
    );
    c.handle_output(1, false);
    assert!(matches!(c.poll_action(now), Some(Action::Admit(p)) if p.id == 2));
}

#[test]
fn the_released_credit_charges_what_is_written_not_what_is_admitted() {
    // A packet admitted behind a hole writes nothing: the thesis's credit
    // pays for it at once and for good, the released credit when (if) its
    // bytes reach the tunnel.
    for (policy, after_admit) in [
        (CreditPolicy::Thesis, 100),
        (CreditPolicy::Released, 2 * PKT as i64 + 100),
    ] {
        let mut c = SplitStartQueue::new(
            SplitStartConfig {
                credit: policy,
                ..thesis(2 * PKT as u64 + 100, CheckMode::Event)
            },
            Stream::derive(1, "t"),
            Instant::ZERO,
        );
        let now = Instant::ZERO;
        c.handle_arrival(now, pkt(0, 1000, 1000, PKT, 0));
        c.handle_arrival(now, pkt(0, 2000, 1000, PKT, 1));
        while c.poll_action(now).is_some() {}
        assert_eq!(c.credit(), after_admit, "{policy:?}");
        // The hole fills: 3000 bytes in order, three segments' headers.
        c.handle_written(now, 0, 3000);
        let written = if policy == CreditPolicy::Released {
            3000 + 3 * 40
        } else {
            0
        };
        assert_eq!(c.credit(), after_admit - written, "{policy:?}");
    }
}
