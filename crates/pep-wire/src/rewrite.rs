//! In-place rewriting of TCP header fields in a forwarded packet, with the
//! checksum updated incrementally (RFC 1624) rather than recomputed.
//!
//! Each function validates the packet as far as it needs to (the IP layer,
//! the fixed TCP header and data offset; for timestamps, the options as
//! [`parse_ip_packet`](crate::parse_ip_packet) does) and changes nothing
//! when it returns an error. A packet whose checksum was wrong stays wrong
//! by the same amount, so the receiver still drops it.

use crate::checksum::{patch_field, TCP_CHECKSUM_OFFSET};
use crate::error::WireError;
use crate::ip::parse_ip;
use crate::options::{kind, OptionIter, TcpOptions, TimestampOption};
use crate::tcp::{split_segment, TcpRepr};

/// The TCP segment of `packet` (header and payload, up to the IP length),
/// and its header length, once both layers validate.
fn segment_mut(packet: &mut [u8]) -> Result<(&mut [u8], usize), WireError> {
    let ip = parse_ip(packet)?;
    if ip.not_tcp.is_some() {
        return Err(WireError::NotTcp);
    }
    let segment = &mut packet[ip.header_len..ip.packet_len];
    let header_len = split_segment(segment)?.0.slice().len();
    Ok((segment, header_len))
}

fn rewrite(packet: &mut [u8], off: usize, new: &[u8]) -> Result<(), WireError> {
    let (segment, _) = segment_mut(packet)?;
    patch_field(segment, TCP_CHECKSUM_OFFSET, off, new);
    Ok(())
}

/// Sets the sequence number.
pub fn rewrite_tcp_seq(packet: &mut [u8], seq: u32) -> Result<(), WireError> {
    rewrite(packet, 4, &seq.to_be_bytes())
}

/// Sets the acknowledgment number (the ACK flag is left as it is).
pub fn rewrite_tcp_ack(packet: &mut [u8], ack: u32) -> Result<(), WireError> {
    rewrite(packet, 8, &ack.to_be_bytes())
}

/// Sets the flags byte (CWR to FIN); the data offset beside it is kept.
pub fn rewrite_tcp_flags(packet: &mut [u8], flags: u8) -> Result<(), WireError> {
    let (segment, _) = segment_mut(packet)?;
    let data_offset = segment[12];
    patch_field(segment, TCP_CHECKSUM_OFFSET, 12, &[data_offset, flags]);
    Ok(())
}

/// Sets the raw (unscaled) window field.
pub fn rewrite_tcp_window(packet: &mut [u8], window: u16) -> Result<(), WireError> {
    rewrite(packet, 14, &window.to_be_bytes())
}

/// Sets TSval and TSecr of the timestamps option. Returns `Ok(false)`,
/// changing nothing, when the segment carries no timestamps option. If the
/// option appears more than once, the last one (the one parsing reports) is
/// rewritten.
pub fn rewrite_tcp_timestamps(packet: &mut [u8], ts: TimestampOption) -> Result<bool, WireError> {
    let (segment, header_len) = segment_mut(packet)?;
    let options = &segment[TcpRepr::MIN_HEADER_LEN..header_len];
    // Validate as parse does; after this the walk below cannot fail.
    if TcpOptions::parse(options)?.timestamps.is_none() {
        return Ok(false);
    }
    let found = OptionIter::new(options)
        .filter_map(Result::ok)
        .filter(|o| o.kind == kind::TIMESTAMPS)
        .last()
        .map(|o| o.offset);
    let Some(offset) = found else {
        return Ok(false);
    };
    let mut new = [0u8; 8];
    new[..4].copy_from_slice(&ts.val.to_be_bytes());
    new[4..].copy_from_slice(&ts.ecr.to_be_bytes());
    // Kind and length bytes come first; the option may start at any offset.
    let off = TcpRepr::MIN_HEADER_LEN + offset + 2;
    patch_field(segment, TCP_CHECKSUM_OFFSET, off, &new);
    Ok(true)
}

/// Replaces the blocks of the SACK option in place, keeping the header
/// length: the option keeps its size, so at most as many blocks as it
/// already holds are written (the first ones of `blocks`, the most recent
/// by RFC 2018) and the bytes left over become NOPs; with no block to
/// write, the whole option becomes NOPs. Returns `Ok(false)`, changing
/// nothing, when the segment carries no SACK option. If the option appears
/// more than once, the last one (the one parsing reports) is rewritten.
pub fn rewrite_tcp_sack(packet: &mut [u8], blocks: &[(u32, u32)]) -> Result<bool, WireError> {
    let (segment, header_len) = segment_mut(packet)?;
    let options = &segment[TcpRepr::MIN_HEADER_LEN..header_len];
    if TcpOptions::parse(options)?.sack.is_empty() {
        return Ok(false);
    }
    let found = OptionIter::new(options)
        .filter_map(Result::ok)
        .filter(|o| o.kind == kind::SACK)
        .last()
        .map(|o| (o.offset, o.data.len() / 8));
    let Some((offset, room)) = found else {
        return Ok(false);
    };
    let mut new = [kind::NOP; 2 + 8 * crate::options::MAX_SACK_BLOCKS];
    let new = &mut new[..2 + 8 * room];
    let n = blocks.len().min(room);
    if n > 0 {
        new[0] = kind::SACK;
        new[1] = (2 + 8 * n) as u8;
        for (i, &(l, r)) in blocks[..n].iter().enumerate() {
            new[2 + 8 * i..6 + 8 * i].copy_from_slice(&l.to_be_bytes());
            new[6 + 8 * i..10 + 8 * i].copy_from_slice(&r.to_be_bytes());
        }
    }
    let off = TcpRepr::MIN_HEADER_LEN + offset;
    patch_field(segment, TCP_CHECKSUM_OFFSET, off, new);
    Ok(true)
}
