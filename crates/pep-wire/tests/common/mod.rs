//! Shared by the integration tests: byte vectors and proptest strategies.

pub mod vectors;

use std::net::{Ipv4Addr, Ipv6Addr};

use pep_wire::*;
use proptest::prelude::*;

pub const ALL_VECTORS: [&[u8]; 4] = [
    &vectors::IPV4_SYN,
    &vectors::IPV4_DATA_IPOPT,
    &vectors::IPV6_SACK,
    &vectors::IPV6_HBH_ODD_TS,
];

pub fn parse_tcp(packet: &[u8]) -> TcpPacket<'_> {
    match parse_ip_packet(packet) {
        Ok(Parsed::Tcp(p)) => p,
        other => panic!("expected TCP, got {other:?}"),
    }
}

pub fn arb_ip() -> impl Strategy<Value = IpRepr> {
    let v4 = (
        any::<u32>(),
        any::<u32>(),
        any::<u8>(),
        any::<u8>(),
        any::<u16>(),
        any::<bool>(),
    )
        .prop_map(|(s, d, ttl, tos, ident, dont_frag)| {
            IpRepr::V4(Ipv4Repr {
                src: Ipv4Addr::from(s),
                dst: Ipv4Addr::from(d),
                ttl,
                tos,
                ident,
                dont_frag,
            })
        });
    let v6 = (
        any::<u128>(),
        any::<u128>(),
        any::<u8>(),
        any::<u8>(),
        0u32..(1 << 20),
    )
        .prop_map(|(s, d, hop_limit, traffic_class, flow_label)| {
            IpRepr::V6(Ipv6Repr {
                src: Ipv6Addr::from(s),
                dst: Ipv6Addr::from(d),
                hop_limit,
                traffic_class,
                flow_label,
            })
        });
    prop_oneof![v4, v6]
}

/// Options that emit within 40 bytes.
pub fn arb_options() -> impl Strategy<Value = TcpOptions> {
    (
        any::<Option<u16>>(),
        any::<Option<u8>>(),
        any::<bool>(),
        prop::collection::vec(any::<(u32, u32)>(), 0..=MAX_SACK_BLOCKS),
        any::<Option<(u32, u32)>>(),
    )
        .prop_map(|(mss, wscale, sack_permitted, sack, ts)| TcpOptions {
            mss,
            wscale,
            sack_permitted,
            sack: SackOption::from_slice(&sack),
            timestamps: ts.map(|(val, ecr)| TimestampOption { val, ecr }),
            unknown: 0,
        })
        .prop_filter("options fit the header", |o| {
            o.wire_len() <= MAX_OPTIONS_LEN
        })
}

pub fn arb_tcp(max_payload: usize) -> impl Strategy<Value = TcpRepr> {
    (
        any::<(u16, u16, u32, u32, u8, u16, u16)>(),
        arb_options(),
        0..=max_payload,
    )
        .prop_map(
            |((src_port, dst_port, seq, ack, flags, window, urgent), options, payload_len)| {
                TcpRepr {
                    src_port,
                    dst_port,
                    seq,
                    ack,
                    flags,
                    window,
                    urgent,
                    options,
                    payload_len,
                }
            },
        )
}

/// A valid packet: headers, payload bytes, and its emitted form.
pub fn arb_packet() -> impl Strategy<Value = (IpRepr, TcpRepr, Vec<u8>)> {
    (arb_ip(), arb_tcp(300)).prop_flat_map(|(ip, tcp)| {
        prop::collection::vec(any::<u8>(), tcp.payload_len)
            .prop_map(move |payload| (ip, tcp, emit_packet_vec(&ip, &tcp, &payload).unwrap()))
    })
}
