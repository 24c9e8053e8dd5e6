//! A value read from a scenario with the byte range it was written at.
//!
//! The copies of a `[[repeat]]` are read one at a time, each from a short
//! text of its own, so that 100,000 copies never sit in one parsed
//! document. Their ranges must still point into the one expanded text
//! that places them all (which is never built): reading a copy under
//! [`with_base`] moves every range read by the copy's start in it.

use std::cell::Cell;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Range;

use serde::{Deserialize, Deserializer};
use toml::Spanned;

thread_local! {
    /// Added to every range read on this thread (0 outside [`with_base`]).
    static BASE: Cell<usize> = const { Cell::new(0) };
}

/// Runs `read` with `base` added to every range it reads.
pub(crate) fn with_base<R>(base: usize, read: impl FnOnce() -> R) -> R {
    /// Puts the previous base back, even if `read` panics.
    struct Restore(usize);
    impl Drop for Restore {
        fn drop(&mut self) {
            BASE.with(|b| b.set(self.0));
        }
    }
    let _restore = Restore(BASE.with(|b| b.replace(base)));
    read()
}

/// `range` moved by the current base.
pub(crate) fn placed(range: Range<usize>) -> Range<usize> {
    let base = BASE.with(Cell::get);
    range.start + base..range.end + base
}

/// A value and where it was written; compared by value alone, as
/// `toml::Spanned` is.
#[derive(Clone)]
pub(crate) struct S<T> {
    span: Range<usize>,
    value: T,
}

impl<T> S<T> {
    pub(crate) fn span(&self) -> Range<usize> {
        self.span.clone()
    }

    pub(crate) fn get_ref(&self) -> &T {
        &self.value
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for S<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = Spanned::<T>::deserialize(d)?;
        let span = placed(s.span());
        Ok(S {
            span,
            value: s.into_inner(),
        })
    }
}

impl<T: fmt::Debug> fmt::Debug for S<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

impl<T: PartialEq> PartialEq for S<T> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<T: Eq> Eq for S<T> {}

impl<T: Hash> Hash for S<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.value.hash(state);
    }
}

impl<T: PartialOrd> PartialOrd for S<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        self.value.partial_cmp(&other.value)
    }
}

impl<T: Ord> Ord for S<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.value.cmp(&other.value)
    }
}
