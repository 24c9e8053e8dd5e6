//! Whole IP packets: parse into representations, emit from them.

use crate::checksum::{tcp_checksum, TCP_CHECKSUM_OFFSET};
use crate::error::WireError;
use crate::ip::{emit_ip_header, max_tcp_len, parse_ip, IpRepr, NotTcpReason};
use crate::tcp::TcpRepr;

/// A parsed TCP/IP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpPacket<'a> {
    pub ip: IpRepr,
    pub tcp: TcpRepr,
    /// The payload, bounded by the IP length (Ethernet padding excluded).
    pub payload: &'a [u8],
    /// IP header bytes on the wire, IPv4 options and IPv6 extension headers
    /// included.
    pub ip_header_len: usize,
    /// TCP header bytes on the wire, options included.
    pub tcp_header_len: usize,
}

impl TcpPacket<'_> {
    /// IP plus TCP header bytes: what a link carries besides the payload.
    pub fn header_len(&self) -> usize {
        self.ip_header_len + self.tcp_header_len
    }
}

/// A well-formed IP packet that this layer does not treat as TCP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotTcp {
    pub ip: IpRepr,
    /// The protocol number (IPv4) or next-header value (IPv6) at which the
    /// parse stopped.
    pub protocol: u8,
    pub reason: NotTcpReason,
}

/// Outcome of [`parse_ip_packet`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parsed<'a> {
    Tcp(TcpPacket<'a>),
    /// Pass it on untouched.
    NotTcp(NotTcp),
}

impl Parsed<'_> {
    /// The IP header, whichever the verdict.
    pub fn ip(&self) -> &IpRepr {
        match self {
            Parsed::Tcp(p) => &p.ip,
            Parsed::NotTcp(n) => &n.ip,
        }
    }
}

/// Parses an IPv4 or IPv6 packet starting at its first byte. Bytes past the
/// IP length are ignored. Checksums are not verified: see
/// [`verify_checksums`](crate::verify_checksums).
pub fn parse_ip_packet(packet: &[u8]) -> Result<Parsed<'_>, WireError> {
    let ip = parse_ip(packet)?;
    if let Some(reason) = ip.not_tcp {
        return Ok(Parsed::NotTcp(NotTcp {
            ip: ip.repr,
            protocol: ip.protocol,
            reason,
        }));
    }
    let segment = &packet[ip.header_len..ip.packet_len];
    let tcp = TcpRepr::parse(segment)?;
    let tcp_header_len = segment.len() - tcp.payload_len;
    Ok(Parsed::Tcp(TcpPacket {
        ip: ip.repr,
        tcp,
        payload: &segment[tcp_header_len..],
        ip_header_len: ip.header_len,
        tcp_header_len,
    }))
}

/// Bytes [`emit_packet`] writes for these headers and `tcp.payload_len`.
pub fn packet_len(ip: &IpRepr, tcp: &TcpRepr) -> usize {
    ip.header_len() + tcp.header_len() + tcp.payload_len
}

/// Writes a complete IP/TCP packet (lengths and checksums filled in) into
/// the front of `buf`; returns its length. `payload.len()` must equal
/// `tcp.payload_len`.
pub fn emit_packet(
    ip: &IpRepr,
    tcp: &TcpRepr,
    payload: &[u8],
    buf: &mut [u8],
) -> Result<usize, WireError> {
    if payload.len() != tcp.payload_len {
        return Err(WireError::PayloadLenMismatch {
            declared: tcp.payload_len,
            actual: payload.len(),
        });
    }
    emit(ip, tcp, Some(payload), buf)
}

/// [`emit_packet`] into a new `Vec`.
pub fn emit_packet_vec(ip: &IpRepr, tcp: &TcpRepr, payload: &[u8]) -> Result<Vec<u8>, WireError> {
    let mut v = vec![0; packet_len(ip, tcp)];
    let n = emit_packet(ip, tcp, payload, &mut v)?;
    v.truncate(n);
    Ok(v)
}

/// Writes only the IP and TCP headers of a packet whose payload is
/// `tcp.payload_len` zero bytes: lengths describe the whole packet, and the
/// checksum is right for the zero payload (zeros add nothing to the sum).
/// For the simulator's captures, whose segments have lengths but no bytes:
/// record these headers with the full packet length as the original length.
pub fn emit_headers(ip: &IpRepr, tcp: &TcpRepr, buf: &mut [u8]) -> Result<usize, WireError> {
    emit(ip, tcp, None, buf)
}

fn emit(
    ip: &IpRepr,
    tcp: &TcpRepr,
    payload: Option<&[u8]>,
    buf: &mut [u8],
) -> Result<usize, WireError> {
    let opt_len = tcp.options.wire_len();
    if opt_len > crate::options::MAX_OPTIONS_LEN {
        return Err(WireError::OptionsTooLong(opt_len));
    }
    let tcp_len = tcp.header_len() + tcp.payload_len;
    if tcp_len > max_tcp_len(ip) {
        return Err(WireError::TooLong(ip.header_len() + tcp_len));
    }
    let ip_len = ip.header_len();
    let written = ip_len + tcp.header_len() + payload.map_or(0, <[u8]>::len);
    let Some(buf) = buf.get_mut(..written) else {
        return Err(WireError::BufferTooSmall {
            needed: written,
            got: buf.len(),
        });
    };
    emit_ip_header(ip, tcp_len, buf);
    let (header, rest) = buf[ip_len..].split_at_mut(tcp.header_len());
    tcp.emit_header(header)?;
    let payload = payload.unwrap_or(&[]);
    rest.copy_from_slice(payload);
    let zeros = tcp.payload_len - payload.len();
    let c = tcp_checksum(ip, header, payload, zeros);
    header[TCP_CHECKSUM_OFFSET..TCP_CHECKSUM_OFFSET + 2].copy_from_slice(&c.to_be_bytes());
    Ok(written)
}
