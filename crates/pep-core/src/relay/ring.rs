//! A byte ring with a hard capacity that allocates as it fills.
//!
//! Memory grows in doublings from [`MIN_ALLOC`] up to the capacity, so an
//! idle or light connection costs a few KiB, not its full bound, and the
//! bound is never exceeded. Slots are contiguous slices so a driver can read
//! from and write to sockets without an intermediate copy.

use alloc::vec;
use alloc::vec::Vec;

/// First allocation, in bytes.
pub const MIN_ALLOC: usize = 16 * 1024;

#[derive(Debug, Default)]
pub struct Ring {
    buf: Vec<u8>,
    cap: usize,
    head: usize,
    len: usize,
}

impl Ring {
    pub fn new(cap: usize) -> Ring {
        Ring {
            buf: Vec::new(),
            cap,
            head: 0,
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Bytes of memory held (for occupancy metrics and memory bounds).
    pub fn allocated(&self) -> usize {
        self.buf.len()
    }

    /// Contiguous free space after the data; empty when full. Grows the
    /// allocation (up to the capacity) when the current one is full.
    pub fn free_slot(&mut self) -> &mut [u8] {
        if self.len == self.cap {
            return &mut [];
        }
        if self.len == self.buf.len() {
            self.grow();
        }
        let n = self.buf.len();
        let tail = (self.head + self.len) % n;
        // Not full here, so tail == head only when empty. Unwrapped data
        // leaves space to the end of the allocation; wrapped, up to the head.
        let end = if tail >= self.head { n } else { self.head };
        &mut self.buf[tail..end]
    }

    /// Marks `n` bytes of the last free slot as filled.
    pub fn commit(&mut self, n: usize) {
        debug_assert!(self.len + n <= self.buf.len());
        self.len = (self.len + n).min(self.buf.len());
    }

    /// Copies as much of `data` as fits; returns how much.
    #[cfg(test)]
    pub fn push(&mut self, mut data: &[u8]) -> usize {
        let mut total = 0;
        while !data.is_empty() {
            let slot = self.free_slot();
            let k = slot.len().min(data.len());
            if k == 0 {
                break;
            }
            slot[..k].copy_from_slice(&data[..k]);
            self.commit(k);
            data = &data[k..];
            total += k;
        }
        total
    }

    /// Contiguous data from the head.
    pub fn data_slot(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        let end = (self.head + self.len).min(self.buf.len());
        &self.buf[self.head..end]
    }

    /// Drops `n` bytes from the head (they were written out).
    pub fn consume(&mut self, n: usize) {
        let n = n.min(self.len);
        self.len -= n;
        self.head = if self.len == 0 {
            0
        } else {
            (self.head + n) % self.buf.len()
        };
    }

    /// Frees everything (after a reset, the data will never be written).
    pub fn clear(&mut self) {
        self.buf = Vec::new();
        self.head = 0;
        self.len = 0;
    }

    fn grow(&mut self) {
        let new = (self.buf.len() * 2).clamp(MIN_ALLOC.min(self.cap), self.cap);
        let mut next = vec![0u8; new];
        // Linearize: the data starts at 0 in the new allocation.
        let first = self.data_slot().len();
        next[..first].copy_from_slice(self.data_slot());
        if first < self.len {
            next[first..self.len].copy_from_slice(&self.buf[..self.len - first]);
        }
        self.buf = next;
        self.head = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_grows_and_keeps_order() {
        let mut r = Ring::new(40_000);
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
        let (mut pushed, mut out) = (0, Vec::new());
        while out.len() < data.len() {
            pushed += r.push(&data[pushed..(pushed + 9_999).min(data.len())]);
            assert!(r.len() <= 40_000 && r.allocated() <= 40_000);
            let k = r.data_slot().len().min(7_001);
            out.extend_from_slice(&r.data_slot()[..k]);
            r.consume(k);
        }
        assert_eq!(out, data);
    }

    #[test]
    fn full_ring_offers_no_space() {
        let mut r = Ring::new(10);
        assert_eq!(r.push(&[1; 15]), 10);
        assert!(r.len() == r.cap && r.free_slot().is_empty());
        r.consume(4);
        assert_eq!(r.push(&[2; 15]), 4);
        assert_eq!(r.allocated(), 10);
    }
}
