//! The TCP header (RFC 9293 section 3.1): parsed representation, parsing
//! (validated with etherparse's slice) and emission.

use etherparse::err::tcp::{HeaderError, HeaderSliceError};
use etherparse::TcpHeaderSlice;

use crate::error::{Layer, WireError};
use crate::options::TcpOptions;

/// TCP flag bits as they sit in byte 13 of the header.
pub mod flags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
    pub const URG: u8 = 0x20;
    pub const ECE: u8 = 0x40;
    pub const CWR: u8 = 0x80;
}

/// A parsed TCP header, plus the length of the payload behind it.
///
/// Numbers are raw: `seq` and `ack` are not relative, `window` is not
/// scaled. The reserved bits of byte 12 (including AccECN's AE) are ignored
/// on parse and emitted as zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TcpRepr {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    /// See [`flags`].
    pub flags: u8,
    pub window: u16,
    pub urgent: u16,
    pub options: TcpOptions,
    /// Payload bytes after the header.
    pub payload_len: usize,
}

impl TcpRepr {
    pub const MIN_HEADER_LEN: usize = 20;

    /// Header length with options as [`TcpOptions::emit`] lays them out.
    pub fn header_len(&self) -> usize {
        Self::MIN_HEADER_LEN + self.options.wire_len()
    }

    /// Whether all bits of `f` are set.
    pub fn has(&self, f: u8) -> bool {
        self.flags & f == f
    }

    /// Sequence space the segment consumes: payload, plus one each for SYN
    /// and FIN.
    pub fn seq_len(&self) -> usize {
        self.payload_len + usize::from(self.has(flags::SYN)) + usize::from(self.has(flags::FIN))
    }

    /// Parses a TCP segment (header and payload, as bounded by the IP
    /// length). Does not look at the checksum.
    pub fn parse(segment: &[u8]) -> Result<TcpRepr, WireError> {
        let (h, payload) = split_segment(segment)?;
        Ok(TcpRepr {
            src_port: h.source_port(),
            dst_port: h.destination_port(),
            seq: h.sequence_number(),
            ack: h.acknowledgment_number(),
            flags: h.slice()[13],
            window: h.window_size(),
            urgent: h.urgent_pointer(),
            options: TcpOptions::parse(h.options())?,
            payload_len: payload.len(),
        })
    }

    /// Writes the header with a zero checksum; returns its length. The
    /// caller has sized `buf` by [`header_len`](Self::header_len).
    pub(crate) fn emit_header(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let opt_len = self.options.emit(&mut buf[Self::MIN_HEADER_LEN..])?;
        let len = Self::MIN_HEADER_LEN + opt_len;
        let h = &mut buf[..Self::MIN_HEADER_LEN];
        h[0..2].copy_from_slice(&self.src_port.to_be_bytes());
        h[2..4].copy_from_slice(&self.dst_port.to_be_bytes());
        h[4..8].copy_from_slice(&self.seq.to_be_bytes());
        h[8..12].copy_from_slice(&self.ack.to_be_bytes());
        h[12] = ((len / 4) as u8) << 4;
        h[13] = self.flags;
        h[14..16].copy_from_slice(&self.window.to_be_bytes());
        h[16..18].fill(0);
        h[18..20].copy_from_slice(&self.urgent.to_be_bytes());
        Ok(len)
    }
}

fn bad_offset(segment: &[u8]) -> WireError {
    WireError::BadDataOffset {
        data_offset: segment.get(12).map_or(0, |b| b >> 4),
        segment_len: segment.len(),
    }
}

/// Splits a TCP segment into header (options included) and payload,
/// checking the fixed header is present and the data offset fits.
pub(crate) fn split_segment(segment: &[u8]) -> Result<(TcpHeaderSlice<'_>, &[u8]), WireError> {
    match TcpHeaderSlice::from_slice(segment) {
        Ok(h) => {
            let payload = &segment[h.slice().len()..];
            Ok((h, payload))
        }
        Err(HeaderSliceError::Len(_)) if segment.len() < TcpRepr::MIN_HEADER_LEN => {
            Err(WireError::Truncated {
                layer: Layer::Tcp,
                needed: TcpRepr::MIN_HEADER_LEN,
                got: segment.len(),
            })
        }
        // The data offset points past the segment, or below 5 words.
        Err(HeaderSliceError::Len(_))
        | Err(HeaderSliceError::Content(HeaderError::DataOffsetTooSmall { .. })) => {
            Err(bad_offset(segment))
        }
    }
}
