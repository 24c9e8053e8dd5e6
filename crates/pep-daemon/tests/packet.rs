//! The packet path without sockets (no root): fuzzed and malformed frames
//! never crash it and are passed untouched and counted; per-flow state
//! stays within its bound with 10,000 flows.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use pep_core::ack_regen::AckRegenConfig;
use pep_core::{Duration, Instant, Rate};
use pep_daemon::packet::{Engine, PacketSettings, Side};
use pep_wire::{
    emit_packet_vec, ethernet_frame, parse_ip_packet, EthernetRepr, IpRepr, Ipv4Repr, Parsed,
    TcpOptions, TcpRepr,
};
use proptest::prelude::*;

fn near(max_flows: usize) -> PacketSettings {
    PacketSettings {
        rate: Some(Rate::kbps(64)),
        sad: true,
        ack_thin: Some(2),
        max_flows,
        ..PacketSettings::new("a", "b")
    }
}

fn far(max_flows: usize) -> PacketSettings {
    PacketSettings {
        rate: None,
        sad: false,
        ack_thin: None,
        ack_regen: Some(AckRegenConfig {
            factor: 2,
            mss: 1448,
            spacing: true,
            max_spacing: Duration::from_millis(100),
            max_flows,
        }),
        ..near(max_flows)
    }
}

/// A pure ACK (or data with `payload`) from flow `k` with SACK blocks.
fn tcp_frame(k: u32, ack: u32, payload: usize, sack: &[(u32, u32)]) -> Vec<u8> {
    let ip = IpRepr::V4(Ipv4Repr::new(
        Ipv4Addr::from(0x0a00_0000 + (k >> 14)),
        Ipv4Addr::new(198, 18, 1, 2),
    ));
    let tcp = TcpRepr {
        src_port: 1024 + (k & 0x3fff) as u16,
        dst_port: 5001,
        seq: 1,
        ack,
        flags: pep_wire::flags::ACK,
        window: 1000,
        options: TcpOptions {
            timestamps: Some(pep_wire::TimestampOption { val: ack, ecr: 3 }),
            sack: pep_wire::SackOption::from_slice(sack),
            ..TcpOptions::default()
        },
        payload_len: payload,
        ..TcpRepr::default()
    };
    let pkt = emit_packet_vec(&ip, &tcp, &vec![1u8; payload]).unwrap();
    ethernet_frame([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], &pkt).unwrap()
}

fn is_tcp(frame: &[u8]) -> bool {
    EthernetRepr::parse(frame)
        .ok()
        .filter(|(e, _)| e.ethertype == 0x0800 || e.ethertype == 0x86dd)
        .is_some_and(|(_, ip)| matches!(parse_ip_packet(ip), Ok(Parsed::Tcp(_))))
}

/// Feeds `inputs` (side, delay before it, bytes) and runs every timer out;
/// returns the frames sent.
fn run(e: &mut Engine, inputs: &[(bool, u64, Vec<u8>)]) -> Vec<(Side, Vec<u8>)> {
    let mut now = Instant::ZERO;
    let mut out = vec![];
    for (from_b, gap, bytes) in inputs {
        now += Duration(*gap);
        e.handle_timeout(now);
        let side = if *from_b { Side::B } else { Side::A };
        e.on_frame(now, side, bytes.clone());
        out.extend(std::iter::from_fn(|| e.poll_transmit()));
    }
    let mut guard = 0;
    while let Some(t) = e.poll_timeout() {
        now = now.max(t);
        e.handle_timeout(now);
        out.extend(std::iter::from_fn(|| e.poll_transmit()));
        guard += 1;
        if guard > 1_000_000 {
            panic!(
                "timers never settle: now {now:?}, due {t:?}, {:?}",
                e.stats()
            );
        }
    }
    out
}

/// A frame: random bytes, or a valid TCP frame with some bytes changed or
/// cut short (bad lengths, offsets, options running past the header).
fn frame() -> impl Strategy<Value = Vec<u8>> {
    let valid =
        (0u32..4, 0u32..50_000, prop::bool::ANY, 0usize..3).prop_map(|(k, ack, data, nsack)| {
            let sack: Vec<(u32, u32)> = (0..nsack as u32)
                .map(|i| (ack + 3000 * (i + 1), ack + 3000 * (i + 1) + 1448))
                .collect();
            tcp_frame(k, ack, if data { 100 } else { 0 }, &sack)
        });
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..120),
        valid.clone(),
        (
            valid.clone(),
            prop::collection::vec((0usize..120, any::<u8>()), 1..6)
        )
            .prop_map(|(mut f, edits)| {
                for (at, v) in edits {
                    let n = f.len();
                    f[at % n] = v;
                }
                f
            }),
        (valid, 0usize..120).prop_map(|(mut f, n)| {
            f.truncate(n);
            f
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn fuzzed_frames_never_panic_and_are_accounted_for(
        inputs in prop::collection::vec((prop::bool::ANY, 0u64..5_000_000, frame()), 1..60)
    ) {
        for settings in [near(8), far(8)] {
            let mut e = Engine::new(&settings);
            let out = run(&mut e, &inputs);
            let s = e.stats();
            // Frames from b pass at once and untouched.
            prop_assert_eq!(s.received[1], s.passed[1]);
            // Every frame from a is sent, merged, thinned or dropped; AR
            // sends each arrival plus what it created.
            prop_assert_eq!(
                s.received[0] + s.regenerated,
                s.passed[0] + s.merged + s.thinned + s.dropped
            );
            prop_assert_eq!(s.queued, 0);
            // A forged ACK number far ahead must not make AR flood the link.
            prop_assert!(s.regenerated <= pep_core::ack_regen::MAX_TRAIN * s.received[0]);
            prop_assert_eq!(out.len() as u64, s.passed[0] + s.passed[1]);
            // Frames that are not TCP pass untouched and are counted.
            let others: Vec<&Vec<u8>> =
                inputs.iter().map(|(_, _, f)| f).filter(|f| !is_tcp(f)).collect();
            prop_assert_eq!(s.non_tcp + s.malformed, others.len() as u64);
            let mut sent: HashMap<&[u8], i64> = HashMap::new();
            for (_, f) in &out {
                *sent.entry(f.as_slice()).or_default() += 1;
            }
            for f in others {
                let n = sent.entry(f.as_slice()).or_default();
                *n -= 1;
                prop_assert!(*n >= 0, "a frame that is not TCP was changed or lost");
            }
        }
    }
}

/// 10,000 flows through SAD + thinning and through AR with tables bounded
/// at 1,024: no table ever holds more, evictions are counted, and the
/// flows evicted still get their ACKs through.
#[test]
fn ten_thousand_flows_stay_within_the_state_bound() {
    const FLOWS: u32 = 10_000;
    const CAP: usize = 1_024;
    for settings in [near(CAP), far(CAP)] {
        let mut e = Engine::new(&settings);
        let mut now = Instant::ZERO;
        let mut largest = 0;
        let mut sent = 0u64;
        // Three rounds of one ACK per flow, 100 us apart.
        for round in 1..=3u32 {
            for k in 0..FLOWS {
                now += Duration::from_micros(100);
                e.handle_timeout(now);
                e.on_frame(now, Side::A, tcp_frame(k, 1448 * 4 * round, 0, &[]));
                sent += std::iter::from_fn(|| e.poll_transmit()).count() as u64;
                largest = largest.max(e.largest_table());
            }
        }
        while let Some(t) = e.poll_timeout() {
            now = now.max(t);
            e.handle_timeout(now);
            sent += std::iter::from_fn(|| e.poll_transmit()).count() as u64;
        }
        let s = e.stats();
        println!("{settings:?}\n  largest table {largest}, {s:?}");
        assert!(largest <= CAP, "a table held {largest} flows");
        assert!(s.flows <= CAP as u64);
        assert!(
            s.flows_evicted >= (FLOWS as u64 - CAP as u64),
            "evictions counted: {}",
            s.flows_evicted
        );
        assert_eq!(
            s.received[0] + s.regenerated,
            sent + s.merged + s.thinned + s.dropped
        );
        assert!(sent > 0);
    }
}
