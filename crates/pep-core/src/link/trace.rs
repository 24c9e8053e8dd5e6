//! Trace-driven service in mahimahi's `mm-link` format.
//!
//! A trace is one line per delivery opportunity: an integer millisecond
//! from the trace's start at which up to [`OPPORTUNITY_BYTES`] may leave
//! the queue. The trace repeats, each repetition starting where the
//! previous one's last millisecond falls. This follows mahimahi's
//! `LinkQueue` (`src/frontend/link_queue.cc`) exactly:
//!
//! * an opportunity at `T` serves only packets that arrived before `T`
//!   (mahimahi burns the opportunities due before it enqueues an arrival);
//! * the bytes of one opportunity are shared: several small packets may
//!   leave in one, and a packet continues in the next opportunity with the
//!   bytes it still needs; it leaves at the opportunity that carries its
//!   last byte;
//! * bytes of an opportunity that no queued packet takes are lost;
//! * file rules: no empty line, integers only, never decreasing, at least
//!   one line, and the last one above zero.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::time::{Duration, Instant};

/// The bytes one opportunity carries (mahimahi's `PACKET_SIZE`).
pub const OPPORTUNITY_BYTES: u64 = 1500;

/// A parsed trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MmTrace {
    /// Opportunity times in ms, non-decreasing; the last is the period.
    ms: Vec<u64>,
}

/// Why a trace was refused: the line (1-based; 0 for the whole file) and
/// what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    pub line: usize,
    pub message: String,
}

impl MmTrace {
    /// Parses the text of a trace file.
    pub fn parse(text: &str) -> Result<MmTrace, TraceError> {
        let err = |line: usize, message: String| Err(TraceError { line, message });
        let mut ms: Vec<u64> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let n = i + 1;
            if line.is_empty() {
                return err(n, "empty line (each line is one millisecond)".to_string());
            }
            let Ok(t) = line.parse::<u64>() else {
                return err(
                    n,
                    alloc::format!("{line:?} is not a whole number of milliseconds"),
                );
            };
            if let Some(&prev) = ms.last() {
                if t < prev {
                    return err(
                        n,
                        alloc::format!("{t} ms comes after {prev} ms: times must not decrease"),
                    );
                }
            }
            ms.push(t);
        }
        match ms.last() {
            None => err(
                0,
                "the trace is empty (no delivery opportunities)".to_string(),
            ),
            Some(0) => err(
                ms.len(),
                "the trace must last longer than 0 ms (its last line is its length)".to_string(),
            ),
            Some(_) => Ok(MmTrace { ms }),
        }
    }

    /// Opportunities in one repetition.
    pub fn opportunities(&self) -> u64 {
        self.ms.len() as u64
    }

    /// One repetition's length (its last millisecond).
    pub fn period(&self) -> Duration {
        Duration::from_millis(*self.ms.last().expect("never empty"))
    }

    /// Opportunities at or before `off` after the trace's start (counted
    /// over its repetitions): what a link never idle by then has used.
    pub fn opportunities_until(&self, off: Duration) -> u64 {
        self.first_after(off.as_nanos())
    }

    /// Offset from the trace's start of opportunity `n` (counted over all
    /// repetitions).
    fn offset(&self, n: u64) -> u64 {
        let len = self.ms.len() as u64;
        let period = *self.ms.last().expect("never empty");
        ((n / len) * period + self.ms[(n % len) as usize]) * 1_000_000
    }

    /// The first opportunity strictly after `off` ns from the start.
    fn first_after(&self, off: u64) -> u64 {
        let len = self.ms.len() as u64;
        let period_ns = *self.ms.last().expect("never empty") * 1_000_000;
        let c = off / period_ns;
        let r = off - c * period_ns;
        let i = self.ms.partition_point(|&m| m * 1_000_000 <= r) as u64;
        // Past the cycle's last one: the next cycle's first, which is at or
        // after its start, after `off`.
        c * len + i
    }
}

/// A direction's place in its trace.
#[derive(Clone, Debug)]
pub(crate) struct TraceCursor {
    trace: alloc::sync::Arc<MmTrace>,
    /// When the trace starts.
    epoch: Instant,
    /// The next opportunity no packet has used.
    next: u64,
    /// Bytes left in opportunity `next - 1`, which the last packet ended
    /// in.
    left: u64,
}

impl TraceCursor {
    pub(crate) fn new(trace: alloc::sync::Arc<MmTrace>, epoch: Instant) -> Self {
        TraceCursor {
            trace,
            epoch,
            next: 0,
            left: 0,
        }
    }

    /// When a packet of `len` bytes whose transmission starts at `at`
    /// leaves. `continuing`: the previous packet left at `at` and this one
    /// was queued behind it, so it may use what that opportunity has left.
    pub(crate) fn tx_end(&mut self, at: Instant, len: u32, continuing: bool) -> Instant {
        let mut need = len as u64;
        if continuing {
            if need <= self.left {
                self.left -= need;
                return at;
            }
            need -= self.left;
        } else {
            // The transmitter was idle: opportunities up to `at` went
            // unused (those at `at` too: they were burnt before the
            // arrival).
            let off = at.saturating_since(self.epoch).as_nanos();
            let first = if at < self.epoch {
                0
            } else {
                self.trace.first_after(off)
            };
            self.next = self.next.max(first);
        }
        let k = need.div_ceil(OPPORTUNITY_BYTES);
        self.next += k;
        self.left = k * OPPORTUNITY_BYTES - need;
        self.epoch + Duration(self.trace.offset(self.next - 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::sync::Arc;

    #[test]
    fn bad_lines_are_refused_with_their_number() {
        let line = |t: &str| MmTrace::parse(t).unwrap_err().line;
        assert_eq!(line("0\n5\nx\n"), 3);
        assert_eq!(line("0\n5\n4\n"), 3);
        assert_eq!(line("1\n\n2\n"), 2);
        assert_eq!(line("1\n-2\n"), 2);
        assert_eq!(line("1.5\n"), 1);
        assert_eq!(line(""), 0);
        assert_eq!(line("0\n0\n"), 2);
        assert!(MmTrace::parse("0\n0\n3\n").is_ok());
        assert_eq!(
            MmTrace::parse("1\n").unwrap().period(),
            Duration::from_millis(1)
        );
    }

    fn at_ms(ms: u64) -> Instant {
        Instant(ms * 1_000_000)
    }

    #[test]
    fn opportunities_are_shared_carried_over_and_lost_when_idle() {
        // Opportunities at 2, 2, 5 ms; period 5 ms, so the next cycle's
        // are at 7, 7, 10.
        let t = Arc::new(MmTrace::parse("2\n2\n5\n").unwrap());
        let mut c = TraceCursor::new(t, Instant::ZERO);
        // Two 700-byte packets share the first opportunity.
        assert_eq!(c.tx_end(at_ms(0), 700, false), at_ms(2));
        assert_eq!(c.tx_end(at_ms(2), 700, true), at_ms(2));
        // A 1000-byte packet takes the 100 bytes left and 900 of the next.
        assert_eq!(c.tx_end(at_ms(2), 1000, true), at_ms(2));
        // 1500 more: 600 left at 2 ms, 900 of the one at 5 ms.
        assert_eq!(c.tx_end(at_ms(2), 1500, true), at_ms(5));
        // Idle at 5 ms exactly: the rest of the 5 ms one is burnt; an
        // arrival then waits for 7 ms.
        assert_eq!(c.tx_end(at_ms(5), 100, false), at_ms(7));
        // Idle from 8 ms: both 7 ms bytes are gone, 10 ms is next.
        assert_eq!(c.tx_end(at_ms(8), 1500, false), at_ms(10));
    }

    #[test]
    fn a_saturated_cursor_uses_every_opportunity_across_repetitions() {
        let t = Arc::new(MmTrace::parse("0\n1\n1\n3\n").unwrap());
        // Offered before the trace starts: its first opportunity is usable.
        let mut c = TraceCursor::new(t, Instant(500));
        let mut at = Instant::ZERO;
        let mut ends = alloc::vec::Vec::new();
        for k in 0..8 {
            at = c.tx_end(at, 1500, k > 0);
            ends.push((at.0 - 500) / 1_000_000);
        }
        // Cycle 2 starts at 3 ms: its "0" coincides with cycle 1's "3".
        assert_eq!(ends, [0, 1, 1, 3, 3, 4, 4, 6]);
    }
}
