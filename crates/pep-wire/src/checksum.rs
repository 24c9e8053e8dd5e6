//! Internet checksums: full computation (RFC 1071, through etherparse's
//! summer), verification, and incremental update (RFC 1624).
//!
//! A PEP rewrites a few header fields of packets it forwards (the ACK
//! number, the window, timestamps). Recomputing the TCP checksum would touch
//! every payload byte; RFC 1624 updates it from the old and new field values
//! alone, and leaves a checksum that was wrong before exactly as wrong after,
//! so the receiver still discards a corrupted segment.

use etherparse::checksum::Sum16BitWords;

use crate::error::{Layer, WireError};
use crate::ip::{parse_ip, IpRepr};

/// Offset of the checksum field inside the TCP header.
pub(crate) const TCP_CHECKSUM_OFFSET: usize = 16;

/// Folds a sum of 16-bit words to 16 bits with end-around carry.
fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Sum of big-endian 16-bit words; an odd trailing byte is padded with zero,
/// as in the checksum itself. Callers pass at most a TCP header's worth of
/// bytes, far from overflowing a `u32`.
fn sum_be(bytes: &[u8]) -> u32 {
    bytes
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)])))
        .sum()
}

/// New checksum after one 16-bit word of the covered data changes from `old`
/// to `new`: RFC 1624 eqn. 3, `HC' = ~(~HC + ~m + m')`.
///
/// Eqn. 3 rather than RFC 1141's `HC' = HC + m - m'`: the latter can give
/// 0xFFFF (-0) where a full computation gives 0x0000 (RFC 1624 section 4).
/// With eqn. 3 the result equals a full recomputation whenever `hc` did.
pub fn update16(hc: u16, old: u16, new: u16) -> u16 {
    !fold(u32::from(!hc) + u32::from(!old) + u32::from(new))
}

/// [`update16`] for a 32-bit field aligned on a 16-bit boundary (sequence
/// and acknowledgment numbers): both halves at once.
pub fn update32(hc: u16, old: u32, new: u32) -> u16 {
    let (old_hi, old_lo) = ((old >> 16) as u16, old as u16);
    let (new_hi, new_lo) = ((new >> 16) as u16, new as u16);
    !fold(
        u32::from(!hc)
            + u32::from(!old_hi)
            + u32::from(!old_lo)
            + u32::from(new_hi)
            + u32::from(new_lo),
    )
}

/// Overwrites `area[off..off + new.len()]` with `new` and updates the
/// checksum stored big-endian at `area[csum_off..csum_off + 2]`, where
/// `area` starts at the first byte the checksum covers (so word parity is
/// relative to it).
///
/// The field may sit at an odd offset (a timestamp option after one NOP), so
/// the update runs over the 16-bit words that cover it rather than over the
/// field itself. Callers guarantee the bounds and that those words do not
/// include the checksum field.
pub(crate) fn patch_field(area: &mut [u8], csum_off: usize, off: usize, new: &[u8]) {
    let start = off & !1;
    let end = ((off + new.len() + 1) & !1).min(area.len());
    let old_sum = fold(sum_be(&area[start..end]));
    area[off..off + new.len()].copy_from_slice(new);
    let new_sum = fold(sum_be(&area[start..end]));
    let hc = u16::from_be_bytes([area[csum_off], area[csum_off + 1]]);
    let hc = update16(hc, old_sum, new_sum);
    area[csum_off..csum_off + 2].copy_from_slice(&hc.to_be_bytes());
}

/// Sum of the TCP pseudo-header (RFC 9293 section 3.1; RFC 8200 section 8.1).
fn pseudo_header(ip: &IpRepr, tcp_len: usize) -> Sum16BitWords {
    match ip {
        IpRepr::V4(r) => Sum16BitWords::new()
            .add_4bytes(r.src.octets())
            .add_4bytes(r.dst.octets())
            .add_2bytes([0, crate::ip::PROTO_TCP])
            // Callers bound `tcp_len` by the 16-bit IPv4 length field.
            .add_2bytes((tcp_len as u16).to_be_bytes()),
        IpRepr::V6(r) => Sum16BitWords::new()
            .add_16bytes(r.src.octets())
            .add_16bytes(r.dst.octets())
            .add_4bytes((tcp_len as u32).to_be_bytes())
            .add_4bytes([0, 0, 0, crate::ip::PROTO_TCP]),
    }
}

/// The TCP checksum for a segment made of `header` (at least 20 bytes; its
/// checksum field is ignored) followed by `payload` and then `zeros` zero
/// bytes, which add nothing to the sum but count in the pseudo-header
/// length. `header` has an even length, so the parts share word alignment.
pub(crate) fn tcp_checksum(ip: &IpRepr, header: &[u8], payload: &[u8], zeros: usize) -> u16 {
    pseudo_header(ip, header.len() + payload.len() + zeros)
        .add_slice(&header[..TCP_CHECKSUM_OFFSET])
        .add_slice(&header[TCP_CHECKSUM_OFFSET + 2..])
        .add_slice(payload)
        .ones_complement()
        .to_be()
}

/// The IPv4 header checksum for `header` (options included), ignoring the
/// checksum field itself.
pub(crate) fn ipv4_header_checksum(header: &[u8]) -> u16 {
    Sum16BitWords::new()
        .add_slice(&header[..10])
        .add_slice(&header[12..])
        .ones_complement()
        .to_be()
}

/// Whether a checksummed area (field included) sums to zero. Summing,
/// rather than comparing with a recomputation, accepts both encodings of
/// zero (0x0000 and 0xFFFF in the field), as receiving stacks do.
fn sums_to_zero(sum: Sum16BitWords) -> bool {
    sum.ones_complement() == 0
}

/// Verifies the IPv4 header checksum and, for a TCP packet, the TCP
/// checksum. Other IP packets are checked no further than the IPv4 header.
///
/// Separate from parsing so the daemon can choose to forward bad-checksum
/// packets untouched, as a router would.
pub fn verify_checksums(packet: &[u8]) -> Result<(), WireError> {
    let ip = parse_ip(packet)?;
    if let IpRepr::V4(_) = ip.repr {
        let header = &packet[..ip.header_len];
        if !sums_to_zero(Sum16BitWords::new().add_slice(header)) {
            return Err(WireError::BadChecksum {
                layer: Layer::Ipv4,
                found: u16::from_be_bytes([header[10], header[11]]),
                expected: ipv4_header_checksum(header),
            });
        }
    }
    if ip.not_tcp.is_some() {
        return Ok(());
    }
    let segment = &packet[ip.header_len..ip.packet_len];
    let (header, payload) = crate::tcp::split_segment(segment)?;
    let header = header.slice();
    if !sums_to_zero(pseudo_header(&ip.repr, segment.len()).add_slice(segment)) {
        return Err(WireError::BadChecksum {
            layer: Layer::Tcp,
            found: u16::from_be_bytes([header[16], header[17]]),
            expected: tcp_checksum(&ip.repr, header, payload, 0),
        });
    }
    Ok(())
}

/// Recomputes the IPv4 header checksum (if IPv4) and the TCP checksum from
/// scratch and stores them. For packets built or edited by hand; the
/// rewrite functions update checksums incrementally instead.
pub fn fill_checksums(packet: &mut [u8]) -> Result<(), WireError> {
    let ip = parse_ip(packet)?;
    if ip.not_tcp.is_some() {
        return Err(WireError::NotTcp);
    }
    let segment = &packet[ip.header_len..ip.packet_len];
    let (header, payload) = crate::tcp::split_segment(segment)?;
    let tcp = tcp_checksum(&ip.repr, header.slice(), payload, 0);
    if let IpRepr::V4(_) = ip.repr {
        let c = ipv4_header_checksum(&packet[..ip.header_len]);
        packet[10..12].copy_from_slice(&c.to_be_bytes());
    }
    let at = ip.header_len + TCP_CHECKSUM_OFFSET;
    packet[at..at + 2].copy_from_slice(&tcp.to_be_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// RFC 1624 section 4: eqn. 2 yields 0xFFFF here, eqn. 3 the correct 0x0000.
    #[test]
    fn rfc1624_minus_zero_example() {
        let others = 0xCD7Au32;
        let hc = !fold(others + 0x5555);
        assert_eq!(hc, 0xDD2F);
        assert_eq!(update16(hc, 0x5555, 0x3285), 0x0000);
        assert_eq!(!fold(others + 0x3285), 0x0000);
    }

    #[test]
    fn fold_carries_twice() {
        assert_eq!(fold(0x1_fffe), 0xffff);
        assert_eq!(fold(0xffff_ffff), 0xffff);
        assert_eq!(sum_be(&[0x01, 0x02, 0x03]), 0x0102 + 0x0300);
    }

    /// Reference checksum over words, the plain RFC 1071 way.
    fn reference(words: &[u16]) -> u16 {
        !fold(words.iter().map(|&w| u32::from(w)).sum())
    }

    proptest! {
        #[test]
        fn update_matches_recompute(
            mut words in prop::collection::vec(any::<u16>(), 1..64),
            idx in any::<prop::sample::Index>(),
            new in any::<u16>(),
        ) {
            // A non-zero constant word stands in for the pseudo-header, whose
            // protocol number keeps a real TCP sum from ever being zero.
            words.push(6);
            let i = idx.index(words.len() - 1);
            let hc = reference(&words);
            let old = words[i];
            words[i] = new;
            prop_assert_eq!(update16(hc, old, new), reference(&words));
        }

        #[test]
        fn update32_is_two_update16(hc in 0u16..0xffff, old: u32, new: u32) {
            let two = update16(update16(hc, (old >> 16) as u16, (new >> 16) as u16), old as u16, new as u16);
            prop_assert_eq!(update32(hc, old, new), two);
        }

        #[test]
        fn patch_at_any_parity(
            mut area in prop::collection::vec(any::<u8>(), 24..64),
            off in 2usize..20,
            new in prop::collection::vec(any::<u8>(), 1..5),
        ) {
            // Checksum at bytes 0..2, the field anywhere after it.
            area[0] = 0;
            area[1] = 0;
            area.push(6);
            area.push(0);
            let c = Sum16BitWords::new().add_slice(&area).ones_complement().to_be();
            area[..2].copy_from_slice(&c.to_be_bytes());
            patch_field(&mut area, 0, off, &new);
            prop_assert!(sums_to_zero(Sum16BitWords::new().add_slice(&area)));
            let stored = u16::from_be_bytes([area[0], area[1]]);
            area[0] = 0;
            area[1] = 0;
            prop_assert_eq!(stored, Sum16BitWords::new().add_slice(&area).ones_complement().to_be());
        }
    }
}
