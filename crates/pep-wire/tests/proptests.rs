//! Property tests: round trips, agreement with etherparse as an independent
//! decoder, incremental checksums against full ones, and no panics on any
//! input.

use crate::common;

use common::{arb_ip, arb_packet, arb_tcp, parse_tcp, ALL_VECTORS};
use etherparse::{NetSlice, SlicedPacket, TransportSlice};
use pep_wire::*;
use proptest::prelude::*;

/// `tcp` and `payload` emitted with raw `options` bytes spliced in, checksums
/// filled: for layouts our emitter never produces (odd offsets, unknown
/// kinds).
fn with_raw_options(ip: &IpRepr, tcp: &TcpRepr, options: &[u8], payload: &[u8]) -> Vec<u8> {
    assert_eq!(options.len() % 4, 0);
    let bare = TcpRepr {
        options: TcpOptions::default(),
        payload_len: payload.len(),
        ..*tcp
    };
    let mut v = emit_packet_vec(ip, &bare, payload).unwrap();
    let at = ip.header_len() + 20;
    v.splice(at..at, options.iter().copied());
    v[ip.header_len() + 12] = (((20 + options.len()) / 4) as u8) << 4;
    let l = (v.len() - if let IpRepr::V4(_) = ip { 0 } else { 40 }) as u16;
    let field = if let IpRepr::V4(_) = ip { 2 } else { 4 };
    v[field..field + 2].copy_from_slice(&l.to_be_bytes());
    fill_checksums(&mut v).unwrap();
    v
}

/// Options bytes with the timestamps option after `pad` NOPs, possibly with
/// an unknown option in front, padded to a word with EOL.
fn arb_odd_ts_options() -> impl Strategy<Value = (Vec<u8>, TimestampOption)> {
    (0usize..8, any::<bool>(), any::<(u32, u32)>()).prop_map(|(pad, unknown, (val, ecr))| {
        let mut o = Vec::new();
        if unknown {
            o.extend_from_slice(&[253, 4, 0xab, 0xcd]); // experimental kind
        }
        o.resize(o.len() + pad, 1);
        o.extend_from_slice(&[8, 10]);
        o.extend_from_slice(&val.to_be_bytes());
        o.extend_from_slice(&ecr.to_be_bytes());
        while o.len() % 4 != 0 {
            o.push(0);
        }
        (o, TimestampOption { val, ecr })
    })
}

/// A valid packet of any shape we know: emitted, or with odd option layouts.
fn arb_any_valid() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        arb_packet().prop_map(|(_, _, bytes)| bytes),
        (arb_ip(), arb_tcp(64), arb_odd_ts_options()).prop_map(|(ip, tcp, (opts, _))| {
            let payload = vec![0x5a; tcp.payload_len];
            with_raw_options(&ip, &tcp, &opts, &payload)
        }),
        prop::sample::select(ALL_VECTORS.to_vec()).prop_map(<[u8]>::to_vec),
    ]
}

fn check_no_panic(bytes: &[u8]) {
    if let Ok(Parsed::Tcp(p)) = parse_ip_packet(bytes) {
        // Whatever parses is self-consistent.
        assert!(p.header_len() + p.payload.len() <= bytes.len());
        assert_eq!(p.tcp.payload_len, p.payload.len());
    }
    let _ = verify_checksums(bytes);
    let _ = TcpRepr::parse(bytes);
    let _ = TcpOptions::parse(bytes);
    let _ = EthernetRepr::parse(bytes);
    if let Ok(r) = PcapReader::new(bytes) {
        for rec in r.take(64) {
            if rec.is_err() {
                break;
            }
        }
    }
    let mut m = bytes.to_vec();
    let ok_before = parse_ip_packet(bytes).is_ok();
    for res in [
        rewrite_tcp_ack(&mut m, 0x0102_0304),
        rewrite_tcp_seq(&mut m, 0xfffe_fffd),
        rewrite_tcp_window(&mut m, 0xffff),
        rewrite_tcp_timestamps(&mut m, TimestampOption { val: 1, ecr: 2 }).map(|_| ()),
        fill_checksums(&mut m),
    ] {
        if res.is_err() {
            continue;
        }
        // Rewrites never break what parsed.
        assert!(!ok_before || parse_ip_packet(&m).is_ok());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn emit_then_parse_is_identity((ip, tcp, bytes) in arb_packet()) {
        let p = parse_tcp(&bytes);
        prop_assert_eq!(p.ip, ip);
        prop_assert_eq!(p.tcp, tcp);
        prop_assert_eq!(p.ip_header_len, ip.header_len());
        prop_assert_eq!(p.tcp_header_len, tcp.header_len());
        prop_assert_eq!(bytes.len(), packet_len(&ip, &tcp));
        prop_assert_eq!(verify_checksums(&bytes), Ok(()));
        let mut again = vec![0; bytes.len()];
        emit_packet(&p.ip, &p.tcp, p.payload, &mut again).unwrap();
        prop_assert_eq!(again, bytes);
    }

    /// etherparse decodes what we emit to the same fields and checksum.
    #[test]
    fn etherparse_agrees((ip, tcp, bytes) in arb_packet()) {
        let sliced = SlicedPacket::from_ip(&bytes).unwrap();
        let Some(TransportSlice::Tcp(t)) = sliced.transport else { panic!("no TCP") };
        prop_assert_eq!((t.source_port(), t.destination_port()), (tcp.src_port, tcp.dst_port));
        prop_assert_eq!((t.sequence_number(), t.acknowledgment_number()), (tcp.seq, tcp.ack));
        prop_assert_eq!((t.window_size(), t.urgent_pointer()), (tcp.window, tcp.urgent));
        prop_assert_eq!(t.payload().len(), tcp.payload_len);
        let h = t.to_header();
        let want = match sliced.net {
            Some(NetSlice::Ipv4(v4)) => {
                prop_assert!(matches!(ip, IpRepr::V4(_)));
                let hdr = v4.header();
                prop_assert_eq!(hdr.to_header().calc_header_checksum(), hdr.header_checksum());
                h.calc_checksum_ipv4(&hdr.to_header(), t.payload()).unwrap()
            }
            Some(NetSlice::Ipv6(v6)) => {
                prop_assert!(matches!(ip, IpRepr::V6(_)));
                h.calc_checksum_ipv6(&v6.header().to_header(), t.payload()).unwrap()
            }
            _ => panic!("no IP"),
        };
        prop_assert_eq!(t.checksum(), want);
        let mss = t.options_iterator().find_map(|o| match o {
            Ok(etherparse::TcpOptionElement::MaximumSegmentSize(m)) => Some(m),
            _ => None,
        });
        prop_assert_eq!(mss, tcp.options.mss);
    }

    /// After any sequence of rewrites the incremental checksum verifies and
    /// equals a full recomputation.
    #[test]
    fn incremental_equals_full(
        bytes in arb_any_valid(),
        ack: u32, seq: u32, window: u16, ts: (u32, u32), fl: u8,
        order in Just([0u8, 1, 2, 3, 4]).prop_shuffle(),
    ) {
        let mut p = bytes.clone();
        let had_ts = parse_tcp(&bytes).tcp.options.timestamps.is_some();
        let ts = TimestampOption { val: ts.0, ecr: ts.1 };
        for op in order {
            match op {
                0 => rewrite_tcp_ack(&mut p, ack).unwrap(),
                1 => rewrite_tcp_seq(&mut p, seq).unwrap(),
                2 => rewrite_tcp_window(&mut p, window).unwrap(),
                4 => rewrite_tcp_flags(&mut p, fl).unwrap(),
                _ => prop_assert_eq!(rewrite_tcp_timestamps(&mut p, ts).unwrap(), had_ts),
            }
            prop_assert_eq!(verify_checksums(&p), Ok(()));
        }
        let mut full = p.clone();
        fill_checksums(&mut full).unwrap();
        prop_assert_eq!(&p, &full);
        let t = parse_tcp(&p).tcp;
        prop_assert_eq!((t.ack, t.seq, t.window, t.flags), (ack, seq, window, fl));
        if had_ts {
            prop_assert_eq!(t.options.timestamps, Some(ts));
        }
        // Only the rewritten fields and the checksum changed.
        let orig = parse_tcp(&bytes).tcp;
        let mut expect = TcpRepr { ack, seq, window, flags: fl, ..orig };
        if had_ts {
            expect.options.timestamps = Some(ts);
        }
        prop_assert_eq!(t, expect);
    }

    #[test]
    fn odd_timestamp_layouts_parse((opts, ts) in arb_odd_ts_options(), ip in arb_ip()) {
        let tcp = TcpRepr { flags: flags::ACK, ..Default::default() };
        let p = with_raw_options(&ip, &tcp, &opts, &[]);
        let t = parse_tcp(&p).tcp;
        prop_assert_eq!(t.options.timestamps, Some(ts));
        prop_assert_eq!(t.options.unknown, u8::from(opts[0] == 253));
    }

}

proptest! {
    // Cheap cases, so many of them: these are the fuzzers.
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        check_no_panic(&bytes);
    }

    /// Random bytes behind a plausible first byte, to get past the version.
    #[test]
    fn random_ip_like_bytes_never_panic(
        first in prop::sample::select(vec![0x45u8, 0x46, 0x4f, 0x60]),
        rest in prop::collection::vec(any::<u8>(), 0..200),
    ) {
        let mut bytes = vec![first];
        bytes.extend(rest);
        check_no_panic(&bytes);
    }

    #[test]
    fn mutated_packets_never_panic(
        bytes in arb_any_valid(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
        do_cut: bool,
    ) {
        let mut m = bytes;
        // Mostly hit the headers, where the lengths live.
        let span = m.len().min(100);
        for (i, b) in edits {
            m[i.index(span)] = b;
        }
        if do_cut {
            m.truncate(cut.index(m.len() + 1));
        }
        check_no_panic(&m);
    }

}

proptest! {
    #[test]
    fn pcap_round_trip(
        records in prop::collection::vec((any::<u32>(), prop::collection::vec(any::<u8>(), 0..100)), 0..8),
        snaplen in 1u32..120,
    ) {
        let mut w = PcapWriter::new(Vec::new(), LinkType::RawIp, snaplen).unwrap();
        let mut t = 0u64;
        for (dt, data) in &records {
            t += u64::from(*dt);
            w.write_packet(t, data).unwrap();
        }
        let bytes = w.into_inner().unwrap();
        let got: Vec<_> = PcapReader::new(&bytes[..]).unwrap().collect::<std::io::Result<_>>().unwrap();
        prop_assert_eq!(got.len(), records.len());
        let mut t = 0u64;
        for (rec, (dt, data)) in got.iter().zip(&records) {
            t += u64::from(*dt);
            prop_assert_eq!(rec.ts_ns, t);
            prop_assert_eq!(rec.orig_len as usize, data.len());
            prop_assert_eq!(&rec.data[..], &data[..data.len().min(snaplen as usize)]);
        }
    }
}
