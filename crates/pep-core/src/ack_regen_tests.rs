use super::*;
use crate::segment::Flags;

const MSS: u32 = 1000;

fn cfg(factor: u32, spacing: bool) -> AckRegenConfig {
    AckRegenConfig {
        factor,
        mss: MSS,
        spacing,
        max_spacing: Duration::from_millis(100),
        max_flows: 16,
    }
}

fn ack(flow: u32, n: u32) -> Segment {
    Segment {
        flow: FlowId(flow),
        ack: Seq(n),
        flags: Flags::ACK,
        hdr_len: 40,
        wnd: 20_000,
        ..Default::default()
    }
}

fn ms(n: u64) -> Instant {
    Instant(n * 1_000_000)
}

/// Everything sent up to `until`, with the time it went.
fn drain(ar: &mut AckRegen, from: Instant, until: Instant) -> Vec<(Instant, u32)> {
    let mut out = vec![];
    let mut now = from;
    loop {
        while let Some(s) = ar.poll_transmit(now) {
            out.push((now, s.ack.0));
        }
        match ar.poll_timeout() {
            Some(t) if t <= until => now = t.max(now),
            _ => return out,
        }
    }
}

#[test]
fn r1_restores_one_ack_per_segment() {
    let mut ar = AckRegen::new(cfg(1, false));
    ar.handle_ack(ms(0), ack(1, 1000));
    ar.handle_ack(ms(10), ack(1, 6000));
    let out: Vec<u32> = drain(&mut ar, ms(10), ms(10)).iter().map(|x| x.1).collect();
    assert_eq!(out, vec![1000, 2000, 3000, 4000, 5000, 6000]);
    assert_eq!(ar.stats.regenerated, 4);
}

#[test]
fn r_above_one_sends_more_acks_with_strictly_increasing_numbers() {
    for r in 2..=4u32 {
        let mut ar = AckRegen::new(cfg(r, false));
        ar.handle_ack(ms(0), ack(1, 0));
        ar.handle_ack(ms(10), ack(1, 5000));
        let out: Vec<u32> = drain(&mut ar, ms(10), ms(10)).iter().map(|x| x.1).collect();
        // The first ACK passes; then 5 segments: 4 suppressed ACKs, R
        // each, plus the real one.
        assert_eq!(out.len() as u32, 1 + 1 + r * 4, "R={r}");
        assert!(out.windows(2).all(|w| w[0] < w[1]), "{out:?}");
        assert_eq!(*out.last().unwrap(), 5000);
    }
}

#[test]
fn never_more_acks_than_bytes() {
    let mut ar = AckRegen::new(cfg(4, false));
    ar.handle_ack(ms(0), ack(1, 0));
    ar.handle_ack(ms(1), ack(1, 1003)); // 2 segments by MSS, 1003 bytes
    ar.handle_ack(ms(2), ack(1, 1006)); // 3 bytes: 1 segment
    let out: Vec<u32> = drain(&mut ar, ms(2), ms(2)).iter().map(|x| x.1).collect();
    assert_eq!(out.len(), 1 + 5 + 1);
    assert!(out.windows(2).all(|w| w[0] < w[1]), "{out:?}");
}

#[test]
fn duplicates_and_old_acks_pass_unchanged() {
    let mut ar = AckRegen::new(cfg(2, false));
    for (t, n) in [(0, 1000), (1, 3000), (2, 3000), (3, 3000), (4, 2000)] {
        ar.handle_ack(ms(t), ack(1, n));
    }
    let out: Vec<u32> = drain(&mut ar, ms(4), ms(4)).iter().map(|x| x.1).collect();
    // 1000; 3000 regenerated as 1000 + 2 x 1 (R=2, one suppressed): 3 ACKs.
    assert_eq!(out, vec![1000, 1666, 2333, 3000, 3000, 3000, 2000]);
}

#[test]
fn spacing_spreads_a_train_over_the_previous_interval() {
    let mut ar = AckRegen::new(cfg(1, true));
    ar.handle_ack(ms(0), ack(1, 0));
    assert_eq!(drain(&mut ar, ms(0), ms(0)), vec![(ms(0), 0)]);
    ar.handle_ack(ms(40), ack(1, 4000));
    let out = drain(&mut ar, ms(40), ms(1000));
    assert_eq!(
        out,
        vec![
            (ms(40), 1000),
            (ms(50), 2000),
            (ms(60), 3000),
            (ms(70), 4000)
        ]
    );
}

#[test]
fn the_next_ack_flushes_a_running_train_in_order() {
    let mut ar = AckRegen::new(cfg(1, true));
    ar.handle_ack(ms(0), ack(1, 0));
    drain(&mut ar, ms(0), ms(0));
    ar.handle_ack(ms(40), ack(1, 4000));
    let mut out = drain(&mut ar, ms(40), ms(55));
    ar.handle_ack(ms(55), ack(1, 6000));
    out.extend(drain(&mut ar, ms(55), ms(1000)));
    let acks: Vec<u32> = out.iter().map(|x| x.1).collect();
    assert_eq!(acks, vec![1000, 2000, 3000, 4000, 5000, 6000]);
    // 3000 and 4000 went at 55 ms with the new ACK's first one.
    assert_eq!(out[2].0, ms(55));
    assert_eq!(ar.stats.flushed, 1);
    let times: Vec<Instant> = out.iter().map(|x| x.0).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn flows_are_independent_and_state_is_bounded() {
    let mut c = cfg(1, false);
    c.max_flows = 2;
    let mut ar = AckRegen::new(c);
    for f in 0..5 {
        ar.handle_ack(ms(f as u64), ack(f, 0));
    }
    assert!(ar.flows.len() <= 2);
    // Flow 4 (newest) has state; flow 0 was evicted: its next ACK passes.
    ar.handle_ack(ms(10), ack(4, 2000));
    ar.handle_ack(ms(11), ack(0, 2000));
    let out: Vec<u32> = drain(&mut ar, ms(11), ms(11)).iter().map(|x| x.1).collect();
    assert_eq!(&out[5..], &[1000, 2000, 2000]);
}

#[test]
fn a_full_table_keeps_the_flow_whose_ack_arrives() {
    // One flow and room for one: it must keep its state and be regenerated
    // (it used to be evicted by its own ACK, and every ACK passed as is).
    let mut c = cfg(1, false);
    c.max_flows = 1;
    let mut ar = AckRegen::new(c);
    ar.handle_ack(ms(0), ack(1, 1000));
    ar.handle_ack(ms(10), ack(1, 4000));
    let out: Vec<u32> = drain(&mut ar, ms(10), ms(10)).iter().map(|x| x.1).collect();
    assert_eq!(out, vec![1000, 2000, 3000, 4000]);
    assert_eq!(ar.stats.regenerated, 2);
    // A second flow finds the table full of a flow with nothing pending:
    // that one goes, the newcomer takes its place.
    ar.handle_ack(ms(20), ack(2, 500));
    assert!(ar.flows.contains_key(&FlowId(2)) && !ar.flows.contains_key(&FlowId(1)));
}
