//! A link direction's delay line: packets propagating, first in first out,
//! with their arrival times.
//!
//! The head is kept in the direction itself and the rest in a ring: most
//! directions of a network of many flows carry at most one packet at a
//! time, so their packets are written and read in the lines that hold the
//! direction (which a driver prefetches) and never in a ring slot of their
//! own, evicted since the direction's last packet. A direction with nothing
//! behind its head allocates no ring.

use alloc::collections::VecDeque;

use crate::time::Instant;

#[derive(Clone, Debug)]
pub(crate) struct DelayLine<T> {
    /// The earliest packet; `None` only when `rest` is empty too.
    head: Option<(Instant, T)>,
    rest: VecDeque<(Instant, T)>,
}

impl<T> DelayLine<T> {
    pub(crate) fn new() -> Self {
        DelayLine {
            head: None,
            rest: VecDeque::new(),
        }
    }

    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.head.is_some() as usize + self.rest.len()
    }

    #[inline(always)]
    pub(crate) fn front(&self) -> Option<&(Instant, T)> {
        self.head.as_ref()
    }

    /// More than one packet: one behind the head.
    #[inline(always)]
    pub(crate) fn has_behind_head(&self) -> bool {
        !self.rest.is_empty()
    }

    /// The `k`-th entry (`0` is the head).
    #[inline(always)]
    pub(crate) fn get(&self, k: usize) -> Option<&(Instant, T)> {
        match k {
            0 => self.head.as_ref(),
            _ => self.rest.get(k - 1),
        }
    }

    #[inline(always)]
    pub(crate) fn back(&self) -> Option<&(Instant, T)> {
        self.rest.back().or(self.head.as_ref())
    }

    #[inline(always)]
    pub(crate) fn back_mut(&mut self) -> Option<&mut (Instant, T)> {
        match self.rest.back_mut() {
            Some(last) => Some(last),
            None => self.head.as_mut(),
        }
    }

    #[inline(always)]
    pub(crate) fn push_back(&mut self, entry: (Instant, T)) {
        if self.head.is_none() {
            self.head = Some(entry);
        } else {
            self.rest.push_back(entry);
        }
    }

    #[inline(always)]
    pub(crate) fn pop_front(&mut self) -> Option<(Instant, T)> {
        if self.rest.is_empty() {
            return self.head.take();
        }
        let next = self.rest.pop_front();
        core::mem::replace(&mut self.head, next)
    }

    #[inline(always)]
    pub(crate) fn pop_back(&mut self) -> Option<(Instant, T)> {
        self.rest.pop_back().or_else(|| self.head.take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    /// Against a `VecDeque` on random pushes and pops at both ends.
    #[test]
    fn it_is_a_fifo_like_a_vecdeque() {
        let mut line = DelayLine::new();
        let mut model = VecDeque::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let entry = (Instant(i), i as u32);
            match x % 7 {
                0..=2 => {
                    line.push_back(entry);
                    model.push_back(entry);
                }
                3 | 4 => assert_eq!(line.pop_front(), model.pop_front()),
                5 => assert_eq!(line.pop_back(), model.pop_back()),
                _ => {
                    if let (Some(a), Some(b)) = (line.back_mut(), model.back_mut()) {
                        a.1 += 1;
                        b.1 += 1;
                    }
                }
            }
            assert_eq!(line.len(), model.len());
            assert_eq!(line.has_behind_head(), model.len() > 1);
            assert_eq!(line.front(), model.front());
            assert_eq!(line.back(), model.back());
            let k = (x >> 20) as usize % 4;
            assert_eq!(line.get(k), model.get(k));
        }
        let drained: Vec<_> = core::iter::from_fn(|| line.pop_front()).collect();
        assert_eq!(drained, model.into_iter().collect::<Vec<_>>());
    }
}
