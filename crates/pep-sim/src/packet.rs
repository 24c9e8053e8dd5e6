//! The simulator's packet: a segment plus the addressing the network needs.

use pep_core::link::LinkItem;
use pep_core::queue::Queued;
use pep_core::Segment;

/// Index of a node in the scenario.
pub type NodeIndex = u32;

/// A packet in flight. `Copy` and fixed-size: queues and links move it by
/// value, never through the heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    pub seg: Segment,
    pub src: NodeIndex,
    pub dst: NodeIndex,
}

impl Queued for Packet {
    fn wire_len(&self) -> u32 {
        self.seg.wire_len()
    }
}

impl LinkItem for Packet {
    fn segment(&self) -> &Segment {
        &self.seg
    }
    fn segment_mut(&mut self) -> Option<&mut Segment> {
        Some(&mut self.seg)
    }
}

/// A packet at a host's processor, and which way it is going.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostJob {
    pub p: Packet,
    /// Received by the host (to its TCP endpoint) rather than sent by it.
    pub inbound: bool,
}

impl Queued for HostJob {
    fn wire_len(&self) -> u32 {
        self.p.seg.wire_len()
    }
}

impl LinkItem for HostJob {
    fn segment(&self) -> &Segment {
        &self.p.seg
    }
}
