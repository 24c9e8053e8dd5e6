//! Packets per second and per-frame cost of the packet path with SAD on
//! (and ACK thinning, and AR, for comparison), without sockets: the engine
//! the packet thread drives, fed in a loop with the real clock.
//!
//! `cargo run --release -p pep-daemon --example packet_bench`
//!
//! The last line is the watermark stage: data frames and the receivers'
//! ACKs of them, alternating (see `bench_watermark`).
//!
//! 64-byte frames are pure ACKs (54 B of Ethernet + IPv4 + TCP headers,
//! padded), of 64 flows in turn, into a 100 Gbit/s egress queue with SAD:
//! the queue drains as fast as the loop runs, so SAD merges little and the
//! number is the cost of parsing, the flow table, SAD and the queue.
//! 1500-byte frames are data segments through the same queue. The time
//! per frame covers `on_frame`, `handle_timeout` and draining the output;
//! the kernel's cost (two `AF_PACKET` system calls per frame) is not in it.

mod common;

use std::net::Ipv4Addr;

use pep_core::ack_regen::AckRegenConfig;
use pep_core::{Duration, Rate};
use pep_daemon::packet::{Engine, PacketSettings, Side};
use pep_io::clock::{monotonic_ns, Clock};
use pep_wire::{emit_packet_vec, ethernet_frame, IpRepr, Ipv4Repr, TcpRepr};

fn frame(flow: u16, ack: u32, payload: usize) -> Vec<u8> {
    let ip = IpRepr::V4(Ipv4Repr::new(
        Ipv4Addr::new(10, 0, 0, 1),
        Ipv4Addr::new(10, 0, 1, 1),
    ));
    let tcp = TcpRepr {
        src_port: 1024 + flow,
        dst_port: 5001,
        seq: 1,
        ack,
        flags: pep_wire::flags::ACK,
        window: 1000,
        payload_len: payload,
        ..TcpRepr::default()
    };
    let pkt = emit_packet_vec(&ip, &tcp, &vec![0u8; payload]).unwrap();
    let mut f = ethernet_frame([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], &pkt).unwrap();
    f.resize(f.len().max(64), 0);
    f
}

fn settings() -> PacketSettings {
    common::sad_at("a", "b", Rate::mbps(100_000))
}

fn bench(label: &str, s: &PacketSettings, frame_len: usize, n: usize) {
    // 64 B: a pure ACK (54 B padded); otherwise data filling the frame.
    let payload = if frame_len <= 64 { 0 } else { frame_len - 54 };
    let frames: Vec<Vec<u8>> = (0..1024u32)
        .map(|i| frame((i % 64) as u16, 1448 * (i / 64 + 1), payload))
        .collect();
    let mut e = Engine::new(s);
    let clock = Clock::start();
    let mut cost = Vec::with_capacity(n);
    let mut out = 0u64;
    let mut ack_base = 0u32;
    let start = monotonic_ns();
    for i in 0..n {
        if i % frames.len() == 0 {
            ack_base = ack_base.wrapping_add(1448 * 16);
        }
        let mut f = frames[i % frames.len()].clone();
        // Keep the ACK numbers advancing from round to round.
        let a = u32::from_be_bytes([f[42], f[43], f[44], f[45]]).wrapping_add(ack_base);
        f[42..46].copy_from_slice(&a.to_be_bytes());
        let t0 = monotonic_ns();
        let now = clock.now();
        e.on_frame(now, Side::A, f);
        e.handle_timeout(clock.now());
        while let Some((_, b)) = e.poll_transmit() {
            out += 1;
            std::hint::black_box(b);
        }
        cost.push(monotonic_ns() - t0);
    }
    let secs = (monotonic_ns() - start) as f64 / 1e9;
    cost.sort_unstable();
    let q = |p: f64| cost[((cost.len() as f64 * p) as usize).min(cost.len() - 1)];
    let st = e.stats();
    println!(
        "{label:<34} {frame_len:>5} B: {:>6.2} Mpps ({:>7.0} Mbit/s), per frame p50 {} ns, p99 {} ns, max {} ns; out {out}, merged {}, thinned {}, regenerated {}",
        n as f64 / secs / 1e6,
        n as f64 * frame_len as f64 * 8.0 / secs / 1e6,
        q(0.5),
        q(0.99),
        cost[cost.len() - 1],
        st.merged,
        st.thinned,
        st.regenerated
    );
}

/// A TCP frame of connection `flow` (port `1024 + flow`), from the sender
/// (toward `a`) or from the receiver, with timestamps.
fn tcp(flow: u16, from_sender: bool, flags: u8, seq: u32, ack: u32, payload: usize) -> Vec<u8> {
    let (s, r) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 1, 1));
    let (src, dst, sp, dp) = if from_sender {
        (s, r, 1024 + flow, 5001)
    } else {
        (r, s, 5001, 1024 + flow)
    };
    let tcp = TcpRepr {
        src_port: sp,
        dst_port: dp,
        seq,
        ack,
        flags,
        window: 1000,
        options: pep_wire::TcpOptions {
            timestamps: Some(pep_wire::TimestampOption { val: 7, ecr: 7 }),
            wscale: (flags & pep_wire::flags::SYN != 0).then_some(7),
            ..pep_wire::TcpOptions::default()
        },
        payload_len: payload,
        ..TcpRepr::default()
    };
    let pkt = emit_packet_vec(
        &IpRepr::V4(Ipv4Repr::new(src, dst)),
        &tcp,
        &vec![0u8; payload],
    )
    .unwrap();
    ethernet_frame([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], &pkt).unwrap()
}

/// The watermark stage (N = 50, W = 30): 64 connections, each data frame
/// (1500 B, from `b`) answered by the receiver's ACK of it (from `a`): a
/// premature ACK built and a copy stored per data frame, the real ACK
/// dropped and the copy released. The time is per frame, both kinds.
fn bench_watermark(n: usize) {
    use pep_core::watermark::WatermarkConfig;
    use pep_daemon::packet::WatermarkSettings;
    use pep_wire::flags::{ACK, SYN};
    let s = PacketSettings {
        rate: None,
        sad: false,
        watermark: Some(WatermarkSettings {
            core: WatermarkConfig::new(50, 30),
            flows: 1024,
        }),
        ..settings()
    };
    let mut e = Engine::new(&s);
    let clock = Clock::start();
    const ISS: u32 = 1000;
    const MSS: u32 = 1500 - 54 - 12;
    let mut data = vec![];
    let mut acks = vec![];
    for k in 0..64u16 {
        e.on_frame(clock.now(), Side::B, tcp(k, true, SYN, ISS, 0, 0));
        e.on_frame(
            clock.now(),
            Side::A,
            tcp(k, false, SYN | ACK, 9, ISS + 1, 0),
        );
        data.push(tcp(k, true, ACK, ISS + 1, 10, MSS as usize));
        acks.push(tcp(k, false, ACK, 10, ISS + 1, 0));
    }
    while e.poll_transmit().is_some() {}
    let mut cost = Vec::with_capacity(n);
    let start = monotonic_ns();
    for i in 0..n / 2 {
        let (k, round) = (i % 64, (i / 64) as u32);
        let mut d = data[k].clone();
        pep_wire::rewrite_tcp_seq(&mut d[14..], ISS + 1 + round * MSS).unwrap();
        let mut a = acks[k].clone();
        pep_wire::rewrite_tcp_ack(&mut a[14..], ISS + 1 + (round + 1) * MSS).unwrap();
        for (side, f) in [(Side::B, d), (Side::A, a)] {
            let t0 = monotonic_ns();
            e.on_frame(clock.now(), side, f);
            e.handle_timeout(clock.now());
            while let Some((_, b)) = e.poll_transmit() {
                std::hint::black_box(b);
            }
            cost.push(monotonic_ns() - t0);
        }
    }
    let secs = (monotonic_ns() - start) as f64 / 1e9;
    cost.sort_unstable();
    let q = |p: f64| cost[((cost.len() as f64 * p) as usize).min(cost.len() - 1)];
    let w = e.stats().watermark;
    println!(
        "{:<34} {:>7}: {:>6.2} Mpps, per frame p50 {} ns, p99 {} ns, max {} ns; premature ACKs {}, real ACKs dropped {}, copies held {}",
        "watermark N = 50, W = 30",
        "data+ACK",
        cost.len() as f64 / secs / 1e6,
        q(0.5),
        q(0.99),
        cost[cost.len() - 1],
        w.premature_acks,
        w.dropped_acks,
        w.stored_frames
    );
}

fn main() {
    let n = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2_000_000);
    for len in [64, 1500] {
        bench("SAD in a 100 Gbit/s queue", &settings(), len, n);
        bench(
            "SAD + thinning (N = 2)",
            &PacketSettings {
                ack_thin: Some(2),
                ..settings()
            },
            len,
            n,
        );
        bench(
            "AR (R = 1), no queue",
            &PacketSettings {
                rate: None,
                sad: false,
                ack_regen: Some(AckRegenConfig {
                    factor: 1,
                    mss: 1448,
                    spacing: false,
                    max_spacing: Duration::from_millis(100),
                    max_flows: 65_536,
                }),
                ..settings()
            },
            len,
            n,
        );
        bench(
            "nothing (parse and pass)",
            &PacketSettings {
                rate: None,
                sad: false,
                ..settings()
            },
            len,
            n,
        );
    }
    bench_watermark(n);
}
