use super::*;
use pep_core::ack_regen::AckRegenConfig;
use pep_core::Rate;
use pep_wire::{
    emit_packet_vec, ethernet_frame, fill_checksums, verify_checksums, IpRepr, Ipv4Repr,
    TcpOptions, TcpRepr,
};
use std::net::Ipv4Addr;

fn settings() -> PacketSettings {
    PacketSettings {
        max_flows: 1024,
        ..PacketSettings::new("a", "b")
    }
}

/// An ACK from the receiver (port `sport`) with timestamps.
fn ack(sport: u16, ack: u32, payload: usize) -> Vec<u8> {
    let ip = IpRepr::V4(Ipv4Repr::new(
        Ipv4Addr::new(198, 18, 0, 1),
        Ipv4Addr::new(198, 18, 1, 2),
    ));
    let tcp = TcpRepr {
        src_port: sport,
        dst_port: 5001,
        seq: 77,
        ack,
        flags: pep_wire::flags::ACK,
        window: 512,
        options: TcpOptions {
            timestamps: Some(pep_wire::TimestampOption {
                val: ack / 10,
                ecr: 5,
            }),
            ..TcpOptions::default()
        },
        payload_len: payload,
        ..TcpRepr::default()
    };
    let pkt = emit_packet_vec(&ip, &tcp, &vec![9u8; payload]).unwrap();
    ethernet_frame([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], &pkt).unwrap()
}

fn tcp_of(frame: &[u8]) -> TcpRepr {
    match parse_ip_packet(&frame[14..]).unwrap() {
        Parsed::Tcp(p) => p.tcp,
        Parsed::NotTcp(_) => panic!("not tcp"),
    }
}

/// The frame's IP and TCP checksums verify and equal a full computation.
pub(crate) fn checksum_exact(frame: &[u8]) {
    let ip = &frame[14..];
    verify_checksums(ip).expect("checksum verifies");
    let mut full = ip.to_vec();
    fill_checksums(&mut full).unwrap();
    assert_eq!(ip, &full[..]);
}

fn drain(e: &mut Engine) -> Vec<(Side, Vec<u8>)> {
    std::iter::from_fn(|| e.poll_transmit()).collect()
}

/// Runs the engine's timers until nothing is left, returning all output.
fn run_out(e: &mut Engine, mut now: Instant) -> Vec<(Side, Vec<u8>)> {
    let mut out = drain(e);
    while let Some(t) = e.poll_timeout() {
        now = now.max(t);
        e.handle_timeout(now);
        out.extend(drain(e));
        if now > Instant(3_600_000_000_000) {
            panic!("timers never end");
        }
    }
    out
}

#[test]
fn without_mechanisms_every_frame_passes_unchanged_at_once() {
    let mut e = Engine::new(&settings());
    let mut arp = vec![0u8; 42];
    arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    let frames = [ack(4000, 1000, 0), ack(4000, 2000, 100), arp, vec![1, 2, 3]];
    for (i, f) in frames.iter().enumerate() {
        let side = if i % 2 == 0 { Side::A } else { Side::B };
        e.on_frame(Instant(i as u64), side, f.clone());
        let out = drain(&mut e);
        let to = if side == Side::A { Side::B } else { Side::A };
        assert_eq!(out, vec![(to, f.clone())]);
    }
    assert_eq!(e.poll_timeout(), None);
    let s = e.stats();
    assert_eq!((s.non_tcp, s.malformed), (1, 1));
    assert_eq!(s.received, [2, 2]);
    assert_eq!(s.passed, [2, 2]);
}

#[test]
fn sad_on_the_egress_queue_merges_and_rewrites_with_valid_checksums() {
    let mut e = Engine::new(&PacketSettings {
        rate: Some(Rate::kbps(64)),
        sad: true,
        ..settings()
    });
    let t = Instant::ZERO;
    // 20 ACKs of one flow arrive in a burst, faster than 64 kbit/s: the
    // first is on the wire at once, the second waits and absorbs the rest.
    for k in 1..=20 {
        e.on_frame(t, Side::A, ack(4000, 1000 * k, 0));
    }
    // Data from b is never delayed by a's queue.
    e.on_frame(t, Side::B, ack(5001, 1, 1000));
    assert_eq!(drain(&mut e).len(), 1);
    let out = run_out(&mut e, t);
    let acks: Vec<u32> = out.iter().map(|(_, f)| tcp_of(f).ack).collect();
    assert_eq!(acks, vec![1000, 20_000]);
    for (side, f) in &out {
        assert_eq!(*side, Side::B);
        checksum_exact(f);
    }
    // The rewritten ACK carries the latest ACK's timestamps too.
    assert_eq!(
        tcp_of(&out[1].1).options.timestamps.map(|t| t.val),
        Some(2000)
    );
    let s = e.stats();
    assert_eq!((s.merged, s.rewritten, s.dropped), (18, 1, 0));
    assert_eq!(s.received[0], s.passed[0] + s.merged);
}

#[test]
fn the_egress_queue_runs_at_its_rate() {
    let mut e = Engine::new(&PacketSettings {
        rate: Some(Rate::mbps(1)),
        queue: 1000,
        ..settings()
    });
    // 100 IP packets of 1000 B (52 B of headers with timestamps): 800 ms
    // at 1 Mbit/s.
    for k in 0..100 {
        e.on_frame(Instant::ZERO, Side::A, ack(4000, k, 948));
    }
    let mut last = Instant::ZERO;
    let mut n = 0;
    let mut now = Instant::ZERO;
    while let Some(t) = e.poll_timeout() {
        now = now.max(t);
        e.handle_timeout(now);
        let k = drain(&mut e).len();
        if k > 0 {
            last = now;
            n += k;
        }
    }
    assert_eq!(n, 100);
    assert_eq!(last, Instant(800_000_000), "100 x 1000 B at 1 Mbit/s");
}

#[test]
fn thinning_passes_every_nth_ack_and_the_last_after_max_hold() {
    let mut e = Engine::new(&PacketSettings {
        ack_thin: Some(4),
        ..settings()
    });
    for k in 0..=10 {
        e.on_frame(Instant(k), Side::A, ack(4000, 1000 * k as u32, 0));
    }
    let now_out: Vec<u32> = drain(&mut e).iter().map(|(_, f)| tcp_of(f).ack).collect();
    assert_eq!(now_out, vec![0, 4000, 8000]);
    let later = run_out(&mut e, Instant(10));
    assert_eq!(later.len(), 1);
    assert_eq!(
        tcp_of(&later[0].1).ack,
        10_000,
        "the last ACK is never lost"
    );
    assert_eq!(e.stats().thinned, 7);
}

#[test]
fn regeneration_restores_one_ack_per_segment_with_increasing_numbers() {
    let mut e = Engine::new(&PacketSettings {
        ack_regen: Some(AckRegenConfig {
            factor: 1,
            mss: 1000,
            spacing: false,
            max_spacing: Duration::from_millis(100),
            max_flows: 1024,
        }),
        ..settings()
    });
    e.on_frame(Instant::ZERO, Side::A, ack(4000, 1000, 0));
    e.on_frame(Instant(1000), Side::A, ack(4000, 5000, 0));
    let out = run_out(&mut e, Instant(1000));
    let acks: Vec<u32> = out.iter().map(|(_, f)| tcp_of(f).ack).collect();
    assert_eq!(acks, vec![1000, 2000, 3000, 4000, 5000]);
    for (_, f) in &out {
        checksum_exact(f);
        assert_eq!(f.len(), out[0].1.len());
    }
    assert_eq!(e.stats().regenerated, 3);
}

/// An ACK like [`ack`] carrying SACK blocks.
fn sack_ack(sport: u16, ack_no: u32, blocks: &[(u32, u32)]) -> Vec<u8> {
    let f = ack(sport, ack_no, 0);
    let mut tcp = tcp_of(&f);
    for &(l, r) in blocks {
        tcp.options.sack.push(l, r);
    }
    let ip = IpRepr::V4(Ipv4Repr::new(
        Ipv4Addr::new(198, 18, 0, 1),
        Ipv4Addr::new(198, 18, 1, 2),
    ));
    let pkt = emit_packet_vec(&ip, &tcp, &[]).unwrap();
    ethernet_frame([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], &pkt).unwrap()
}

/// Spaced regeneration builds its ACKs from the flow's latest real ACK;
/// when that one has no SACK option left to hold the blocks of an older
/// ACK still being spaced out, the regenerated ACKs go without them
/// (RFC 2018 lets a receiver send fewer blocks than it knows) rather than
/// leave with a half-written header. Ten Linux flows in the lab hit this.
#[test]
fn regenerated_acks_from_a_template_without_sack_room_are_whole() {
    let mut e = Engine::new(&PacketSettings {
        ack_regen: Some(AckRegenConfig {
            factor: 1,
            mss: 1000,
            spacing: true,
            max_spacing: Duration::from_millis(100),
            max_flows: 1024,
        }),
        ..settings()
    });
    let ms = |n: u64| Instant(n * 1_000_000);
    e.on_frame(ms(0), Side::A, ack(4000, 1000, 0));
    // Four segments acknowledged at once, with a SACK block above.
    e.on_frame(ms(10), Side::A, sack_ack(4000, 5000, &[(6000, 7000)]));
    let mut out = drain(&mut e);
    // The next real ACK, no SACK option, before the spaced ACKs are due.
    e.on_frame(ms(11), Side::A, ack(4000, 7000, 0));
    out.extend(run_out(&mut e, ms(11)));
    let acks: Vec<u32> = out.iter().map(|(_, f)| tcp_of(f).ack).collect();
    assert!(acks.windows(2).all(|w| w[0] < w[1]), "{acks:?}");
    assert!(e.stats().regenerated >= 3, "{:?}", e.stats());
    for (_, f) in &out {
        checksum_exact(f);
    }
    assert_eq!(e.stats().rewrite_failures, 0, "{:?}", e.stats());
}

#[test]
fn a_connection_the_flow_table_evicts_keeps_its_acks_in_order() {
    // Room for two connections in the flow table and in thinning. The
    // table evicts the connection inserted first (A) while thinning holds
    // an ACK of it, and A comes back under a new id, whose first ACK
    // passes at once. The held ACK must leave before it (before the fix
    // it waited under the old id until its hold ran out, and left after).
    let mut e = Engine::new(&PacketSettings {
        ack_thin: Some(4),
        max_flows: 2,
        ..settings()
    });
    let (a, b, c) = (4000, 4001, 4002);
    let script = [
        (a, 1000, 0), // A's first ACK passes
        (b, 1000, 0), // so does B's
        (a, 2000, 0), // held (the second of four)
        (c, 1, 100),  // data of C: the table evicts A, thinning sees nothing
        (a, 3000, 0), // A under a new id: a first ACK, passes
    ];
    let mut out = vec![];
    for (k, &(port, ack_no, payload)) in script.iter().enumerate() {
        e.on_frame(
            Instant(k as u64 * 1000),
            Side::A,
            ack(port, ack_no, payload),
        );
        out.extend(drain(&mut e));
    }
    out.extend(run_out(&mut e, Instant(10_000)));
    assert!(e.stats().flows_evicted > 0);
    let a_acks: Vec<u32> = out
        .iter()
        .map(|(_, f)| tcp_of(f))
        .filter(|t| t.src_port == a)
        .map(|t| t.ack)
        .collect();
    assert_eq!(a_acks, [1000, 2000, 3000], "A's ACKs in order, none lost");
}
