//! The segment model every mechanism acts on.
//!
//! A `Segment` is the decision-relevant content of a TCP/IP packet: who it
//! belongs to, sequence and acknowledgment numbers, flags, lengths, the
//! window, SACK blocks and timestamps. It is `Copy` and fixed-size, so the
//! simulator moves packets without heap allocation. The wire layer
//! (`pep-wire`) maps it to and from real header bytes.

/// Identifies a transport connection within a run (simulator) or a flow
/// table (daemon). Both directions of a connection share the id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlowId(pub u32);

/// TCP flags, as on the wire (RFC 9293 section 3.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flags(pub u8);

impl Flags {
    pub const FIN: Flags = Flags(0x01);
    pub const SYN: Flags = Flags(0x02);
    pub const RST: Flags = Flags(0x04);
    pub const PSH: Flags = Flags(0x08);
    pub const ACK: Flags = Flags(0x10);
    pub const ECE: Flags = Flags(0x40);
    pub const CWR: Flags = Flags(0x80);

    pub const fn empty() -> Flags {
        Flags(0)
    }
    pub const fn contains(self, f: Flags) -> bool {
        self.0 & f.0 == f.0
    }
    pub const fn union(self, f: Flags) -> Flags {
        Flags(self.0 | f.0)
    }
}

impl core::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, f: Flags) -> Flags {
        self.union(f)
    }
}

use crate::seq::Seq;

/// At most this many SACK blocks travel in one segment (RFC 2018 allows 4
/// without timestamps, 3 with them; ns-2's sink sends up to 3).
pub const MAX_SACK_BLOCKS: usize = 4;

/// SACK blocks as a fixed array; only the first `len` are meaningful.
/// (The option's bytes are `pep_wire::SackOption`, raw numbers; these are
/// the blocks as the mechanisms compare them.)
#[derive(Clone, Copy, Debug, Default)]
pub struct SackBlocks {
    blocks: [(Seq, Seq); MAX_SACK_BLOCKS],
    len: u8,
}

impl SackBlocks {
    pub const fn new() -> Self {
        SackBlocks {
            blocks: [(Seq(0), Seq(0)); MAX_SACK_BLOCKS],
            len: 0,
        }
    }
    /// Appends a block `[left, right)`; returns false when full.
    pub fn push(&mut self, left: Seq, right: Seq) -> bool {
        if (self.len as usize) < MAX_SACK_BLOCKS {
            self.blocks[self.len as usize] = (left, right);
            self.len += 1;
            true
        } else {
            false
        }
    }
    pub fn as_slice(&self) -> &[(Seq, Seq)] {
        &self.blocks[..self.len as usize]
    }
    pub fn len(&self) -> usize {
        self.len as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn clear(&mut self) {
        self.len = 0;
    }
}

// Equality and hashing look only at the blocks in use: stale entries past
// `len` (after `clear`) must not make equal lists differ.
impl PartialEq for SackBlocks {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}
impl Eq for SackBlocks {}
impl core::hash::Hash for SackBlocks {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state)
    }
}

/// TCP timestamp option (RFC 7323): value and echo reply, as a segment
/// carries them (`pep_wire::TimestampOption` is the option on the wire).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Timestamps {
    pub val: u32,
    pub ecr: u32,
}

/// A TCP segment as the mechanisms see it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Segment {
    pub flow: FlowId,
    pub seq: Seq,
    pub ack: Seq,
    pub flags: Flags,
    /// Payload bytes.
    pub len: u32,
    /// Bytes of IP + TCP header counted on the wire (40 for plain IPv4/TCP).
    pub hdr_len: u16,
    /// Advertised receive window in bytes, already scaled (32 bits from the
    /// start: a GEO path needs more than 64 KB).
    pub wnd: u32,
    pub sack: SackBlocks,
    pub ts: Option<Timestamps>,
}

impl Segment {
    /// Bytes this segment occupies on a link (header + payload).
    pub fn wire_len(&self) -> u32 {
        self.len + self.hdr_len as u32
    }
    /// Sequence space consumed: payload plus one each for SYN and FIN.
    pub fn seq_len(&self) -> u32 {
        self.len + self.flags.contains(Flags::SYN) as u32 + self.flags.contains(Flags::FIN) as u32
    }
    /// The sequence number just past this segment.
    pub fn end_seq(&self) -> Seq {
        self.seq + self.seq_len()
    }
    /// An ACK carrying no data, SYN, FIN or RST: what ACK mechanisms act on.
    pub fn is_pure_ack(&self) -> bool {
        self.len == 0
            && self.flags.contains(Flags::ACK)
            && self.flags.0 & (Flags::SYN.0 | Flags::FIN.0 | Flags::RST.0) == 0
    }
    pub fn has_ack(&self) -> bool {
        self.flags.contains(Flags::ACK)
    }
}

/// Which packets a per-kind model (a loss model, a classifier) acts on. A
/// *pure ACK* is [`Segment::is_pure_ack`]; everything else (payload, SYN,
/// FIN, RST) counts as data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum KindFilter {
    #[default]
    All,
    /// Packets that are not pure ACKs.
    Data,
    /// Pure ACKs only.
    Acks,
}

impl KindFilter {
    pub fn matches(self, seg: &Segment) -> bool {
        match self {
            KindFilter::All => true,
            KindFilter::Data => !seg.is_pure_ack(),
            KindFilter::Acks => seg.is_pure_ack(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_and_kinds() {
        let mut s = Segment {
            seq: Seq(100),
            len: 1000,
            hdr_len: 40,
            flags: Flags::ACK,
            ..Default::default()
        };
        assert_eq!(s.wire_len(), 1040);
        assert_eq!(s.end_seq(), Seq(1100));
        assert!(!s.is_pure_ack());
        s.len = 0;
        assert!(s.is_pure_ack());
        s.flags = Flags::ACK | Flags::FIN;
        assert!(!s.is_pure_ack());
        assert_eq!(s.seq_len(), 1);
    }

    #[test]
    fn sack_blocks_are_bounded() {
        let mut b = SackBlocks::new();
        for i in 0..MAX_SACK_BLOCKS as u32 {
            assert!(b.push(Seq(i * 10), Seq(i * 10 + 5)));
        }
        assert!(!b.push(Seq(0), Seq(1)));
        assert_eq!(b.len(), MAX_SACK_BLOCKS);
    }

    #[test]
    fn sack_blocks_compare_only_the_blocks_in_use() {
        // Two blocks, then one: the second slot keeps a stale block.
        let mut a = SackBlocks::new();
        a.push(Seq(10), Seq(20));
        a.push(Seq(22), Seq(24));
        a.clear();
        a.push(Seq(30), Seq(40));
        let mut b = SackBlocks::new();
        b.push(Seq(30), Seq(40));
        assert_eq!(a, b);
        a.clear();
        assert_eq!(a, SackBlocks::new());
        b.push(Seq(50), Seq(60));
        assert_ne!(a, b);
    }

    #[test]
    fn segment_stays_small() {
        // Packets are copied through queues; keep them within two cache lines.
        assert!(
            core::mem::size_of::<Segment>() <= 80,
            "{}",
            core::mem::size_of::<Segment>()
        );
    }
}
