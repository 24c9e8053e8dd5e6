//! Malformed and unusual packets: each gives the error (or the `NotTcp`
//! verdict) that says what is wrong, and nothing is modified on error.

use crate::common;

use common::{parse_tcp, vectors::*, ALL_VECTORS};
use pep_wire::*;

use WireError::*;

fn parse(p: &[u8]) -> Result<Parsed<'_>, WireError> {
    parse_ip_packet(p)
}

fn not_tcp(p: &[u8]) -> (u8, NotTcpReason) {
    match parse(p) {
        Ok(Parsed::NotTcp(n)) => (n.protocol, n.reason),
        other => panic!("expected NotTcp, got {other:?}"),
    }
}

/// Every in-place operation fails with `err` and leaves the bytes alone.
fn assert_untouched(p: &[u8], err: WireError) {
    let mut q = p.to_vec();
    assert_eq!(rewrite_tcp_ack(&mut q, 1), Err(err));
    assert_eq!(rewrite_tcp_seq(&mut q, 1), Err(err));
    assert_eq!(rewrite_tcp_window(&mut q, 1), Err(err));
    assert_eq!(
        rewrite_tcp_timestamps(&mut q, TimestampOption::default()),
        Err(err)
    );
    assert_eq!(fill_checksums(&mut q), Err(err));
    assert_eq!(q, p);
}

#[test]
fn every_truncation_is_an_error() {
    for v in ALL_VECTORS {
        for n in 0..v.len() {
            let err = parse(&v[..n]).unwrap_err();
            assert!(matches!(err, Truncated { .. }), "len {n}: {err:?}");
            assert_eq!(verify_checksums(&v[..n]), Err(err));
            assert_untouched(&v[..n], err);
        }
    }
    assert_eq!(
        parse(&[]),
        Err(Truncated {
            layer: Layer::Ip,
            needed: 1,
            got: 0
        })
    );
    assert_eq!(
        parse(&IPV4_SYN[..59]),
        Err(Truncated {
            layer: Layer::Ipv4,
            needed: 60,
            got: 59
        })
    );
    assert_eq!(
        parse(&IPV6_SACK[..39]),
        Err(Truncated {
            layer: Layer::Ipv6,
            needed: 40,
            got: 39
        })
    );
}

#[test]
fn ip_version() {
    let mut p = IPV4_SYN;
    for v in [0u8, 5, 7, 15] {
        p[0] = (v << 4) | 5;
        assert_eq!(parse(&p), Err(UnsupportedVersion(v)));
    }
}

#[test]
fn ihl_below_five() {
    let mut p = IPV4_SYN;
    for ihl in 0..5 {
        p[0] = 0x40 | ihl;
        assert_eq!(parse(&p), Err(BadIhl(ihl)));
        assert_untouched(&p, BadIhl(ihl));
    }
}

#[test]
fn ihl_past_total_length() {
    let mut p = IPV4_SYN;
    p[0] = 0x4f; // 60-byte header in a 60-byte packet: no room for TCP
    assert_eq!(
        parse(&p),
        Err(Truncated {
            layer: Layer::Tcp,
            needed: 20,
            got: 0
        })
    );
    p[3] = 56; // total length now below the header
    assert_eq!(
        parse(&p),
        Err(BadTotalLength {
            total_len: 56,
            header_len: 60
        })
    );
}

#[test]
fn total_length_inconsistent() {
    let mut p = IPV4_SYN;
    p[3] = 61;
    assert_eq!(
        parse(&p),
        Err(Truncated {
            layer: Layer::Ipv4,
            needed: 61,
            got: 60
        })
    );
    p[3] = 19;
    assert_eq!(
        parse(&p),
        Err(BadTotalLength {
            total_len: 19,
            header_len: 20
        })
    );
    // Shorter than the packet: TCP sees a cut segment.
    p[3] = 50;
    assert_eq!(
        parse(&p),
        Err(BadDataOffset {
            data_offset: 10,
            segment_len: 30
        })
    );
    let mut p = IPV6_SACK;
    p[5] += 1;
    assert_eq!(
        parse(&p),
        Err(Truncated {
            layer: Layer::Ipv6,
            needed: 93,
            got: 92
        })
    );
}

#[test]
fn data_offset_below_five_or_past_the_end() {
    let mut p = IPV4_SYN;
    for doff in [0u8, 4] {
        p[32] = doff << 4;
        let err = BadDataOffset {
            data_offset: doff,
            segment_len: 40,
        };
        assert_eq!(parse(&p), Err(err));
        assert_untouched(&p, err);
    }
    p[32] = 11 << 4;
    assert_eq!(
        parse(&p),
        Err(BadDataOffset {
            data_offset: 11,
            segment_len: 40
        })
    );
}

#[test]
fn option_lengths() {
    // IPV4_SYN options start at byte 40 with MSS (2, 4, ...).
    let cases: &[(usize, u8, WireError)] = &[
        (41, 0, BadOptionLength { kind: 2, len: 0 }),
        (41, 1, BadOptionLength { kind: 2, len: 1 }),
        (41, 21, OptionOverrun { kind: 2 }),
        (41, 6, BadOptionLength { kind: 2, len: 6 }),
        // Window scale, the last option, claiming one byte too many.
        (58, 4, OptionOverrun { kind: 3 }),
    ];
    for &(at, val, err) in cases {
        let mut p = IPV4_SYN;
        p[at] = val;
        assert_eq!(parse(&p), Err(err), "byte {at} = {val}");
        // Fixed-header rewrites still work; the options rewrite refuses.
        let mut q = p;
        assert_eq!(
            rewrite_tcp_timestamps(&mut q, TimestampOption::default()),
            Err(err)
        );
        assert_eq!(q, p);
        rewrite_tcp_ack(&mut q, 5).unwrap();
    }
    // A kind byte as the last byte of the header, with no length.
    let mut p = IPV4_SYN;
    p[56..60].copy_from_slice(&[1, 1, 1, 8]);
    assert_eq!(parse(&p), Err(OptionOverrun { kind: 8 }));
}

#[test]
fn eol_ends_the_options() {
    let mut p = IPV4_SYN;
    // EOL where the NOP before window scale was: the rest is padding.
    p[56] = 0;
    let t = parse_tcp(&p).tcp;
    assert_eq!((t.options.mss, t.options.wscale), (Some(1460), None));
}

#[test]
fn ipv4_fragments_and_other_protocols() {
    let mut p = IPV4_SYN;
    p[6] |= 0x20; // more fragments
    assert_eq!(not_tcp(&p), (6, NotTcpReason::Fragment));
    assert_untouched(&p, NotTcp);
    let mut p = IPV4_SYN;
    p[7] = 1; // offset 8 bytes
    assert_eq!(not_tcp(&p), (6, NotTcpReason::Fragment));
    let mut p = IPV4_SYN;
    p[9] = 17;
    assert_eq!(not_tcp(&p), (17, NotTcpReason::Protocol));
    assert_eq!(parse(&p).unwrap().ip(), &parse_tcp(&IPV4_SYN).ip);
    assert_untouched(&p, NotTcp);
    // Checksums of a non-TCP packet: the IPv4 header only.
    assert!(matches!(
        verify_checksums(&p),
        Err(BadChecksum {
            layer: Layer::Ipv4,
            ..
        })
    ));
}

/// IPV6_SACK with `ext` (its next-header byte filled in) inserted after the
/// fixed header as header type `ty`.
fn with_ext(ty: u8, ext: &[u8]) -> Vec<u8> {
    let mut v = IPV6_SACK[..40].to_vec();
    let mut e = ext.to_vec();
    e[0] = v[6];
    v[6] = ty;
    v.extend_from_slice(&e);
    v.extend_from_slice(&IPV6_SACK[40..]);
    let len = (v.len() - 40) as u16;
    v[4..6].copy_from_slice(&len.to_be_bytes());
    v
}

#[test]
fn ipv6_extension_headers() {
    let padn = [0, 0, 1, 4, 0, 0, 0, 0];
    let p = with_ext(0, &padn);
    assert_eq!(parse_tcp(&p).ip_header_len, 48);
    // Extension headers are outside the TCP checksum.
    verify_checksums(&p).unwrap();

    // Destination options, then routing with no segments left, then an
    // atomic fragment: all walked.
    let p = with_ext(60, &padn);
    let p = {
        let mut q = p[..40].to_vec();
        let mut r = vec![0, 0, 4, 0, 0, 0, 0, 0];
        r[0] = q[6];
        q[6] = 43;
        q.extend_from_slice(&r);
        q.extend_from_slice(&p[40..]);
        let len = (q.len() - 40) as u16;
        q[4..6].copy_from_slice(&len.to_be_bytes());
        q
    };
    assert_eq!(parse_tcp(&p).ip_header_len, 56);
    let p = with_ext(44, &[0, 0, 0, 0, 0, 0, 0, 7]);
    assert_eq!(parse_tcp(&p).tcp, parse_tcp(&IPV6_SACK).tcp);

    assert_eq!(
        not_tcp(&with_ext(44, &[0, 0, 0, 1, 0, 0, 0, 7])),
        (44, NotTcpReason::Fragment)
    );
    assert_eq!(
        not_tcp(&with_ext(44, &[0, 0, 0, 8, 0, 0, 0, 7])),
        (44, NotTcpReason::Fragment)
    );
    assert_eq!(
        not_tcp(&with_ext(43, &[0, 0, 4, 1, 0, 0, 0, 0])),
        (43, NotTcpReason::SourceRoute)
    );
    assert_eq!(
        not_tcp(&with_ext(51, &[0; 24])),
        (51, NotTcpReason::Extension)
    );
    assert_eq!(
        not_tcp(&with_ext(50, &[0; 8])),
        (50, NotTcpReason::Extension)
    );
    assert_eq!(
        not_tcp(&with_ext(17, &[0; 8])),
        (17, NotTcpReason::Protocol)
    );
    assert_untouched(&with_ext(51, &[0; 24]), NotTcp);

    // Hop-by-hop after destination options is not allowed.
    let mut p = with_ext(60, &padn);
    p[40] = 0;
    let p = {
        let mut q = p[..48].to_vec();
        q.extend_from_slice(&[6, 0, 1, 4, 0, 0, 0, 0]);
        q.extend_from_slice(&p[48..]);
        q[5] += 8;
        q
    };
    assert_eq!(not_tcp(&p), (0, NotTcpReason::Extension));
}

#[test]
fn ipv6_extension_past_the_payload() {
    let mut p = with_ext(0, &[0, 0, 1, 4, 0, 0, 0, 0]);
    p[41] = 10; // 88 bytes claimed, 60 left
    assert_eq!(
        parse(&p),
        Err(Truncated {
            layer: Layer::Ipv6Ext,
            needed: 88,
            got: 60
        })
    );
    // A jumbogram's zero payload length leaves no room for hop-by-hop.
    p[4..6].fill(0);
    assert!(matches!(
        parse(&p),
        Err(Truncated {
            layer: Layer::Ipv6Ext,
            ..
        })
    ));
}
