//! Frames as the core's link model sees them: a length on the wire and a
//! [`Segment`] for the loss models and the queue disciplines.
//!
//! The link counts IP packet bytes (Ethernet header excluded), as the
//! simulator counts IP + TCP header + payload: a 10 Mbit/s lab link carries
//! the same packets per second as a 10 Mbit/s simulated one. Frames that
//! are not IP (the lab sets static neighbours, so there should be none)
//! count their Ethernet payload.
//!
//! ## Rewritable frames (the Smart ACK Dropper on real packets)
//! A TCP frame lends its segment to disciplines that rewrite ACKs
//! ([`LinkItem::segment_mut`]). The segment keeps the raw header values
//! (window unscaled, numbers absolute), so SAD compares and copies them
//! within one flow exactly as the kernel wrote them. Before the frame is
//! sent, [`Frame::write_back`] copies whatever changed (ACK number, window,
//! timestamps, SACK blocks) into the bytes, updating the TCP checksum
//! incrementally (RFC 1624): a checksum that was wrong stays as wrong, so
//! the receiver still drops a corrupted segment. SACK blocks are written
//! into the option already there (it keeps its size; blocks that do not
//! fit are left out, freed bytes become NOPs), so no header ever grows.
//! Frames that are not TCP, or whose headers do not parse, have no
//! segment to lend and pass every discipline untouched.
//!
//! Flow ids come from a [`FlowTable`] of the 4-tuples seen: two flows never
//! share an id (a hash could collide, and SAD would then write one flow's
//! ACK number into another's ACK).

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

use pep_core::link::LinkItem;
use pep_core::queue::Queued;
use pep_core::sad::AckFields;
use pep_core::segment::SackBlocks;
use pep_core::{Flags, FlowId, Segment, Seq, Timestamps};
use pep_wire::{parse_ip_packet, EthernetRepr, Parsed, ETHERTYPE_IPV4, ETHERTYPE_IPV6};

/// A frame in flight through an emulated link direction.
#[derive(Debug)]
pub struct Frame {
    /// The Ethernet frame; changed only by [`Frame::write_back`].
    pub bytes: Vec<u8>,
    /// Bytes the link's rate is charged for.
    pub wire_len: u32,
    pub seg: Segment,
    /// The ACK fields as the bytes carry them; `None` for frames that are
    /// not (well-formed) TCP, which are never rewritten.
    on_wire: Option<AckFields>,
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
    fn segment_mut(&mut self) -> Option<&mut Segment> {
        // Changes reach the bytes in `write_back`.
        self.on_wire.is_some().then_some(&mut self.seg)
    }
}

/// What [`Frame::write_back`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteBack {
    /// The segment is as the bytes say: nothing to do.
    Unchanged,
    /// The bytes now carry the segment's ACK fields.
    Rewritten,
    /// A field could not be written (the frame carries no timestamps or
    /// SACK option to hold it, or no longer parses): the bytes are as they
    /// were, except for the fields written before.
    Partial,
}

impl Frame {
    /// Wraps `bytes` (a whole Ethernet frame), parsing what the models
    /// need; TCP flows get their ids from `flows`.
    pub fn parse(bytes: Vec<u8>, flows: &mut FlowTable) -> Frame {
        let (wire_len, seg, tcp) = describe(&bytes, flows);
        Frame {
            bytes,
            wire_len,
            seg,
            on_wire: tcp.then(|| AckFields::of(&seg)),
        }
    }

    /// Writes the segment's ACK number, window, timestamps and SACK blocks
    /// into the bytes where a discipline changed them.
    pub fn write_back(&mut self) -> WriteBack {
        let Some(old) = self.on_wire else {
            return WriteBack::Unchanged;
        };
        let new = AckFields::of(&self.seg);
        if new == old {
            return WriteBack::Unchanged;
        }
        let Some(ip) = self.bytes.get_mut(EthernetRepr::HEADER_LEN..) else {
            return WriteBack::Partial;
        };
        let mut ok = true;
        if new.ack != old.ack {
            ok &= pep_wire::rewrite_tcp_ack(ip, new.ack.0).is_ok();
        }
        if new.wnd != old.wnd {
            // Raw 16-bit values from this flow's own headers (see parse).
            let w = u16::try_from(new.wnd).unwrap_or(u16::MAX);
            ok &= pep_wire::rewrite_tcp_window(ip, w).is_ok();
        }
        if new.ts != old.ts {
            ok &= match new.ts {
                Some(t) => {
                    pep_wire::rewrite_tcp_timestamps(
                        ip,
                        pep_wire::TimestampOption {
                            val: t.val,
                            ecr: t.ecr,
                        },
                    ) == Ok(true)
                }
                None => false,
            };
        }
        if new.sack != old.sack {
            let mut blocks = [(0u32, 0u32); pep_core::segment::MAX_SACK_BLOCKS];
            let list = new.sack.as_slice();
            for (b, &(l, r)) in blocks.iter_mut().zip(list) {
                *b = (l.0, r.0);
            }
            ok &= match pep_wire::rewrite_tcp_sack(ip, &blocks[..list.len()]) {
                Ok(true) => true,
                // No option to hold them: fine only if there are none.
                Ok(false) => list.is_empty(),
                Err(_) => false,
            };
        }
        self.on_wire = Some(new);
        if ok {
            WriteBack::Rewritten
        } else {
            WriteBack::Partial
        }
    }
}

/// The charged length and the segment view of an Ethernet frame, and
/// whether it is a well-formed TCP segment.
pub fn describe(frame: &[u8], flows: &mut FlowTable) -> (u32, Segment, bool) {
    let eth_payload = frame.len().saturating_sub(EthernetRepr::HEADER_LEN) as u32;
    let Ok((eth, ip)) = EthernetRepr::parse(frame) else {
        return (frame.len() as u32, Segment::default(), false);
    };
    if eth.ethertype != ETHERTYPE_IPV4 && eth.ethertype != ETHERTYPE_IPV6 {
        return (eth_payload, opaque(eth_payload), false);
    }
    match parse_ip_packet(ip) {
        Ok(Parsed::Tcp(p)) => {
            let hdr = p.header_len();
            let len = (hdr + p.payload.len()) as u32;
            let ts = p.tcp.options.timestamps.map(|t| Timestamps {
                val: t.val,
                ecr: t.ecr,
            });
            let mut sack = SackBlocks::new();
            for &(l, r) in p.tcp.options.sack.as_slice() {
                sack.push(Seq(l), Seq(r));
            }
            let seg = Segment {
                flow: flows.id(p.ip.src(), p.ip.dst(), p.tcp.src_port, p.tcp.dst_port),
                seq: Seq(p.tcp.seq),
                ack: Seq(p.tcp.ack),
                flags: Flags(p.tcp.flags),
                len: p.payload.len() as u32,
                hdr_len: hdr.min(u16::MAX as usize) as u16,
                // Unscaled: the scale was agreed in the handshake, which a
                // link does not track. Only compared and copied within a
                // flow, where the scale is the same.
                wnd: p.tcp.window as u32,
                sack,
                ts,
            };
            (len, seg, true)
        }
        Ok(Parsed::NotTcp(_)) | Err(_) => {
            // The IP length bounds the packet (padding excluded) when it
            // parses; otherwise charge what arrived.
            let len = pep_wire_ip_len(ip).unwrap_or(eth_payload);
            (len, opaque(len), false)
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

/// One end of a connection: address (IPv4 mapped into IPv6) and port.
type End = ([u8; 16], u16);

/// Flow ids for 4-tuples: the same id for both directions of a connection,
/// distinct ids for distinct connections. Holds at most `capacity` tuples;
/// a new one then replaces the oldest, whose connection gets a fresh id if
/// it shows up again. Ids are never reused (until 2^32 flows have been
/// seen), so an evicted connection is at worst a new flow to SAD, never
/// another flow.
#[derive(Debug)]
pub struct FlowTable {
    ids: HashMap<(End, End), FlowId>,
    order: VecDeque<(End, End)>,
    capacity: usize,
    next: u32,
    evicted: u64,
    /// Ids evicted since [`Self::take_evicted`] last took them, when
    /// logged ([`Self::log_evictions`]).
    gone: Option<Vec<FlowId>>,
}

impl FlowTable {
    /// Default capacity: far more connections than a lab runs.
    pub const DEFAULT_CAPACITY: usize = 65_536;

    pub fn new(capacity: usize) -> FlowTable {
        FlowTable {
            ids: HashMap::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
            next: 1,
            evicted: 0,
            gone: None,
        }
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Tuples dropped to make room for new ones.
    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    /// The ids evicted since the last call: state kept under them (an ACK
    /// held by thinning) must be let go, since the connection comes back
    /// under a new id.
    pub fn take_evicted(&mut self) -> Option<FlowId> {
        self.gone.as_mut()?.pop()
    }

    /// Keeps the evicted ids for [`Self::take_evicted`] (a driver that
    /// does not take them would let the log grow).
    pub fn log_evictions(mut self) -> Self {
        self.gone = Some(Vec::new());
        self
    }

    /// The id of the connection between (`a`, `pa`) and (`b`, `pb`).
    pub fn id(&mut self, a: IpAddr, b: IpAddr, pa: u16, pb: u16) -> FlowId {
        let end = |ip: IpAddr, port: u16| -> End {
            let octets = match ip {
                IpAddr::V4(v) => v.to_ipv6_mapped().octets(),
                IpAddr::V6(v) => v.octets(),
            };
            (octets, port)
        };
        let (x, y) = (end(a, pa), end(b, pb));
        let key = if x <= y { (x, y) } else { (y, x) };
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        if self.ids.len() >= self.capacity {
            if let Some(old) = self.order.pop_front() {
                if let (Some(id), Some(gone)) = (self.ids.remove(&old), &mut self.gone) {
                    gone.push(id);
                }
                self.evicted += 1;
            }
        }
        let id = FlowId(self.next);
        // Zero is the id of segments that are not TCP.
        self.next = self.next.checked_add(1).unwrap_or(1);
        self.ids.insert(key, id);
        self.order.push_back(key);
        id
    }
}

impl Default for FlowTable {
    fn default() -> Self {
        FlowTable::new(Self::DEFAULT_CAPACITY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pep_core::queue::{Queue, QueueLimit};
    use pep_core::Instant;
    use pep_wire::{
        emit_packet_vec, ethernet_frame, fill_checksums, verify_checksums, IpRepr, Ipv4Repr,
        TcpOptions, TcpRepr,
    };
    use std::net::Ipv4Addr;

    struct Ack {
        sport: u16,
        ack: u32,
        window: u16,
        ts: Option<(u32, u32)>,
        sack: &'static [(u32, u32)],
        payload: usize,
    }

    fn ack(sport: u16, ack: u32) -> Ack {
        Ack {
            sport,
            ack,
            window: 512,
            ts: Some((100 + ack, 9)),
            sack: &[],
            payload: 0,
        }
    }

    fn frame_of(a: &Ack) -> Vec<u8> {
        let ip = IpRepr::V4(Ipv4Repr::new(
            Ipv4Addr::new(198, 18, 0, 2),
            Ipv4Addr::new(198, 18, 0, 1),
        ));
        let tcp = TcpRepr {
            src_port: a.sport,
            dst_port: 4000,
            seq: 1000,
            ack: a.ack,
            flags: pep_wire::flags::ACK,
            window: a.window,
            options: TcpOptions {
                timestamps: a
                    .ts
                    .map(|(val, ecr)| pep_wire::TimestampOption { val, ecr }),
                sack: pep_wire::SackOption::from_slice(a.sack),
                ..TcpOptions::default()
            },
            payload_len: a.payload,
            ..TcpRepr::default()
        };
        let pkt = emit_packet_vec(&ip, &tcp, &vec![7u8; a.payload]).unwrap();
        ethernet_frame([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], &pkt).unwrap()
    }

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

    /// The TCP header of a frame, parsed back.
    fn tcp_of(frame: &[u8]) -> TcpRepr {
        match parse_ip_packet(&frame[14..]).unwrap() {
            Parsed::Tcp(p) => p.tcp,
            Parsed::NotTcp(_) => panic!("not tcp"),
        }
    }

    /// Asserts the frame's TCP checksum is the one a full computation gives.
    fn assert_checksum_exact(frame: &[u8]) {
        let ip = &frame[14..];
        verify_checksums(ip).expect("checksum verifies");
        let mut full = ip.to_vec();
        fill_checksums(&mut full).unwrap();
        assert_eq!(ip, &full[..], "incremental update == full recomputation");
    }

    #[test]
    fn tcp_frames_charge_the_ip_packet() {
        let f = Frame::parse(
            tcp_frame([198, 18, 0, 1], [198, 18, 0, 2], 4000, 5001, 1448),
            &mut FlowTable::default(),
        );
        assert_eq!(f.wire_len, 1488);
        assert_eq!(f.seg.len, 1448);
        assert_eq!(f.seg.hdr_len, 40);
        assert_eq!(f.seg.wire_len(), f.wire_len);
        assert_eq!(f.seg.seq, Seq(1000));
        assert!(f.seg.has_ack());
    }

    #[test]
    fn both_directions_share_a_flow_id_and_flows_never_share_one() {
        let mut t = FlowTable::default();
        let (_, fwd, _) = describe(
            &tcp_frame([198, 18, 0, 1], [198, 18, 0, 2], 4000, 5001, 10),
            &mut t,
        );
        let (_, rev, _) = describe(
            &tcp_frame([198, 18, 0, 2], [198, 18, 0, 1], 5001, 4000, 0),
            &mut t,
        );
        assert_eq!(fwd.flow, rev.flow);
        // Every port pair is its own flow: ids are handed out, not hashed.
        let mut seen = std::collections::HashSet::new();
        for p in 0..5000u16 {
            let f = t.id(
                Ipv4Addr::new(10, 0, 0, 1).into(),
                Ipv4Addr::new(10, 0, 0, 2).into(),
                p,
                80,
            );
            assert!(f != FlowId(0) && f != fwd.flow && seen.insert(f));
        }
    }

    #[test]
    fn a_full_flow_table_evicts_the_oldest_and_never_reuses_an_id() {
        let mut t = FlowTable::new(3);
        let a: IpAddr = Ipv4Addr::new(10, 0, 0, 1).into();
        let ids: Vec<_> = (1..=4).map(|p| t.id(a, a, p, 9)).collect();
        assert_eq!(t.len(), 3);
        // Port 1 was evicted by port 4: it comes back as a new flow.
        let again = t.id(a, a, 1, 9);
        assert!(!ids.contains(&again));
        assert_eq!(t.id(a, a, 4, 9), ids[3], "recent flows keep their id");
    }

    #[test]
    fn write_back_matches_a_full_checksum_recomputation() {
        let cases: &[(Ack, &[(u32, u32)])] = &[
            (ack(5001, 1000), &[]),
            // Three blocks beside timestamps, rewritten to two, one, none.
            (
                Ack {
                    sack: &[(5000, 6000), (7000, 8000), (9000, 9500)],
                    ..ack(5001, 1000)
                },
                &[(5000, 7000), (9000, 9600)],
            ),
            (
                Ack {
                    sack: &[(5000, 6000), (7000, 8000), (9000, 9500)],
                    ..ack(5001, 1000)
                },
                &[],
            ),
            // One block (no timestamps) asked to hold three: the first fits.
            (
                Ack {
                    ts: None,
                    sack: &[(5000, 6000)],
                    ..ack(5001, 1000)
                },
                &[(5000, 6100), (7000, 8000), (9000, 9500)],
            ),
        ];
        for (orig, new_sack) in cases {
            let mut f = Frame::parse(frame_of(orig), &mut FlowTable::default());
            let len = f.bytes.len();
            let seg = f.segment_mut().expect("tcp frames are rewritable");
            seg.ack = Seq(0x89ab_cdef);
            seg.wnd = 0xfffe;
            if seg.ts.is_some() {
                seg.ts = Some(Timestamps {
                    val: 0x0102_0304,
                    ecr: 0xa0b0_c0d1,
                });
            }
            seg.sack.clear();
            for &(l, r) in *new_sack {
                seg.sack.push(Seq(l), Seq(r));
            }
            let want = f.seg;
            let res = f.write_back();
            assert_eq!(f.bytes.len(), len, "headers never grow");
            assert_checksum_exact(&f.bytes);
            let tcp = tcp_of(&f.bytes);
            assert_eq!(tcp.ack, 0x89ab_cdef);
            assert_eq!(tcp.window, 0xfffe);
            assert_eq!(
                tcp.options.timestamps.map(|t| (t.val, t.ecr)),
                want.ts.map(|t| (t.val, t.ecr))
            );
            let room = orig.sack.len();
            let got: Vec<_> = tcp.options.sack.as_slice().to_vec();
            let expect: Vec<_> = new_sack.iter().take(room).copied().collect();
            assert_eq!(got, expect);
            // Blocks that do not fit are left out, which is not a failure.
            assert_eq!(res, WriteBack::Rewritten);
            // A second call has nothing left to do.
            assert_eq!(f.write_back(), WriteBack::Unchanged);
        }
    }

    #[test]
    fn a_wrong_checksum_stays_exactly_as_wrong() {
        let mut f = Frame::parse(frame_of(&ack(5001, 1000)), &mut FlowTable::default());
        // Corrupt the checksum by one.
        let csum = 14 + 20 + 16;
        f.bytes[csum + 1] ^= 1;
        f.segment_mut().unwrap().ack = Seq(2000);
        assert_eq!(f.write_back(), WriteBack::Rewritten);
        assert!(verify_checksums(&f.bytes[14..]).is_err());
        f.bytes[csum + 1] ^= 1;
        assert_checksum_exact(&f.bytes);
    }

    #[test]
    fn sad_queue_rewrites_frames_per_flow_on_the_wire() {
        let mut flows = FlowTable::default();
        let mut q = Queue::sad(Queue::drop_tail(QueueLimit::Packets(100)), 16);
        let t = Instant::ZERO;
        // Flow A acks 1000, 2000, 3000; flow B (another port) 50, 60; a
        // data frame and a non-IP frame in between.
        let mut arp = vec![0u8; 42];
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        let data = Ack {
            payload: 100,
            ..ack(5001, 1500)
        };
        let inputs = [
            frame_of(&ack(5001, 1000)),
            frame_of(&ack(5002, 50)),
            frame_of(&data),
            frame_of(&ack(5001, 2000)),
            arp.clone(),
            frame_of(&ack(5002, 60)),
            frame_of(&ack(5001, 3000)),
        ];
        let mut accepted = 0;
        for b in inputs {
            if q.enqueue(t, Frame::parse(b, &mut flows)).is_ok() {
                accepted += 1;
            }
        }
        assert_eq!(accepted, 4, "two ACKs of A and one of B merged");
        let mut out = vec![];
        while let Some(mut f) = q.dequeue(t) {
            f.write_back();
            out.push(f.bytes);
        }
        let acks: Vec<_> = out
            .iter()
            .filter(|b| b.len() > 42)
            .map(|b| {
                assert_checksum_exact(b);
                let tcp = tcp_of(b);
                (tcp.src_port, tcp.ack, tcp.options.timestamps.unwrap().val)
            })
            .collect();
        assert_eq!(
            acks,
            vec![(5001, 3000, 3100), (5002, 60, 160), (5001, 1500, 1600)],
            "each flow's queued ACK carries its own latest number and timestamps"
        );
        assert_eq!(out[3], arp, "non-IP frames pass untouched");
    }

    #[test]
    fn other_frames_are_charged_never_rewritable_and_never_panic() {
        let mut t = FlowTable::default();
        // ARP: Ethernet payload.
        let mut arp = vec![0u8; 42];
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        assert_eq!(describe(&arp, &mut t).0, 28);
        assert!(Frame::parse(arp, &mut t).segment_mut().is_none());
        // A padded 46-byte IPv4 UDP packet of total length 28.
        let mut udp = vec![0u8; 60];
        udp[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        udp[14] = 0x45;
        udp[16..18].copy_from_slice(&28u16.to_be_bytes());
        udp[23] = 17;
        assert_eq!(describe(&udp, &mut t).0, 28);
        for n in 0..70 {
            let _ = describe(&udp[..n.min(udp.len())], &mut t);
        }
        // A TCP ACK cut inside its options: not rewritable.
        let mut bad = frame_of(&ack(5001, 1000));
        bad[14 + 20 + 12] = 0xf0; // data offset 60 bytes, past the end
        let mut f = Frame::parse(bad.clone(), &mut t);
        assert!(f.segment_mut().is_none());
        assert_eq!(f.write_back(), WriteBack::Unchanged);
        assert_eq!(f.bytes, bad);
    }
}
