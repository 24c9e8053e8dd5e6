//! # Distributed split-connection PEP (Gschwandtner 2009): the tunnel's
//! bookkeeping
//!
//! Two PEP nodes at the ends of a long fat pipe. *Split start* terminates
//! every sender's connection behind a local queue; all flows' bytes go over
//! ONE tunnel connection to *split end*, which hands each flow's bytes to
//! its own connection toward the receiver. The local queue and its credit
//! are [`crate::localq`]; this module holds the rest that is not TCP:
//!
//! * [`Framing`]: the `recv_`/`send_` tables. The thesis moves one source
//!   address per packet from split start to split end in a `pepid_` header
//!   field. Here the tunnel is a byte stream, and the table is the ordered
//!   list of (flow, bytes) chunks in tunnel stream order; split end walks it
//!   as the tunnel delivers in-order bytes. As the thesis's `SplitManager`,
//!   one table is shared by both nodes (it is what an in-band frame header
//!   would carry); a real two-node deployment would send it in band.
//! * [`FlowCredit`]: per-flow credit across the tunnel (beyond the thesis).
//!
//! No callbacks: split end pulls the stream's chunks ([`Framing::pop`], an
//! iterator; [`Framing::head`] and [`Framing::consume`] when it takes only
//! what each flow has room for).

use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;

/// The ordered table that maps the tunnel byte stream back to flows.
/// Flows are small integers (an index the driver chooses).
#[derive(Clone, Debug, Default)]
pub struct Framing {
    /// (flow, bytes) in stream order; adjacent chunks of one flow merge.
    chunks: VecDeque<(u32, u64)>,
    pushed: u64,
    popped: u64,
}

impl Framing {
    pub fn new() -> Self {
        Self::default()
    }

    /// Split start wrote `bytes` of `flow` to the tunnel.
    #[inline]
    pub fn push(&mut self, flow: u32, bytes: u64) {
        if bytes == 0 {
            return;
        }
        self.pushed += bytes;
        if let Some(last) = self.chunks.back_mut() {
            if last.0 == flow {
                last.1 += bytes;
                return;
            }
        }
        self.chunks.push_back((flow, bytes));
    }

    /// Split end received `bytes` more in-order tunnel bytes: each flow's
    /// share, in stream order, as (flow, bytes).
    ///
    /// # Panics
    /// If more bytes are popped than were pushed (the tunnel delivered
    /// bytes split start never wrote).
    #[inline]
    pub fn pop(&mut self, bytes: u64) -> Pop<'_> {
        assert!(
            bytes <= self.in_tunnel(),
            "tunnel delivered {} bytes beyond what was framed",
            bytes - self.in_tunnel()
        );
        Pop {
            f: self,
            left: bytes,
        }
    }

    /// The head of the undelivered stream: its flow and that flow's bytes
    /// before the next flow's. Split end, taking only what each flow has
    /// room for, takes from the head ([`Self::consume`]) and stops at the
    /// first flow that takes less than offered, since everything behind it
    /// in the one stream waits too (head-of-line blocking).
    #[inline]
    pub fn head(&self) -> Option<(u32, u64)> {
        self.chunks.front().copied()
    }

    /// Split end took `n` bytes of the head chunk.
    ///
    /// # Panics
    /// If `n` exceeds the head chunk.
    #[inline]
    pub fn consume(&mut self, n: u64) {
        if n == 0 {
            return;
        }
        let head = self
            .chunks
            .front_mut()
            .expect("consume from an empty stream");
        assert!(n <= head.1, "consumed {n} bytes of a {}-byte chunk", head.1);
        head.1 -= n;
        self.popped += n;
        if head.1 == 0 {
            self.chunks.pop_front();
        }
    }

    /// Takes the chunks framed since the last call, leaving the counts: a
    /// split start whose split end runs elsewhere (a simulation cut in two)
    /// ships them there with [`Self::push`].
    pub fn take_chunks(&mut self) -> VecDeque<(u32, u64)> {
        core::mem::take(&mut self.chunks)
    }

    /// Bytes framed and not yet delivered at split end.
    pub fn in_tunnel(&self) -> u64 {
        self.pushed - self.popped
    }
    pub fn pushed(&self) -> u64 {
        self.pushed
    }
    /// Chunks in the table (memory held).
    pub fn chunks(&self) -> usize {
        self.chunks.len()
    }
}

/// The chunks of [`Framing::pop`], in stream order.
pub struct Pop<'a> {
    f: &'a mut Framing,
    left: u64,
}

impl Iterator for Pop<'_> {
    type Item = (u32, u64);
    #[inline]
    fn next(&mut self) -> Option<(u32, u64)> {
        if self.left == 0 {
            return None;
        }
        let (flow, avail) = self.f.head()?;
        let n = avail.min(self.left);
        self.f.consume(n);
        self.left -= n;
        Some((flow, n))
    }
}

impl Drop for Pop<'_> {
    /// Popped bytes are delivered whether or not the caller walked them all.
    fn drop(&mut self) {
        while self.next().is_some() {}
    }
}

/// Per-flow credit across the tunnel (beyond the thesis): flow `i` may
/// have at most `window` bytes written to the tunnel at split start and
/// not yet acknowledged by its destination behind split end. That bounds
/// what split end ever holds for one flow, so a receiver that stops
/// reading (or a slow access link) behind split end fills only its own
/// window, never the shared tunnel stream; its sender is held back at
/// split start by the receive window of its terminating receiver.
///
/// The acknowledgements travel back from split end; a deployment would
/// carry them in band (in the tunnel's ACK stream), as the framing.
#[derive(Clone, Debug)]
pub struct FlowCredit {
    window: u64,
    written: Vec<u64>,
    acked: Vec<u64>,
}

impl FlowCredit {
    pub fn new(flows: usize, window: u64) -> Self {
        FlowCredit {
            window,
            written: vec![0; flows],
            acked: vec![0; flows],
        }
    }

    /// Bytes flow `i` may still write to the tunnel.
    #[inline]
    pub fn allowance(&self, i: usize) -> u64 {
        self.window
            .saturating_sub(self.written[i] - self.acked[i].min(self.written[i]))
    }

    /// Split start wrote `n` bytes of flow `i`; at most its allowance.
    ///
    /// # Panics
    /// If `n` exceeds the allowance (the driver must read no more).
    #[inline]
    pub fn on_written(&mut self, i: usize, n: u64) {
        assert!(
            n <= self.allowance(i),
            "flow {i}: {n} bytes over its credit"
        );
        self.written[i] += n;
    }

    /// Flow `i`'s destination has acknowledged `total` bytes in all (a
    /// cumulative count: older reports are ignored).
    #[inline]
    pub fn on_acked(&mut self, i: usize, total: u64) {
        self.acked[i] = self.acked[i].max(total);
    }

    /// Bytes of flow `i` in the tunnel or at split end.
    pub fn outstanding(&self, i: usize) -> u64 {
        self.written[i] - self.acked[i].min(self.written[i])
    }
    pub fn window(&self) -> u64 {
        self.window
    }
}

#[cfg(test)]
mod tests;
