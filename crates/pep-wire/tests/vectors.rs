//! Byte test vectors: real packets, built by hand and checked with tcpdump.

use crate::common;

use std::net::{Ipv4Addr, Ipv6Addr};

use common::{parse_tcp, vectors::*, ALL_VECTORS};
use pep_wire::*;

fn syn_ip() -> IpRepr {
    IpRepr::V4(Ipv4Repr {
        src: Ipv4Addr::new(192, 168, 1, 2),
        dst: Ipv4Addr::new(10, 0, 0, 1),
        ttl: 64,
        tos: 0,
        ident: 0x1c46,
        dont_frag: true,
    })
}

fn syn_tcp() -> TcpRepr {
    TcpRepr {
        src_port: 51234,
        dst_port: 80,
        seq: 0x1234_5678,
        ack: 0,
        flags: flags::SYN,
        window: 64240,
        urgent: 0,
        options: TcpOptions {
            mss: Some(1460),
            wscale: Some(7),
            sack_permitted: true,
            timestamps: Some(TimestampOption {
                val: 0x0a0b_0c0d,
                ecr: 0,
            }),
            ..Default::default()
        },
        payload_len: 0,
    }
}

fn sack_ip() -> IpRepr {
    IpRepr::V6(Ipv6Repr {
        src: "2001:db8::1".parse().unwrap(),
        dst: "2001:db8::2".parse().unwrap(),
        hop_limit: 64,
        traffic_class: 0,
        flow_label: 0x12345,
    })
}

fn sack_tcp() -> TcpRepr {
    TcpRepr {
        src_port: 443,
        dst_port: 40000,
        seq: 0xffff_fff0,
        ack: 2000,
        flags: flags::ACK,
        window: 1024,
        urgent: 0,
        options: TcpOptions {
            sack: SackOption::from_slice(&[(3000, 4000), (5000, 6000)]),
            timestamps: Some(TimestampOption {
                val: 0x1111_1111,
                ecr: 0x2222_2222,
            }),
            ..Default::default()
        },
        payload_len: 0,
    }
}

#[test]
fn parse_ipv4_syn() {
    let p = parse_tcp(&IPV4_SYN);
    assert_eq!(p.ip, syn_ip());
    assert_eq!(p.tcp, syn_tcp());
    assert_eq!(
        (p.ip_header_len, p.tcp_header_len, p.header_len()),
        (20, 40, 60)
    );
    assert!(p.payload.is_empty());
    assert_eq!(p.tcp.seq_len(), 1);
}

#[test]
fn emit_ipv4_syn() {
    assert_eq!(
        emit_packet_vec(&syn_ip(), &syn_tcp(), &[]).unwrap(),
        IPV4_SYN
    );
}

#[test]
fn parse_ipv4_with_ip_options() {
    let p = parse_tcp(&IPV4_DATA_IPOPT);
    let IpRepr::V4(ip) = p.ip else { panic!() };
    assert_eq!(
        (ip.src, ip.dst),
        (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(192, 168, 1, 2))
    );
    assert_eq!(
        (ip.ttl, ip.tos, ip.ident, ip.dont_frag),
        (57, 0x02, 0xbeef, true)
    );
    assert_eq!(p.ip.ecn(), 2);
    assert_eq!(p.ip_header_len, 24);
    assert_eq!(p.tcp.flags, flags::PSH | flags::ACK);
    assert_eq!(
        (p.tcp.seq, p.tcp.ack, p.tcp.window),
        (1000, 0x1234_5679, 509)
    );
    assert_eq!(
        p.tcp.options.timestamps,
        Some(TimestampOption {
            val: 0x0102_0304,
            ecr: 0x0a0b_0c0d
        })
    );
    assert_eq!(p.payload, b"hello");
}

#[test]
fn ethernet_padding_is_not_payload() {
    // A 60-byte minimum frame pads short packets; the IP length bounds them.
    let mut padded = IPV4_DATA_IPOPT.to_vec();
    padded.extend_from_slice(&[0xee; 6]);
    assert_eq!(parse_tcp(&padded).payload, b"hello");
    verify_checksums(&padded).unwrap();
    rewrite_tcp_ack(&mut padded, 7).unwrap();
    verify_checksums(&padded).unwrap();
    assert_eq!(&padded[61..], &[0xee; 6]);
}

#[test]
fn parse_and_emit_ipv6_sack() {
    let p = parse_tcp(&IPV6_SACK);
    assert_eq!(p.ip, sack_ip());
    assert_eq!(p.tcp, sack_tcp());
    assert_eq!(p.header_len(), 92);
    assert_eq!(
        emit_packet_vec(&sack_ip(), &sack_tcp(), &[]).unwrap(),
        IPV6_SACK
    );
}

#[test]
fn parse_ipv6_through_hop_by_hop() {
    let p = parse_tcp(&IPV6_HBH_ODD_TS);
    let IpRepr::V6(ip) = p.ip else { panic!() };
    assert_eq!(ip.src, "2001:db8::2".parse::<Ipv6Addr>().unwrap());
    assert_eq!(
        (ip.traffic_class, ip.hop_limit, ip.flow_label),
        (0xb8, 255, 0)
    );
    assert_eq!(p.ip_header_len, 48);
    assert_eq!(p.tcp_header_len, 32);
    assert_eq!(
        p.tcp.options.timestamps,
        Some(TimestampOption {
            val: 0xdead_beef,
            ecr: 0x0102_0304
        })
    );
    assert_eq!(p.payload, b"abc");
}

#[test]
fn vectors_verify_and_refill_to_themselves() {
    for v in ALL_VECTORS {
        verify_checksums(v).unwrap();
        let mut refilled = v.to_vec();
        fill_checksums(&mut refilled).unwrap();
        assert_eq!(refilled, v);
    }
}

#[test]
fn corruption_is_caught_per_layer() {
    let mut p = IPV4_SYN;
    p[8] ^= 1; // TTL: only the IPv4 header checksum covers it
    assert_eq!(
        verify_checksums(&p),
        Err(WireError::BadChecksum {
            layer: Layer::Ipv4,
            found: 0x52cb,
            expected: 0x51cb
        })
    );
    let mut p = IPV6_SACK;
    p[60] ^= 0x80;
    assert!(matches!(
        verify_checksums(&p),
        Err(WireError::BadChecksum {
            layer: Layer::Tcp,
            found: 0x6eae,
            ..
        })
    ));
    // An address change shows through the pseudo-header.
    let mut p = IPV6_SACK;
    p[39] = 3;
    assert!(matches!(
        verify_checksums(&p),
        Err(WireError::BadChecksum {
            layer: Layer::Tcp,
            ..
        })
    ));
}

#[test]
fn checksum_field_of_ones_is_accepted_as_zero() {
    // 0x0000 and 0xFFFF both encode zero; receivers accept either.
    let ip = IpRepr::V4(Ipv4Repr::new(
        Ipv4Addr::new(10, 0, 0, 1),
        Ipv4Addr::new(10, 0, 0, 2),
    ));
    // Search for a window value that makes the TCP checksum 0x0000.
    let mut tcp = TcpRepr {
        flags: flags::ACK,
        ..Default::default()
    };
    let zero = (0..=u16::MAX)
        .find_map(|w| {
            tcp.window = w;
            let p = emit_packet_vec(&ip, &tcp, &[]).unwrap();
            (p[36..38] == [0, 0]).then_some(p)
        })
        .expect("some window gives checksum 0");
    let mut ones = zero.clone();
    ones[36..38].copy_from_slice(&[0xff, 0xff]);
    verify_checksums(&zero).unwrap();
    verify_checksums(&ones).unwrap();
}

#[test]
fn rewrites_on_vectors() {
    for v in ALL_VECTORS {
        let mut p = v.to_vec();
        rewrite_tcp_ack(&mut p, 0xdead_0001).unwrap();
        rewrite_tcp_window(&mut p, 0x0001).unwrap();
        rewrite_tcp_seq(&mut p, 0xffff_ffff).unwrap();
        let had_ts = parse_tcp(v).tcp.options.timestamps.is_some();
        let ts = TimestampOption {
            val: 0x8000_0001,
            ecr: 0xffff_0000,
        };
        assert_eq!(rewrite_tcp_timestamps(&mut p, ts).unwrap(), had_ts);
        verify_checksums(&p).unwrap();
        let mut full = p.clone();
        fill_checksums(&mut full).unwrap();
        assert_eq!(p, full, "incremental and full checksums differ");
        let t = parse_tcp(&p).tcp;
        assert_eq!((t.ack, t.window, t.seq), (0xdead_0001, 1, 0xffff_ffff));
        assert_eq!(t.options.timestamps, had_ts.then_some(ts));
    }
}

#[test]
fn timestamps_rewrite_at_odd_offset() {
    let mut p = IPV6_HBH_ODD_TS;
    let ts = TimestampOption { val: 1, ecr: 2 };
    assert_eq!(rewrite_tcp_timestamps(&mut p, ts), Ok(true));
    // TSval starts at byte 23 of the TCP header: 40 + 8 + 23.
    assert_eq!(&p[71..79], &[0, 0, 0, 1, 0, 0, 0, 2]);
    verify_checksums(&p).unwrap();
}

#[test]
fn rewrite_keeps_a_bad_checksum_bad() {
    let mut p = IPV6_SACK;
    p[57] ^= 0x10; // break the TCP checksum
    let before = verify_checksums(&p).unwrap_err();
    rewrite_tcp_ack(&mut p, 99).unwrap();
    let after = verify_checksums(&p).unwrap_err();
    let (
        WireError::BadChecksum {
            found: f0,
            expected: e0,
            ..
        },
        WireError::BadChecksum {
            found: f1,
            expected: e1,
            ..
        },
    ) = (before, after)
    else {
        panic!()
    };
    // The error (found - expected, one's complement) is preserved.
    assert_eq!(f0.wrapping_sub(e0), f1.wrapping_sub(e1));
}

#[test]
fn emit_headers_only_matches_zero_payload() {
    let mut tcp = sack_tcp();
    tcp.payload_len = 1000;
    let full = emit_packet_vec(&sack_ip(), &tcp, &[0; 1000]).unwrap();
    let mut hdrs = [0u8; 128];
    let n = emit_headers(&sack_ip(), &tcp, &mut hdrs).unwrap();
    assert_eq!(n, 92);
    assert_eq!(packet_len(&sack_ip(), &tcp), 1092);
    assert_eq!(&hdrs[..n], &full[..n]);
}

#[test]
fn emit_errors() {
    let ip = syn_ip();
    let mut tcp = syn_tcp();
    let mut small = [0u8; 59];
    assert_eq!(
        emit_packet(&ip, &tcp, &[], &mut small),
        Err(WireError::BufferTooSmall {
            needed: 60,
            got: 59
        })
    );
    assert_eq!(
        emit_packet(&ip, &tcp, &[1], &mut [0; 100]),
        Err(WireError::PayloadLenMismatch {
            declared: 0,
            actual: 1
        })
    );
    tcp.options.sack = SackOption::from_slice(&[(1, 2), (3, 4), (5, 6)]);
    assert_eq!(
        emit_packet_vec(&ip, &tcp, &[]),
        Err(WireError::OptionsTooLong(48))
    );
    // IPv4 total length and IPv6 payload length are 16 bits.
    let mut big = TcpRepr {
        payload_len: 65_496,
        ..Default::default()
    };
    assert_eq!(
        emit_headers(&ip, &big, &mut [0; 64]),
        Err(WireError::TooLong(65_536))
    );
    big.payload_len = 65_495;
    assert_eq!(emit_headers(&ip, &big, &mut [0; 64]), Ok(40));
    big.payload_len = 65_515;
    assert_eq!(emit_headers(&sack_ip(), &big, &mut [0; 64]), Ok(60));
    big.payload_len = 65_516;
    assert_eq!(
        emit_headers(&sack_ip(), &big, &mut [0; 64]),
        Err(WireError::TooLong(65_576))
    );
}

#[test]
fn ethernet_framing() {
    let f = ethernet_frame([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], &IPV6_SACK).unwrap();
    let (eth, ip) = EthernetRepr::parse(&f).unwrap();
    assert_eq!(eth.ethertype, ETHERTYPE_IPV6);
    assert_eq!(parse_tcp(ip).tcp, sack_tcp());
}
