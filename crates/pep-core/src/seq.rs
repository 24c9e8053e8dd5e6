//! TCP sequence numbers: 32-bit, compared modulo 2^32 (RFC 793 section 3.3).
//!
//! The simulator uses the same wrapping numbers as real TCP so that every
//! mechanism in the core runs unchanged on real packets.

use core::cmp::Ordering;
use core::fmt;
use core::ops::{Add, AddAssign, Sub};

#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Seq(pub u32);

impl Seq {
    /// Signed distance from `other` to `self`, valid while the two are less
    /// than 2^31 apart (windows are at most 2^30 with scaling).
    pub fn diff(self, other: Seq) -> i32 {
        self.0.wrapping_sub(other.0) as i32
    }
    pub fn lt(self, o: Seq) -> bool {
        self.diff(o) < 0
    }
    pub fn le(self, o: Seq) -> bool {
        self.diff(o) <= 0
    }
    pub fn gt(self, o: Seq) -> bool {
        self.diff(o) > 0
    }
    pub fn ge(self, o: Seq) -> bool {
        self.diff(o) >= 0
    }
    pub fn max(self, o: Seq) -> Seq {
        if self.ge(o) {
            self
        } else {
            o
        }
    }
    pub fn min(self, o: Seq) -> Seq {
        if self.le(o) {
            self
        } else {
            o
        }
    }
    /// Bytes from `from` up to `self`; zero if `self` is not after `from`.
    pub fn bytes_since(self, from: Seq) -> u32 {
        let d = self.diff(from);
        if d > 0 {
            d as u32
        } else {
            0
        }
    }
}

impl PartialOrd for Seq {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.diff(*other).cmp(&0))
    }
}

impl Add<u32> for Seq {
    type Output = Seq;
    fn add(self, n: u32) -> Seq {
        Seq(self.0.wrapping_add(n))
    }
}
impl AddAssign<u32> for Seq {
    fn add_assign(&mut self, n: u32) {
        self.0 = self.0.wrapping_add(n);
    }
}
impl Sub<u32> for Seq {
    type Output = Seq;
    fn sub(self, n: u32) -> Seq {
        Seq(self.0.wrapping_sub(n))
    }
}

impl fmt::Debug for Seq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Seq({})", self.0)
    }
}
impl fmt::Display for Seq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn compares_across_wrap() {
        let a = Seq(u32::MAX - 10);
        let b = a + 20;
        assert_eq!(b.0, 9);
        assert!(a.lt(b) && b.gt(a));
        assert_eq!(b.diff(a), 20);
        assert_eq!(b.bytes_since(a), 20);
        assert_eq!(a.bytes_since(b), 0);
        assert_eq!(a.max(b), b);
    }

    proptest! {
        #[test]
        fn add_then_diff_is_identity(base: u32, n in 0u32..(1 << 31)) {
            let s = Seq(base);
            prop_assert_eq!((s + n).diff(s), n as i32);
            prop_assert!((s + n).ge(s));
        }
    }
}
