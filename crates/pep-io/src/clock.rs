//! The real clock, as the core's `Instant`, and the thread settings that
//! make timers precise.
//!
//! The core's models take `now` as an argument; here `now` is
//! `CLOCK_MONOTONIC` minus an epoch. The monotonic clock is shared by every
//! namespace and thread on the machine, so a timestamp written by a sender in
//! one namespace can be compared with the receiver's clock in another: the
//! probes measure one-way delay that way.

use pep_core::{Duration, Instant};

/// Nanoseconds of `CLOCK_MONOTONIC`.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `CLOCK_MONOTONIC` since an epoch, as a core [`Instant`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    epoch_ns: u64,
}

impl Clock {
    /// A clock whose zero is now.
    pub fn start() -> Clock {
        Clock {
            epoch_ns: monotonic_ns(),
        }
    }
    /// A clock whose zero is the given `CLOCK_MONOTONIC` reading.
    pub fn from_epoch_ns(epoch_ns: u64) -> Clock {
        Clock { epoch_ns }
    }
    pub fn epoch_ns(&self) -> u64 {
        self.epoch_ns
    }
    pub fn now(&self) -> Instant {
        Instant(monotonic_ns().saturating_sub(self.epoch_ns))
    }
    /// `t` as a `CLOCK_MONOTONIC` reading.
    pub fn to_monotonic_ns(&self, t: Instant) -> u64 {
        self.epoch_ns.saturating_add(t.as_nanos())
    }
    /// Sleeps until `t` (absolute, so oversleeping never accumulates).
    pub fn sleep_until(&self, t: Instant) {
        sleep_until_ns(self.to_monotonic_ns(t));
    }
}

/// Sleeps until `CLOCK_MONOTONIC` reads `deadline_ns`.
pub fn sleep_until_ns(deadline_ns: u64) {
    let ts = timespec(deadline_ns);
    // EINTR just ends the sleep early; callers re-check the time.
    // SAFETY: `ts` is valid; a null remainder is allowed with TIMER_ABSTIME.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
}

/// `ns` nanoseconds as a `timespec` (absolute sleeps, poll timeouts).
pub fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// What [`tune_timing_thread`] achieved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadTiming {
    /// The thread runs under `SCHED_FIFO`.
    pub realtime: bool,
}

/// Makes the calling thread's sleeps end on time: a 1 ns timer slack
/// (the default 50 us lets the kernel coalesce wake-ups) and, if `realtime`,
/// `SCHED_FIFO` so that a compiler on the other cores cannot delay a packet
/// by a scheduling quantum. Both are best effort; the result says what held.
pub fn tune_timing_thread(realtime: bool, priority: i32) -> ThreadTiming {
    // SAFETY: prctl with PR_SET_TIMERSLACK takes an integer argument.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    let mut out = ThreadTiming::default();
    if realtime {
        let param = libc::sched_param {
            sched_priority: priority,
        };
        // SAFETY: pid 0 is the calling thread; `param` is valid.
        out.realtime = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0;
    }
    out
}

/// A machine-wide request that idle CPUs poll instead of halting, held for
/// as long as this value lives (the kernel's CPU latency QoS: 0 us written
/// to `/dev/cpu_dma_latency`; closing the file withdraws it, even when the
/// process dies).
///
/// A halted CPU, and in a virtual machine a halted vCPU that the host has
/// descheduled, takes from tens of microseconds to milliseconds to wake for
/// a timer or a frame. On this project's 2-vCPU KVM machine a sparse train
/// through a 10 Mbit/s link saw a median excess delay of 0.16-0.20 ms with
/// halting and 0.06-0.12 ms with polling (docs/lab.md). The price is idle
/// CPUs spinning while the lab is up.
#[derive(Debug)]
pub struct IdlePolling {
    _request: std::fs::File,
}

impl IdlePolling {
    /// Makes the request, or `None` when the kernel refuses it (not root,
    /// no `/dev/cpu_dma_latency`).
    pub fn request() -> Option<IdlePolling> {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/cpu_dma_latency")
            .ok()?;
        // The device takes a binary s32 in microseconds.
        f.write_all(&0i32.to_ne_bytes()).ok()?;
        Some(IdlePolling { _request: f })
    }

    /// The machine's CPU latency limit now, in microseconds: the smallest
    /// of all requests held (0 while one [`IdlePolling`] lives), or the
    /// kernel's default (2e9) when none is. `None` when it cannot be read.
    pub fn current_limit_us() -> Option<i32> {
        use std::io::Read;
        let mut f = std::fs::File::open("/dev/cpu_dma_latency").ok()?;
        let mut v = [0u8; 4];
        f.read_exact(&mut v).ok()?;
        Some(i32::from_ne_bytes(v))
    }
}

/// A histogram of durations in 5 us buckets up to 20 ms (larger values
/// share the last bucket; the maximum is kept exactly): enough to report
/// percentiles of timer lateness without storing every sample.
#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    max_ns: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; Self::BUCKETS],
            total: 0,
            max_ns: 0,
        }
    }
}

impl Histogram {
    const WIDTH_NS: u64 = 5_000;
    const BUCKETS: usize = 4_000;

    pub fn record(&mut self, d: Duration) {
        let ns = d.as_nanos();
        let b = ((ns / Self::WIDTH_NS) as usize).min(Self::BUCKETS - 1);
        self.counts[b] += 1;
        self.total += 1;
        self.max_ns = self.max_ns.max(ns);
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    pub fn max(&self) -> Duration {
        Duration(self.max_ns)
    }

    /// An upper bound of the `q` quantile (0..=1), within one bucket.
    pub fn quantile(&self, q: f64) -> Duration {
        if self.total == 0 {
            return Duration::ZERO;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank && b + 1 < Self::BUCKETS {
                return Duration(((b as u64 + 1) * Self::WIDTH_NS).min(self.max_ns));
            }
        }
        Duration(self.max_ns)
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.total += other.total;
        self.max_ns = self.max_ns.max(other.max_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_is_monotonic_from_its_epoch() {
        let c = Clock::start();
        let a = c.now();
        let b = c.now();
        assert!(b >= a);
        assert!(a < Instant(1_000_000_000));
        assert_eq!(c.to_monotonic_ns(Instant(5)), c.epoch_ns() + 5);
    }

    #[test]
    fn histogram_quantiles_bound_the_samples() {
        let mut h = Histogram::default();
        for us in 1..=1000u64 {
            h.record(Duration::from_micros(us));
        }
        assert_eq!(h.quantile(0.5), Duration::from_micros(505));
        assert_eq!(h.quantile(0.99), Duration::from_micros(995));
        assert_eq!(h.max(), Duration::from_micros(1000));
        assert_eq!(h.count(), 1000);
        h.record(Duration::from_secs(1));
        assert_eq!(h.quantile(1.0), Duration::from_secs(1));
    }
}
