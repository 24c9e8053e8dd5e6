//! Frames as the core's link model sees them: a length on the wire and a
//! [`Segment`] for the loss models.
//!
//! The link counts IP packet bytes (Ethernet header excluded), as the
//! simulator counts IP + TCP header + payload: a 10 Mbit/s lab link carries
//! the same packets per second as a 10 Mbit/s simulated one. Frames that
//! are not IP (the lab sets static neighbours, so there should be none)
//! count their Ethernet payload.

use std::net::IpAddr;

use pep_core::link::LinkItem;
use pep_core::queue::Queued;
use pep_core::{Flags, FlowId, Segment, Seq, Timestamps};
use pep_wire::{parse_ip_packet, EthernetRepr, Parsed, ETHERTYPE_IPV4, ETHERTYPE_IPV6};

/// A frame in flight through an emulated link direction.
#[derive(Debug)]
pub struct Frame {
    /// The Ethernet frame, unchanged.
    pub bytes: Vec<u8>,
    /// Bytes the link's rate is charged for.
    pub wire_len: u32,
    pub seg: Segment,
}

impl Queued for Frame {
    fn wire_len(&self) -> u32 {
        self.wire_len
    }
}

impl LinkItem for Frame {
    fn segment(&self) -> &Segment {
        &self.seg
    }
}

impl Frame {
    /// Wraps `bytes` (a whole Ethernet frame), parsing what the models need.
    pub fn new(bytes: Vec<u8>) -> Frame {
        let (wire_len, seg) = describe(&bytes);
        Frame {
            bytes,
            wire_len,
            seg,
        }
    }
}

/// The charged length and the segment view of an Ethernet frame.
pub fn describe(frame: &[u8]) -> (u32, Segment) {
    let eth_payload = frame.len().saturating_sub(EthernetRepr::HEADER_LEN) as u32;
    let Ok((eth, ip)) = EthernetRepr::parse(frame) else {
        return (frame.len() as u32, Segment::default());
    };
    if eth.ethertype != ETHERTYPE_IPV4 && eth.ethertype != ETHERTYPE_IPV6 {
        return (eth_payload, opaque(eth_payload));
    }
    match parse_ip_packet(ip) {
        Ok(Parsed::Tcp(p)) => {
            let hdr = p.header_len();
            let len = (hdr + p.payload.len()) as u32;
            let ts = p.tcp.options.timestamps.map(|t| Timestamps {
                val: t.val,
                ecr: t.ecr,
            });
            let seg = Segment {
                flow: flow_id(p.ip.src(), p.ip.dst(), p.tcp.src_port, p.tcp.dst_port),
                seq: Seq(p.tcp.seq),
                ack: Seq(p.tcp.ack),
                flags: Flags(p.tcp.flags),
                len: p.payload.len() as u32,
                hdr_len: hdr.min(u16::MAX as usize) as u16,
                // Unscaled: the scale was agreed in the handshake, which a
                // link does not track. No link model reads it.
                wnd: p.tcp.window as u32,
                ts,
                ..Segment::default()
            };
            (len, seg)
        }
        Ok(Parsed::NotTcp(_)) | Err(_) => {
            // The IP length bounds the packet (padding excluded) when it
            // parses; otherwise charge what arrived.
            let len = pep_wire_ip_len(ip).unwrap_or(eth_payload);
            (len, opaque(len))
        }
    }
}

/// A segment carrying no TCP fields, for packets that are not TCP: loss
/// models that only draw random numbers treat it like any other packet.
fn opaque(len: u32) -> Segment {
    Segment {
        hdr_len: len.min(u16::MAX as u32) as u16,
        ..Segment::default()
    }
}

/// Total length from an IPv4 or IPv6 header, if the header is there.
fn pep_wire_ip_len(ip: &[u8]) -> Option<u32> {
    match ip.first()? >> 4 {
        4 if ip.len() >= 4 => Some(u16::from_be_bytes([ip[2], ip[3]]) as u32),
        6 if ip.len() >= 6 => Some(40 + u16::from_be_bytes([ip[4], ip[5]]) as u32),
        _ => None,
    }
}

/// The same id for both directions of a connection: FNV-1a over the two
/// (address, port) ends in sorted order. No allocation: it runs per packet.
fn flow_id(a: IpAddr, b: IpAddr, pa: u16, pb: u16) -> FlowId {
    let key = |ip: IpAddr, port: u16| {
        let octets = match ip {
            IpAddr::V4(v) => v.to_ipv6_mapped().octets(),
            IpAddr::V6(v) => v.octets(),
        };
        (octets, port)
    };
    let (x, y) = (key(a, pa), key(b, pb));
    let (lo, hi) = if x <= y { (x, y) } else { (y, x) };
    let mut h: u32 = 0x811c_9dc5;
    for (octets, port) in [lo, hi] {
        for &byte in octets.iter().chain(&port.to_be_bytes()) {
            h ^= byte as u32;
            h = h.wrapping_mul(0x0100_0193);
        }
    }
    FlowId(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pep_wire::{emit_packet_vec, ethernet_frame, IpRepr, Ipv4Repr, TcpRepr};
    use std::net::Ipv4Addr;

    fn tcp_frame(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, payload: usize) -> Vec<u8> {
        let ip = IpRepr::V4(Ipv4Repr::new(Ipv4Addr::from(src), Ipv4Addr::from(dst)));
        let tcp = TcpRepr {
            src_port: sport,
            dst_port: dport,
            seq: 1000,
            ack: 77,
            flags: pep_wire::flags::ACK,
            window: 512,
            payload_len: payload,
            ..TcpRepr::default()
        };
        let pkt = emit_packet_vec(&ip, &tcp, &vec![7u8; payload]).unwrap();
        ethernet_frame([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], &pkt).unwrap()
    }

    #[test]
    fn tcp_frames_charge_the_ip_packet() {
        let f = Frame::new(tcp_frame(
            [198, 18, 0, 1],
            [198, 18, 0, 2],
            4000,
            5001,
            1448,
        ));
        assert_eq!(f.wire_len, 1488);
        assert_eq!(f.seg.len, 1448);
        assert_eq!(f.seg.hdr_len, 40);
        assert_eq!(f.seg.wire_len(), f.wire_len);
        assert_eq!(f.seg.seq, Seq(1000));
        assert!(f.seg.has_ack());
    }

    #[test]
    fn both_directions_share_a_flow_id() {
        let (_, fwd) = describe(&tcp_frame([198, 18, 0, 1], [198, 18, 0, 2], 4000, 5001, 10));
        let (_, rev) = describe(&tcp_frame([198, 18, 0, 2], [198, 18, 0, 1], 5001, 4000, 0));
        let (_, other) = describe(&tcp_frame([198, 18, 0, 1], [198, 18, 0, 2], 4001, 5001, 0));
        assert_eq!(fwd.flow, rev.flow);
        assert_ne!(fwd.flow, other.flow);
    }

    #[test]
    fn other_frames_are_charged_and_never_panic() {
        // ARP: Ethernet payload.
        let mut arp = vec![0u8; 42];
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        assert_eq!(describe(&arp).0, 28);
        // A padded 46-byte IPv4 UDP packet of total length 28.
        let mut udp = vec![0u8; 60];
        udp[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        udp[14] = 0x45;
        udp[16..18].copy_from_slice(&28u16.to_be_bytes());
        udp[23] = 17;
        assert_eq!(describe(&udp).0, 28);
        for n in 0..70 {
            let _ = describe(&udp[..n.min(udp.len())]);
        }
    }
}
