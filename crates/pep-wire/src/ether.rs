//! Ethernet II framing, for pcap files and AF_PACKET sockets.
//!
//! No VLAN tags and no minimum-size padding: a capture shows frames as the
//! host sent them, and the NIC pads on transmit. Padding on received frames
//! is harmless, since IP parsing stops at the IP length.

use etherparse::Ethernet2HeaderSlice;

use crate::error::{Layer, WireError};

pub const ETHERTYPE_IPV4: u16 = 0x0800;
pub const ETHERTYPE_IPV6: u16 = 0x86dd;

/// A MAC address.
pub type MacAddr = [u8; 6];

/// An Ethernet II header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EthernetRepr {
    pub dst: MacAddr,
    pub src: MacAddr,
    pub ethertype: u16,
}

impl EthernetRepr {
    pub const HEADER_LEN: usize = 14;

    /// Parses the header; returns it with the payload that follows.
    pub fn parse(frame: &[u8]) -> Result<(EthernetRepr, &[u8]), WireError> {
        let h = Ethernet2HeaderSlice::from_slice(frame).map_err(|e| WireError::Truncated {
            layer: Layer::Ethernet,
            needed: e.required_len,
            got: e.len,
        })?;
        let repr = EthernetRepr {
            dst: h.destination(),
            src: h.source(),
            ethertype: h.ether_type().0,
        };
        Ok((repr, &frame[Self::HEADER_LEN..]))
    }

    /// Writes the header into the front of `buf`; returns 14.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let Some(h) = buf.get_mut(..Self::HEADER_LEN) else {
            return Err(WireError::BufferTooSmall {
                needed: Self::HEADER_LEN,
                got: buf.len(),
            });
        };
        h[0..6].copy_from_slice(&self.dst);
        h[6..12].copy_from_slice(&self.src);
        h[12..14].copy_from_slice(&self.ethertype.to_be_bytes());
        Ok(Self::HEADER_LEN)
    }
}

/// The EtherType for an IP packet, from its version nibble.
pub fn ethertype_of(ip_packet: &[u8]) -> Result<u16, WireError> {
    match ip_packet.first().map(|b| b >> 4) {
        Some(4) => Ok(ETHERTYPE_IPV4),
        Some(6) => Ok(ETHERTYPE_IPV6),
        Some(v) => Err(WireError::UnsupportedVersion(v)),
        None => Err(WireError::Truncated {
            layer: Layer::Ip,
            needed: 1,
            got: 0,
        }),
    }
}

/// An Ethernet II frame around an IP packet, EtherType from its version.
pub fn ethernet_frame(src: MacAddr, dst: MacAddr, ip_packet: &[u8]) -> Result<Vec<u8>, WireError> {
    let repr = EthernetRepr {
        dst,
        src,
        ethertype: ethertype_of(ip_packet)?,
    };
    let mut frame = vec![0; EthernetRepr::HEADER_LEN + ip_packet.len()];
    repr.emit(&mut frame)?;
    frame[EthernetRepr::HEADER_LEN..].copy_from_slice(ip_packet);
    Ok(frame)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_round_trip() {
        let ip = [0x45, 0, 0, 20];
        let f = ethernet_frame([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], &ip).unwrap();
        assert_eq!(&f[12..14], &[0x08, 0x00]);
        let (h, payload) = EthernetRepr::parse(&f).unwrap();
        assert_eq!(h.src, [2, 0, 0, 0, 0, 1]);
        assert_eq!(h.dst, [2, 0, 0, 0, 0, 2]);
        assert_eq!(payload, ip);
        assert!(matches!(
            EthernetRepr::parse(&f[..13]),
            Err(WireError::Truncated {
                layer: Layer::Ethernet,
                needed: 14,
                got: 13
            })
        ));
        assert_eq!(ethertype_of(&[0x60]), Ok(ETHERTYPE_IPV6));
        assert_eq!(ethertype_of(&[0x50]), Err(WireError::UnsupportedVersion(5)));
    }
}
