//! The one error type of the wire layer.
//!
//! Every variant says which layer was wrong and how, so a daemon can count
//! malformed traffic by reason and a test can assert on the exact failure.

use std::fmt;

/// The protocol layer an error refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layer {
    Ethernet,
    /// The first byte of an IP packet, before the version is known.
    Ip,
    Ipv4,
    Ipv6,
    /// An IPv6 extension header (hop-by-hop, routing, destination options,
    /// fragment).
    Ipv6Ext,
    Tcp,
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layer::Ethernet => "Ethernet",
            Layer::Ip => "IP",
            Layer::Ipv4 => "IPv4",
            Layer::Ipv6 => "IPv6",
            Layer::Ipv6Ext => "IPv6 extension header",
            Layer::Tcp => "TCP",
        })
    }
}

/// What was wrong with a packet, or why it could not be emitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum WireError {
    /// The bytes the enclosing layer gives `layer` (the buffer for IP, the
    /// IP payload for what follows) are fewer than `layer` needs.
    #[error("{layer} truncated: need {needed} bytes, have {got}")]
    Truncated {
        layer: Layer,
        needed: usize,
        got: usize,
    },
    /// The IP version nibble is neither 4 nor 6.
    #[error("unsupported IP version {0}")]
    UnsupportedVersion(u8),
    /// IPv4 IHL below 5 words.
    #[error("IPv4 IHL {0} is below the minimum of 5")]
    BadIhl(u8),
    /// IPv4 total length smaller than the header it describes.
    #[error("IPv4 total length {total_len} is smaller than the {header_len}-byte header")]
    BadTotalLength { total_len: u16, header_len: usize },
    /// TCP data offset below 5 words, or past the end of the segment.
    #[error("TCP data offset {data_offset} does not fit a {segment_len}-byte segment")]
    BadDataOffset { data_offset: u8, segment_len: usize },
    /// A TCP option length byte below 2, or wrong for a known option kind.
    #[error("TCP option kind {kind} has invalid length {len}")]
    BadOptionLength { kind: u8, len: u8 },
    /// A TCP option (its length byte, or the bytes it claims) runs past the
    /// end of the TCP header.
    #[error("TCP option kind {kind} runs past the end of the header")]
    OptionOverrun { kind: u8 },
    /// A checksum does not verify. `found` is the field, `expected` what a
    /// full computation gives.
    #[error("bad {layer} checksum: found {found:#06x}, expected {expected:#06x}")]
    BadChecksum {
        layer: Layer,
        found: u16,
        expected: u16,
    },
    /// The packet is valid IP but carries no TCP segment we may touch
    /// (another protocol, a fragment, an extension header we do not walk).
    /// Returned by the in-place rewrite and checksum functions.
    #[error("not a TCP packet this layer can rewrite")]
    NotTcp,
    /// Emit: the caller's buffer is too small.
    #[error("buffer too small: need {needed} bytes, have {got}")]
    BufferTooSmall { needed: usize, got: usize },
    /// Emit: the options need more than the 40 bytes a TCP header allows.
    #[error("TCP options need {0} bytes; at most 40 fit")]
    OptionsTooLong(usize),
    /// Emit: the payload slice disagrees with `TcpRepr::payload_len`.
    #[error("payload is {actual} bytes but the TCP repr says {declared}")]
    PayloadLenMismatch { declared: usize, actual: usize },
    /// Emit: the packet would not fit the IP length field.
    #[error("packet of {0} bytes does not fit the IP length field")]
    TooLong(usize),
}
