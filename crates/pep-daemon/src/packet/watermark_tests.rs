//! The watermark stage through the engine: frames in, frames out.

use std::net::Ipv4Addr;

use pep_core::watermark::WatermarkConfig;
use pep_core::Instant;
use pep_wire::{
    emit_packet_vec, ethernet_frame, flags, parse_ip_packet, EthernetRepr, IpRepr, Ipv4Repr,
    Parsed, SackOption, TcpOptions, TcpRepr,
};

use super::WatermarkSettings;
use crate::packet::engine::tests::checksum_exact;
use crate::packet::{Engine, PacketSettings, Side};

const SENDER_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0x51];
const RECEIVER_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0xd2];
const SENDER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const RECEIVER: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 2);
/// Initial sequence numbers of the sender and the receiver.
const ISS: u32 = 1_000_000;
const IRS: u32 = 7_000;
const MSS: u32 = 1000;

fn engine(buffer: usize, w: usize, flows: usize) -> Engine {
    Engine::new(&PacketSettings {
        max_flows: 1024,
        watermark: Some(WatermarkSettings {
            core: WatermarkConfig::new(buffer, w),
            flows,
        }),
        ..PacketSettings::new("a", "b")
    })
}

struct Seg {
    from_sender: bool,
    sport: u16,
    flags: u8,
    seq: u32,
    ack: u32,
    window: u16,
    ts: (u32, u32),
    wscale: Option<u8>,
    sack: &'static [(u32, u32)],
    payload: usize,
}

impl Seg {
    fn new(from_sender: bool, flags: u8, seq: u32, ack: u32) -> Seg {
        Seg {
            from_sender,
            sport: 40_000,
            flags,
            seq,
            ack,
            window: 300,
            ts: (0, 0),
            wscale: None,
            sack: &[],
            payload: 0,
        }
    }

    fn frame(&self) -> Vec<u8> {
        let (src, dst, smac, dmac) = if self.from_sender {
            (SENDER, RECEIVER, SENDER_MAC, RECEIVER_MAC)
        } else {
            (RECEIVER, SENDER, RECEIVER_MAC, SENDER_MAC)
        };
        let (sp, dp) = if self.from_sender {
            (self.sport, 5001)
        } else {
            (5001, self.sport)
        };
        let ip = IpRepr::V4(Ipv4Repr::new(src, dst));
        let tcp = TcpRepr {
            src_port: sp,
            dst_port: dp,
            seq: self.seq,
            ack: self.ack,
            flags: self.flags,
            window: self.window,
            options: TcpOptions {
                timestamps: Some(pep_wire::TimestampOption {
                    val: self.ts.0,
                    ecr: self.ts.1,
                }),
                wscale: self.wscale,
                sack: SackOption::from_slice(self.sack),
                ..TcpOptions::default()
            },
            payload_len: self.payload,
            ..TcpRepr::default()
        };
        let payload: Vec<u8> = (0..self.payload)
            .map(|i| (i * 7 + self.seq as usize) as u8)
            .collect();
        let pkt = emit_packet_vec(&ip, &tcp, &payload).unwrap();
        ethernet_frame(smac, dmac, &pkt).unwrap()
    }
}

/// Data segment `k` (0-based) of the sender's stream, sent at TSval `tsval`.
fn data(k: u32, tsval: u32) -> Vec<u8> {
    Seg {
        payload: MSS as usize,
        ts: (tsval, 500),
        ..Seg::new(true, flags::ACK | flags::PSH, ISS + 1 + k * MSS, IRS + 1)
    }
    .frame()
}

/// The receiver's pure ACK of the first `k` segments.
fn dest_ack(k: u32, tsval: u32, window: u16, sack: &'static [(u32, u32)]) -> Vec<u8> {
    Seg {
        window,
        ts: (tsval, 100 + k),
        sack,
        ..Seg::new(false, flags::ACK, IRS + 1, ISS + 1 + k * MSS)
    }
    .frame()
}

/// SYN, SYN-ACK (window 65535, scale 7, TSval 500), ACK through `e`.
fn handshake(e: &mut Engine) -> Vec<(Side, Vec<u8>)> {
    let syn = Seg {
        wscale: Some(7),
        ts: (100, 0),
        ..Seg::new(true, flags::SYN, ISS, 0)
    };
    let synack = Seg {
        wscale: Some(7),
        window: 65_535,
        ts: (500, 100),
        ..Seg::new(false, flags::SYN | flags::ACK, IRS, ISS + 1)
    };
    let ack = Seg {
        ts: (101, 500),
        ..Seg::new(true, flags::ACK, ISS + 1, IRS + 1)
    };
    let mut out = vec![];
    for (side, f) in [
        (Side::B, syn.frame()),
        (Side::A, synack.frame()),
        (Side::B, ack.frame()),
    ] {
        e.on_frame(Instant::ZERO, side, f.clone());
        let got = drain(e);
        let to = if side == Side::A { Side::B } else { Side::A };
        assert_eq!(got, vec![(to, f)], "the handshake passes untouched");
        out.extend(got);
    }
    out
}

/// No timer left: the engine's deadline may be early (a lower bound), but
/// running it sends nothing and leaves none.
fn assert_no_timer(e: &mut Engine) {
    if let Some(t) = e.poll_timeout() {
        e.handle_timeout(t);
        assert_eq!(drain(e), vec![], "a timer fired with nothing held");
    }
    assert_eq!(e.poll_timeout(), None);
}

fn drain(e: &mut Engine) -> Vec<(Side, Vec<u8>)> {
    std::iter::from_fn(|| e.poll_transmit()).collect()
}

fn parsed(frame: &[u8]) -> (EthernetRepr, IpRepr, TcpRepr) {
    let (eth, ip) = EthernetRepr::parse(frame).unwrap();
    match parse_ip_packet(ip).unwrap() {
        Parsed::Tcp(p) => (eth, p.ip, p.tcp),
        Parsed::NotTcp(_) => panic!("not tcp"),
    }
}

/// A premature ACK addressed from the receiver to the sender.
fn assert_spoofed_ack(frame: &[u8], ack: u32, window: u16, tsval: u32, tsecr: u32) {
    checksum_exact(frame);
    let (eth, ip, tcp) = parsed(frame);
    assert_eq!((eth.src, eth.dst), (RECEIVER_MAC, SENDER_MAC));
    assert_eq!((ip.src(), ip.dst()), (RECEIVER.into(), SENDER.into()));
    assert_eq!((tcp.src_port, tcp.dst_port), (5001, 40_000));
    assert_eq!(tcp.flags, flags::ACK, "a pure ACK");
    assert_eq!(tcp.payload_len, 0);
    assert_eq!(tcp.seq, IRS + 1, "the receiver's sequence number");
    assert_eq!(tcp.ack, ack);
    assert_eq!(tcp.window, window);
    let ts = tcp.options.timestamps.expect("timestamps");
    assert_eq!((ts.val, ts.ecr), (tsval, tsecr));
    assert!(tcp.options.sack.is_empty(), "no stale SACK blocks");
}

#[test]
fn spoofed_acks_carry_the_receivers_fields_and_valid_checksums() {
    let mut e = engine(50, 30, 16);
    handshake(&mut e);
    // Before the receiver's first pure ACK: made from the data frame. The
    // window is the SYN-ACK's 65535 in units of 2^7.
    let d0 = data(0, 1000);
    e.on_frame(Instant(1), Side::B, d0.clone());
    let out = drain(&mut e);
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!(out[0], (Side::A, d0), "data forwarded as it came");
    assert_eq!(out[1].0, Side::B);
    assert_spoofed_ack(&out[1].1, ISS + 1 + MSS, 65_535 >> 7, 500, 1000);
    // The receiver's ACK (with a SACK block) is covered by the premature
    // ACK: dropped; it becomes the shape of later premature ACKs.
    let sack: &[(u32, u32)] = &[(ISS + 1 + 5 * MSS, ISS + 1 + 6 * MSS)];
    e.on_frame(Instant(2), Side::A, dest_ack(1, 800, 222, sack));
    assert_eq!(drain(&mut e), vec![], "covered by the premature ACK");
    let d1 = data(1, 1001);
    e.on_frame(Instant(3), Side::B, d1.clone());
    let out = drain(&mut e);
    assert_eq!(out[0], (Side::A, d1));
    assert_eq!(out.len(), 2);
    assert_eq!(out[1].0, Side::B);
    assert_spoofed_ack(&out[1].1, ISS + 1 + 2 * MSS, 222, 800, 1001);
    // The template's IP header and options layout are kept (the SACK
    // option became NOPs): same length as the receiver's ACK.
    assert_eq!(out[1].1.len(), dest_ack(1, 800, 222, sack).len());
    let s = e.stats().watermark;
    assert_eq!(
        (s.premature_acks, s.synthesized_acks, s.dropped_acks),
        (2, 1, 1)
    );
    assert_eq!((s.flows, s.stored_frames), (1, 1), "segment 0 delivered");
    assert_eq!(s.stored_bytes, data(0, 0).len() as u64);
    // The receiver acknowledges both: the copies go, the ACK is dropped.
    e.on_frame(Instant(4), Side::A, dest_ack(2, 801, 222, &[]));
    assert_eq!(drain(&mut e), vec![]);
    let s = e.stats().watermark;
    assert_eq!((s.stored_frames, s.stored_bytes), (0, 0));
    assert_no_timer(&mut e);
}

#[test]
fn a_timeout_retransmits_the_stored_copy_byte_for_byte() {
    let mut e = engine(50, 2, 16);
    handshake(&mut e);
    // A burst: one TSval (a copy older than the sender's newest TSval is
    // resent with that one, see the PAWS test below).
    let frames: Vec<Vec<u8>> = (0..4).map(|k| data(k, 1000)).collect();
    for f in &frames {
        e.on_frame(Instant(1), Side::B, f.clone());
    }
    let out = drain(&mut e);
    // W = 2: two premature ACKs, four copies stored.
    assert_eq!(out.iter().filter(|o| o.0 == Side::B).count(), 2);
    assert_eq!(e.stats().watermark.stored_frames, 4);
    // The receiver's ACKs never come: the oldest copy is sent again when
    // the timer (initial RTO 1 s) fires, then again after backing off.
    let t = e.poll_timeout().expect("a timer for the copies");
    assert!(t >= Instant(1_000_000_000), "{t:?}");
    e.handle_timeout(t);
    assert_eq!(drain(&mut e), vec![(Side::A, frames[0].clone())]);
    let t2 = e.poll_timeout().unwrap();
    assert!(t2 > t);
    e.handle_timeout(t2);
    assert_eq!(drain(&mut e), vec![(Side::A, frames[0].clone())]);
    assert_eq!(e.stats().watermark.local_retransmits, 2);
    // The repaired copy arrives: the copies sent before it were lost too
    // (links keep order), so they go again, go-back-N, byte for byte.
    e.on_frame(Instant(t2.0 + 1), Side::A, dest_ack(1, 900, 300, &[]));
    let out = drain(&mut e);
    let again: Vec<_> = out.into_iter().filter(|o| o.0 == Side::A).collect();
    let expected: Vec<_> = frames[1..].iter().map(|f| (Side::A, f.clone())).collect();
    assert_eq!(again, expected);
    assert_eq!(e.stats().watermark.local_retransmits, 5);
}

#[test]
fn three_duplicate_acks_repair_the_hole_locally_and_are_not_passed() {
    let mut e = engine(50, 4, 16);
    handshake(&mut e);
    let ms = |m: u64| Instant(m * 1_000_000);
    let frames: Vec<Vec<u8>> = (0..4).map(|k| data(k, 1000)).collect();
    for f in &frames {
        e.on_frame(ms(1), Side::B, f.clone());
    }
    assert_eq!(
        drain(&mut e).len(),
        8,
        "four forwarded, four premature ACKs"
    );
    // Segment 0 arrives (RTT 100 ms), segment 1 is lost: segments 2 and 3
    // and a later one draw duplicate ACKs, which the sender must not see.
    e.on_frame(ms(101), Side::A, dest_ack(1, 900, 300, &[]));
    assert_eq!(drain(&mut e), vec![], "covered by a premature ACK");
    for i in 0..3 {
        e.on_frame(ms(300 + i), Side::A, dest_ack(1, 901, 300, &[]));
    }
    assert_eq!(drain(&mut e), vec![(Side::A, frames[1].clone())]);
    let s = e.stats().watermark;
    assert_eq!((s.local_retransmits, s.dropped_acks), (1, 4));
}

#[test]
fn w_zero_passes_every_frame_untouched() {
    let mut e = engine(50, 0, 16);
    handshake(&mut e);
    for k in 0..5 {
        let d = data(k, 1000 + k);
        e.on_frame(Instant(k as u64), Side::B, d.clone());
        assert_eq!(drain(&mut e), vec![(Side::A, d)]);
        let a = dest_ack(k + 1, 900 + k, 300, &[]);
        e.on_frame(Instant(k as u64), Side::A, a.clone());
        assert_eq!(drain(&mut e), vec![(Side::B, a)]);
    }
    let s = e.stats().watermark;
    assert_eq!(
        (s.premature_acks, s.dropped_acks, s.stored_frames),
        (0, 0, 0)
    );
    assert_eq!(e.poll_timeout(), None);
}

#[test]
fn connections_without_a_seen_handshake_pass_untouched() {
    let mut e = engine(50, 30, 16);
    let d = data(0, 1);
    e.on_frame(Instant::ZERO, Side::B, d.clone());
    assert_eq!(drain(&mut e), vec![(Side::A, d)]);
    let a = dest_ack(1, 2, 300, &[]);
    e.on_frame(Instant::ZERO, Side::A, a.clone());
    assert_eq!(drain(&mut e), vec![(Side::B, a)]);
    assert_eq!(e.stats().watermark.flows, 0);
}

/// A SYN of connection `port` from the sender.
fn syn(port: u16) -> Vec<u8> {
    Seg {
        sport: port,
        ..Seg::new(true, flags::SYN, ISS, 0)
    }
    .frame()
}

#[test]
fn eviction_never_drops_premature_acked_data() {
    let mut e = engine(50, 30, 1);
    handshake(&mut e);
    e.on_frame(Instant(1), Side::B, data(0, 1000));
    assert_eq!(drain(&mut e).len(), 2, "forwarded and premature-ACKed");
    // The only slot holds premature-ACKed data: a new connection is refused
    // and passes as plain TCP; the first keeps its copy and its timer.
    e.on_frame(Instant(2), Side::B, syn(40_001));
    drain(&mut e);
    let s = e.stats().watermark;
    assert_eq!(
        (s.flows, s.refused, s.evicted, s.stored_frames),
        (1, 1, 0, 1)
    );
    assert!(e.poll_timeout().is_some());
    // Once the receiver has it, the slot can go to a new connection.
    e.on_frame(Instant(3), Side::A, dest_ack(1, 900, 300, &[]));
    drain(&mut e);
    e.on_frame(Instant(4), Side::B, syn(40_002));
    drain(&mut e);
    let s = e.stats().watermark;
    assert_eq!((s.flows, s.refused, s.evicted), (1, 1, 1));
    assert_eq!(e.stats().flows_evicted, 1);
    assert_eq!(e.largest_table(), 3, "the flow table knows three tuples");
}

#[test]
fn a_reset_ends_the_connections_state() {
    let mut e = engine(50, 30, 16);
    handshake(&mut e);
    e.on_frame(Instant(1), Side::B, data(0, 1000));
    drain(&mut e);
    let rst = Seg::new(false, flags::RST | flags::ACK, IRS + 1, ISS + 1).frame();
    e.on_frame(Instant(2), Side::A, rst.clone());
    assert_eq!(drain(&mut e), vec![(Side::B, rst)]);
    let s = e.stats().watermark;
    assert_eq!((s.flows, s.stored_frames, s.premature_acks), (0, 0, 1));
    assert_no_timer(&mut e);
}

#[test]
fn config_errors_name_the_field() {
    use crate::config::parse;
    let err = |w: &str| {
        parse(
            &format!("[packet]\na = \"e1\"\nb = \"e2\"\n{w}"),
            "pep.toml",
        )
        .unwrap_err()
        .to_string()
    };
    let ok = parse(
        "[packet]\na = \"e1\"\nb = \"e2\"\nwatermark = { buffer = 50, watermark = 30 }\n",
        "pep.toml",
    )
    .unwrap();
    let w = ok.packet.unwrap().watermark.unwrap();
    assert_eq!((w.core.capacity, w.core.watermark, w.flows), (50, 30, 1024));
    assert_eq!(w.core.window, None);
    let e = err("[packet.watermark]\nbuffer = 50\nwatermark = 51\n");
    assert!(e.contains("packet.watermark.watermark"), "{e}");
    let e = err("[packet.watermark]\nwatermark = 5\n");
    assert!(e.contains("packet.watermark.buffer: missing"), "{e}");
    let e = err("[packet.watermark]\nbuffer = 0\nwatermark = 0\n");
    assert!(e.contains("packet.watermark.buffer"), "{e}");
    let e = err("[packet.watermark]\nbuffer = 5\nwatermark = 5\nmin_rto = \"0s\"\n");
    assert!(e.contains("packet.watermark.min_rto"), "{e}");
    let e = err("[packet.watermark]\nbuffer = 5\nwatermark = 5\nflows = 0\n");
    assert!(e.contains("packet.watermark.flows"), "{e}");
    let e = err("[packet.watermark]\nbuffer = 5\nwatermark = 5\nwindow = 3\n");
    assert!(e.contains("window"), "{e}");
    let e = err("ack_thin = 2\n[packet.watermark]\nbuffer = 5\nwatermark = 5\n");
    assert!(e.contains("packet.watermark: runs without"), "{e}");
}

#[test]
fn a_new_syn_on_the_same_tuple_starts_afresh() {
    let mut e = engine(50, 30, 16);
    handshake(&mut e);
    for k in 0..3 {
        e.on_frame(Instant(1), Side::B, data(k, 1000 + k));
    }
    e.on_frame(Instant(2), Side::A, dest_ack(3, 900, 300, &[]));
    drain(&mut e);
    // The same ports again, a new connection far below the old numbers: its
    // first segment is premature-ACKed for its own numbers, never answered
    // with the old connection's ACK point.
    let iss = ISS.wrapping_sub(50_000_000);
    let syn = Seg {
        wscale: Some(7),
        ts: (2000, 0),
        ..Seg::new(true, flags::SYN, iss, 0)
    };
    let synack = Seg {
        wscale: Some(7),
        window: 65_535,
        ts: (3000, 2000),
        ..Seg::new(false, flags::SYN | flags::ACK, IRS, iss.wrapping_add(1))
    };
    e.on_frame(Instant(3), Side::B, syn.frame());
    e.on_frame(Instant(3), Side::A, synack.frame());
    drain(&mut e);
    let d = Seg {
        payload: MSS as usize,
        ts: (2001, 3000),
        ..Seg::new(true, flags::ACK, iss.wrapping_add(1), IRS + 1)
    }
    .frame();
    e.on_frame(Instant(4), Side::B, d.clone());
    let out = drain(&mut e);
    assert_eq!(out[0], (Side::A, d));
    assert_eq!(out.len(), 2);
    assert_spoofed_ack(
        &out[1].1,
        iss.wrapping_add(1 + MSS),
        65_535 >> 7,
        3000,
        2001,
    );
    assert_eq!(e.stats().watermark.flows, 1);
}

/// Valid conversations of 8 connections, shuffled and mutated (truncated,
/// bytes flipped, ports and lengths broken): nothing panics, the state
/// stays within its bounds, and every frame the stage creates (premature
/// ACKs) parses back with checksums equal to a full computation.
#[test]
fn mutated_conversations_never_break_the_bounds_or_the_checksums() {
    let mut rng = pep_core::rng::Stream::derive(7, "watermark-fuzz");
    let (flows, buffer) = (4, 8);
    let mut e = engine(buffer, 5, flows);
    let mut inputs = std::collections::HashSet::new();
    let mut created = 0;
    let mut now = 0u64;
    for round in 0..400u32 {
        let port = 40_000 + (rng.next_u64() % 8) as u16;
        let k = round % 40;
        let mut frames = vec![];
        if k == 0 {
            frames.push((Side::B, {
                let mut s = Seg::new(true, flags::SYN, ISS, 0);
                s.sport = port;
                s.wscale = Some(7);
                s.ts = (1, 0);
                s.frame()
            }));
            frames.push((Side::A, {
                let mut s = Seg::new(false, flags::SYN | flags::ACK, IRS, ISS + 1);
                s.sport = port;
                s.wscale = Some(7);
                s.ts = (2, 1);
                s.frame()
            }));
        }
        let mut d = Seg::new(true, flags::ACK, ISS + 1 + k * MSS, IRS + 1);
        d.sport = port;
        d.payload = MSS as usize;
        d.ts = (10 + k, 2);
        frames.push((Side::B, d.frame()));
        let mut a = Seg::new(
            false,
            flags::ACK,
            IRS + 1,
            ISS + 1 + k.saturating_sub(2) * MSS,
        );
        a.sport = port;
        a.ts = (20 + k, 10 + k);
        a.sack = if rng.bernoulli(0.2) {
            &[(ISS + 1 + 30 * MSS, ISS + 1 + 31 * MSS)]
        } else {
            &[]
        };
        frames.push((Side::A, a.frame()));
        for (side, mut f) in frames {
            match rng.next_u64() % 6 {
                0 => f.truncate((rng.next_u64() as usize) % f.len()),
                1 => {
                    let i = (rng.next_u64() as usize) % f.len();
                    f[i] ^= 1 << (rng.next_u64() % 8);
                }
                _ => {}
            }
            now += rng.next_u64() % 50_000_000;
            inputs.insert(f.clone());
            e.on_frame(Instant(now), side, f);
            e.handle_timeout(Instant(now));
            for (_, out) in drain(&mut e) {
                if !inputs.contains(&out) {
                    // Premature ACKs, and copies resent with a newer TSval.
                    created += 1;
                    checksum_exact(&out);
                    let (_, _, tcp) = parsed(&out);
                    if tcp.payload_len == 0 {
                        assert_eq!(tcp.flags, flags::ACK);
                    }
                }
            }
            let s = e.stats().watermark;
            assert!(s.flows as usize <= flows);
            assert!(s.stored_frames as usize <= flows * buffer);
        }
    }
    assert!(
        created > 40,
        "only {created} premature ACKs: the fuzz misses the stage"
    );
    assert!(e.stats().watermark.corrupt > 50);
}

#[test]
fn corrupted_segments_pass_without_reaching_the_core() {
    let mut e = engine(50, 30, 16);
    handshake(&mut e);
    // A payload bit flipped on S-Net: forwarded as it is (the receiver
    // drops it), neither stored nor acknowledged.
    let mut bad = data(0, 1000);
    let n = bad.len();
    bad[n - 1] ^= 0x10;
    e.on_frame(Instant(1), Side::B, bad.clone());
    assert_eq!(drain(&mut e), vec![(Side::A, bad)]);
    // A corrupted ACK number from D-Net must not release copies.
    e.on_frame(Instant(2), Side::B, data(0, 1000));
    assert_eq!(drain(&mut e).len(), 2);
    let mut ack = dest_ack(1, 900, 300, &[]);
    ack[14 + 20 + 8] ^= 0x01;
    e.on_frame(Instant(3), Side::A, ack.clone());
    assert_eq!(drain(&mut e), vec![(Side::B, ack)]);
    let s = e.stats().watermark;
    assert_eq!((s.corrupt, s.stored_frames, s.premature_acks), (2, 1, 1));
}

/// A copy resent after the sender has sent something newer carries the
/// sender's newest TSval: the receiver's PAWS check would otherwise
/// discard it for good once a newer segment (the sender's own
/// retransmission of an earlier hole) raised its recorded TSval.
#[test]
fn a_resent_copy_carries_the_senders_newest_tsval() {
    let mut e = engine(50, 30, 16);
    handshake(&mut e);
    let old = data(0, 1000);
    e.on_frame(Instant(1), Side::B, old.clone());
    // Anything newer from the sender (here new data; in the lab, its
    // retransmission of an earlier hole) may reach the receiver first.
    e.on_frame(Instant(2), Side::B, data(1, 1500));
    drain(&mut e);
    let t = e.poll_timeout().unwrap();
    e.handle_timeout(t);
    let out: Vec<_> = drain(&mut e)
        .into_iter()
        .filter(|o| o.0 == Side::A)
        .collect();
    assert!(!out.is_empty());
    let resent = out
        .iter()
        .map(|o| &o.1)
        .find(|f| parsed(f).2.seq == ISS + 1)
        .expect("segment 0 resent");
    checksum_exact(resent);
    let (_, _, tcp) = parsed(resent);
    let ts = tcp.options.timestamps.unwrap();
    assert_eq!((ts.val, ts.ecr), (1500, 500));
    // Everything else is the stored copy's: the TSval is bytes 6..10 of
    // the option, which starts after the 20-byte TCP header's two NOPs.
    let tsval_at = 14 + 20 + 20 + 4;
    let (a, b) = (&old[..], &resent[..]);
    assert_eq!(a.len(), b.len());
    let differ: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
    let checksum_at = 14 + 20 + 16;
    assert!(
        differ.iter().all(|&i| (tsval_at..tsval_at + 4).contains(&i)
            || (checksum_at..checksum_at + 2).contains(&i)),
        "bytes changed at {differ:?}"
    );
}
