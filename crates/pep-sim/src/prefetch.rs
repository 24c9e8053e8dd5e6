//! Cache prefetch hints. With thousands of flows a port or flow has left
//! the caches between two of its packets; the engine asks for the lines an
//! event will touch a few events before it runs. Hints only: nothing is
//! read, so nothing a run decides can depend on them.

/// Prefetches the cache lines of `len` bytes of `r` from byte `from`.
#[inline(always)]
pub(crate) fn bytes<T>(r: &T, from: usize, len: usize) {
    let base = (r as *const T).cast::<i8>();
    let mut off = from;
    while off < from + len {
        at(base.wrapping_add(off));
        off += 64;
    }
}

/// Prefetches the cache line at `at`, which may lie past the end of what
/// it was computed from (a prefetch never faults). A no-op off x86-64.
#[inline(always)]
pub(crate) fn at(at: *const i8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of the x86-64 baseline, and a prefetch neither
    // faults nor reads into the program, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}
