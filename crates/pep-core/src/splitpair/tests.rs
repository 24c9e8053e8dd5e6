//! The tunnel's framing table and the per-flow credit across it.

use super::*;

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
        for (flow, b) in f.pop(n) {
            got[flow as usize] += b;
            match pieces.last_mut() {
                Some(p) if p.0 == flow => p.1 += b,
                _ => pieces.push((flow, b)),
            }
        }
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
    f.pop(11);
}

/// Split end's walk (as the simulator's split-pair does it): up to
/// `bytes`, each flow taking what its `room` allows, stopping at the first
/// flow that takes less than offered.
fn take_bounded(f: &mut Framing, bytes: u64, room: &mut [u64; 3], got: &mut [u64; 3]) -> u64 {
    let mut left = bytes.min(f.in_tunnel());
    let mut taken = 0;
    while let Some((fl, avail)) = f.head().filter(|_| left > 0) {
        let offered = avail.min(left);
        let k = offered.min(room[fl as usize]);
        room[fl as usize] -= k;
        got[fl as usize] += k;
        f.consume(k);
        left -= k;
        taken += k;
        if k < offered {
            break;
        }
    }
    taken
}

#[test]
fn a_pop_dropped_unwalked_still_delivers_its_bytes() {
    let mut f = Framing::new();
    f.push(0, 10);
    f.push(1, 10);
    let _ = f.pop(15);
    assert_eq!((f.in_tunnel(), f.head()), (5, Some((1, 5))));
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
    let taken = take_bounded(&mut f, 10_000, &mut room, &mut got);
    assert_eq!(taken, 1200);
    assert_eq!(got, [1000, 200, 0]);
    assert_eq!(f.head(), Some((1, 300)));
    assert_eq!(f.in_tunnel(), 1300);
    // The tunnel has delivered only 100 more in-order bytes: no more than
    // that is taken, whatever the room.
    let mut all = [u64::MAX; 3];
    let taken = take_bounded(&mut f, 100, &mut all, &mut got);
    assert_eq!((taken, got), (100, [1000, 300, 0]));
    // Room again: the rest comes out in order, as with `pop`.
    let taken = take_bounded(&mut f, 10_000, &mut all, &mut got);
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
