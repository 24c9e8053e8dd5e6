//! IPv4 and IPv6: parsed representations, header parsing (validated with
//! etherparse's slices) and emission of option-less headers.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use etherparse::err::{ipv4, ipv6, LenError};
use etherparse::{
    Ipv4HeaderSlice, Ipv6FragmentHeaderSlice, Ipv6HeaderSlice, Ipv6RawExtHeaderSlice,
};

use crate::error::{Layer, WireError};

/// IP protocol number of TCP.
pub const PROTO_TCP: u8 = 6;

// IPv6 next-header values this layer walks through (RFC 8200 section 4).
const HOP_BY_HOP: u8 = 0;
const ROUTING: u8 = 43;
const FRAGMENT: u8 = 44;
const DEST_OPTIONS: u8 = 60;
// Extension headers it stops at (IANA "IPv6 Extension Header Types").
const ESP: u8 = 50;
const AH: u8 = 51;
const MOBILITY: u8 = 135;
const HIP: u8 = 139;
const SHIM6: u8 = 140;

/// The IPv4 header fields pepkit reads and writes. Options are skipped on
/// parse (via IHL) and never emitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ipv4Repr {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub ttl: u8,
    /// DSCP (high 6 bits) and ECN (low 2 bits).
    pub tos: u8,
    pub ident: u16,
    pub dont_frag: bool,
}

impl Ipv4Repr {
    pub const HEADER_LEN: usize = 20;

    /// TTL 64 and DF set, as Linux sends TCP.
    pub fn new(src: Ipv4Addr, dst: Ipv4Addr) -> Self {
        Ipv4Repr {
            src,
            dst,
            ttl: 64,
            tos: 0,
            ident: 0,
            dont_frag: true,
        }
    }
}

/// The fixed IPv6 header fields pepkit reads and writes. Extension headers
/// are walked on parse and never emitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ipv6Repr {
    pub src: Ipv6Addr,
    pub dst: Ipv6Addr,
    pub hop_limit: u8,
    /// DSCP (high 6 bits) and ECN (low 2 bits).
    pub traffic_class: u8,
    /// 20 bits; emit keeps only the low 20.
    pub flow_label: u32,
}

impl Ipv6Repr {
    pub const HEADER_LEN: usize = 40;

    pub fn new(src: Ipv6Addr, dst: Ipv6Addr) -> Self {
        Ipv6Repr {
            src,
            dst,
            hop_limit: 64,
            traffic_class: 0,
            flow_label: 0,
        }
    }
}

/// An IP header of either version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IpRepr {
    V4(Ipv4Repr),
    V6(Ipv6Repr),
}

impl IpRepr {
    pub fn src(&self) -> IpAddr {
        match self {
            IpRepr::V4(r) => r.src.into(),
            IpRepr::V6(r) => r.src.into(),
        }
    }
    pub fn dst(&self) -> IpAddr {
        match self {
            IpRepr::V4(r) => r.dst.into(),
            IpRepr::V6(r) => r.dst.into(),
        }
    }
    /// TTL or hop limit.
    pub fn hop_limit(&self) -> u8 {
        match self {
            IpRepr::V4(r) => r.ttl,
            IpRepr::V6(r) => r.hop_limit,
        }
    }
    /// The ECN codepoint (RFC 3168): 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE.
    pub fn ecn(&self) -> u8 {
        match self {
            IpRepr::V4(r) => r.tos & 3,
            IpRepr::V6(r) => r.traffic_class & 3,
        }
    }
    /// Length of the header [`emit`](crate::emit_packet) writes: 20 or 40.
    pub fn header_len(&self) -> usize {
        match self {
            IpRepr::V4(_) => Ipv4Repr::HEADER_LEN,
            IpRepr::V6(_) => Ipv6Repr::HEADER_LEN,
        }
    }
}

impl From<Ipv4Repr> for IpRepr {
    fn from(r: Ipv4Repr) -> Self {
        IpRepr::V4(r)
    }
}

impl From<Ipv6Repr> for IpRepr {
    fn from(r: Ipv6Repr) -> Self {
        IpRepr::V6(r)
    }
}

/// Why a well-formed IP packet is reported as not TCP. Such packets are
/// meant to be forwarded untouched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NotTcpReason {
    /// The upper-layer protocol is not TCP.
    Protocol,
    /// An IPv4 or IPv6 fragment (other than an IPv6 atomic fragment): its
    /// TCP header is absent or its checksum covers bytes we do not have.
    Fragment,
    /// An IPv6 extension header this layer does not walk: AH and ESP
    /// (rewriting would break their integrity check, or cannot see TCP),
    /// Mobility, HIP, Shim6, or hop-by-hop options not first.
    Extension,
    /// An IPv6 routing header with segments left: the TCP pseudo-header
    /// uses the final destination, which is inside the routing header.
    SourceRoute,
}

/// The IP layer of a packet, located and validated.
pub(crate) struct IpLayer {
    pub repr: IpRepr,
    /// Bytes before the upper-layer header: IPv4 options and IPv6 extension
    /// headers included.
    pub header_len: usize,
    /// Length the IP header declares; at most the buffer's (trailing bytes,
    /// such as Ethernet padding, are not part of the packet).
    pub packet_len: usize,
    /// Protocol number of what follows `header_len`.
    pub protocol: u8,
    /// `None` when a TCP segment follows `header_len`.
    pub not_tcp: Option<NotTcpReason>,
}

fn truncated(layer: Layer, e: LenError) -> WireError {
    WireError::Truncated {
        layer,
        needed: e.required_len,
        got: e.len,
    }
}

/// Parses and validates the IP layer of `buf`.
pub(crate) fn parse_ip(buf: &[u8]) -> Result<IpLayer, WireError> {
    match buf.first().map(|b| b >> 4) {
        None => Err(WireError::Truncated {
            layer: Layer::Ip,
            needed: 1,
            got: 0,
        }),
        Some(4) => parse_ipv4(buf),
        Some(6) => parse_ipv6(buf),
        Some(v) => Err(WireError::UnsupportedVersion(v)),
    }
}

fn parse_ipv4(buf: &[u8]) -> Result<IpLayer, WireError> {
    let h = Ipv4HeaderSlice::from_slice(buf).map_err(|e| match e {
        ipv4::HeaderSliceError::Len(e) => truncated(Layer::Ipv4, e),
        ipv4::HeaderSliceError::Content(ipv4::HeaderError::HeaderLengthSmallerThanHeader {
            ihl,
        }) => WireError::BadIhl(ihl),
        ipv4::HeaderSliceError::Content(ipv4::HeaderError::UnexpectedVersion {
            version_number,
        }) => WireError::UnsupportedVersion(version_number),
    })?;
    let header_len = h.slice().len();
    let total_len = h.total_len();
    if usize::from(total_len) < header_len {
        return Err(WireError::BadTotalLength {
            total_len,
            header_len,
        });
    }
    if usize::from(total_len) > buf.len() {
        return Err(WireError::Truncated {
            layer: Layer::Ipv4,
            needed: total_len.into(),
            got: buf.len(),
        });
    }
    let protocol = h.protocol().0;
    let not_tcp = if h.is_fragmenting_payload() {
        Some(NotTcpReason::Fragment)
    } else if protocol != PROTO_TCP {
        Some(NotTcpReason::Protocol)
    } else {
        None
    };
    Ok(IpLayer {
        repr: IpRepr::V4(Ipv4Repr {
            src: h.source_addr(),
            dst: h.destination_addr(),
            ttl: h.ttl(),
            tos: h.slice()[1],
            ident: h.identification(),
            dont_frag: h.dont_fragment(),
        }),
        header_len,
        packet_len: total_len.into(),
        protocol,
        not_tcp,
    })
}

fn parse_ipv6(buf: &[u8]) -> Result<IpLayer, WireError> {
    let h = Ipv6HeaderSlice::from_slice(buf).map_err(|e| match e {
        ipv6::HeaderSliceError::Len(e) => truncated(Layer::Ipv6, e),
        ipv6::HeaderSliceError::Content(ipv6::HeaderError::UnexpectedVersion {
            version_number,
        }) => WireError::UnsupportedVersion(version_number),
    })?;
    // A zero payload length with hop-by-hop options would be a jumbogram
    // (RFC 2675); unsupported, it fails below as a truncated extension.
    let packet_len = Ipv6Repr::HEADER_LEN + usize::from(h.payload_length());
    if packet_len > buf.len() {
        return Err(WireError::Truncated {
            layer: Layer::Ipv6,
            needed: packet_len,
            got: buf.len(),
        });
    }
    let (header_len, protocol, not_tcp) = walk_extensions(h.next_header().0, buf, packet_len)?;
    Ok(IpLayer {
        repr: IpRepr::V6(Ipv6Repr {
            src: h.source_addr(),
            dst: h.destination_addr(),
            hop_limit: h.hop_limit(),
            traffic_class: h.traffic_class(),
            flow_label: h.flow_label().value(),
        }),
        header_len,
        packet_len,
        protocol,
        not_tcp,
    })
}

/// Walks IPv6 extension headers from offset 40 to the upper-layer header.
/// Returns its offset, its protocol number and, if we must not treat it as
/// TCP, why. Each header is at least 8 bytes, so the walk ends.
fn walk_extensions(
    mut next: u8,
    buf: &[u8],
    packet_len: usize,
) -> Result<(usize, u8, Option<NotTcpReason>), WireError> {
    let mut off = Ipv6Repr::HEADER_LEN;
    loop {
        let rest = &buf[off..packet_len];
        let len = match next {
            PROTO_TCP => return Ok((off, next, None)),
            // RFC 8200 section 4.1: hop-by-hop options only right after the
            // fixed header.
            HOP_BY_HOP if off != Ipv6Repr::HEADER_LEN => {
                return Ok((off, next, Some(NotTcpReason::Extension)))
            }
            HOP_BY_HOP | DEST_OPTIONS => {
                let ext = raw_ext(rest)?;
                next = ext.next_header().0;
                ext.slice().len()
            }
            ROUTING => {
                let ext = raw_ext(rest)?;
                // Segments left, the fourth byte of every routing header.
                if ext.slice()[3] != 0 {
                    return Ok((off, next, Some(NotTcpReason::SourceRoute)));
                }
                next = ext.next_header().0;
                ext.slice().len()
            }
            FRAGMENT => {
                let frag = Ipv6FragmentHeaderSlice::from_slice(rest)
                    .map_err(|e| truncated(Layer::Ipv6Ext, e))?;
                // An atomic fragment (offset 0, no more fragments; RFC 6946)
                // holds the whole segment.
                if frag.is_fragmenting_payload() {
                    return Ok((off, next, Some(NotTcpReason::Fragment)));
                }
                next = frag.next_header().0;
                frag.slice().len()
            }
            ESP | AH | MOBILITY | HIP | SHIM6 => {
                return Ok((off, next, Some(NotTcpReason::Extension)))
            }
            _ => return Ok((off, next, Some(NotTcpReason::Protocol))),
        };
        off += len;
    }
}

fn raw_ext(rest: &[u8]) -> Result<Ipv6RawExtHeaderSlice<'_>, WireError> {
    Ipv6RawExtHeaderSlice::from_slice(rest).map_err(|e| truncated(Layer::Ipv6Ext, e))
}

/// Writes an option-less IP header for a TCP segment of `tcp_len` bytes.
/// The caller has checked that `buf` holds `repr.header_len()` bytes and that
/// the length fits; the IPv4 header checksum is filled in.
pub(crate) fn emit_ip_header(repr: &IpRepr, tcp_len: usize, buf: &mut [u8]) {
    match repr {
        IpRepr::V4(r) => {
            let total = (Ipv4Repr::HEADER_LEN + tcp_len) as u16;
            let h = &mut buf[..Ipv4Repr::HEADER_LEN];
            h[0] = 0x45;
            h[1] = r.tos;
            h[2..4].copy_from_slice(&total.to_be_bytes());
            h[4..6].copy_from_slice(&r.ident.to_be_bytes());
            h[6] = if r.dont_frag { 0x40 } else { 0 };
            h[7] = 0;
            h[8] = r.ttl;
            h[9] = PROTO_TCP;
            h[10..12].fill(0);
            h[12..16].copy_from_slice(&r.src.octets());
            h[16..20].copy_from_slice(&r.dst.octets());
            let c = crate::checksum::ipv4_header_checksum(h);
            h[10..12].copy_from_slice(&c.to_be_bytes());
        }
        IpRepr::V6(r) => {
            let first =
                (6u32 << 28) | (u32::from(r.traffic_class) << 20) | (r.flow_label & 0x000f_ffff);
            let h = &mut buf[..Ipv6Repr::HEADER_LEN];
            h[0..4].copy_from_slice(&first.to_be_bytes());
            h[4..6].copy_from_slice(&(tcp_len as u16).to_be_bytes());
            h[6] = PROTO_TCP;
            h[7] = r.hop_limit;
            h[8..24].copy_from_slice(&r.src.octets());
            h[24..40].copy_from_slice(&r.dst.octets());
        }
    }
}

/// Largest TCP segment (header and payload) an IP header of this kind can
/// describe.
pub(crate) fn max_tcp_len(repr: &IpRepr) -> usize {
    match repr {
        IpRepr::V4(_) => usize::from(u16::MAX) - Ipv4Repr::HEADER_LEN,
        IpRepr::V6(_) => usize::from(u16::MAX),
    }
}
