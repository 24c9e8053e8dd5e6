//! Integer time and rates.
//!
//! Time is a count of nanoseconds since the start of a run (simulator) or since
//! the driver's epoch (daemon). Nothing in the core reads a clock: the driver
//! passes `now` in. Integer arithmetic keeps every result identical across
//! machines.

use core::fmt;
use core::ops::{Add, AddAssign, Sub, SubAssign};

/// A point in time, in nanoseconds since the driver's epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(pub u64);

/// A span of time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub u64);

impl Instant {
    pub const ZERO: Instant = Instant(0);
    pub const MAX: Instant = Instant(u64::MAX);

    pub const fn from_nanos(ns: u64) -> Self {
        Instant(ns)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    /// Time elapsed since `earlier`, zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}

impl Duration {
    pub const ZERO: Duration = Duration(0);
    pub const MAX: Duration = Duration(u64::MAX);

    pub const fn from_nanos(ns: u64) -> Self {
        Duration(ns)
    }
    pub const fn from_micros(us: u64) -> Self {
        Duration(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Self {
        Duration(s * 1_000_000_000)
    }
    /// Rounds to the nearest nanosecond; negative or NaN input gives zero.
    pub fn from_secs_f64(s: f64) -> Self {
        if s.is_nan() || s <= 0.0 {
            Duration(0)
        } else {
            Duration(libm::round(s * 1e9) as u64)
        }
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 * 1e-6
    }
    pub fn saturating_sub(self, o: Duration) -> Duration {
        Duration(self.0.saturating_sub(o.0))
    }
}

impl core::ops::Mul<u64> for Duration {
    type Output = Duration;
    /// Saturates at `Duration::MAX`.
    fn mul(self, k: u64) -> Duration {
        Duration(self.0.saturating_mul(k))
    }
}

impl core::ops::Div<u64> for Duration {
    type Output = Duration;
    /// Divides by `k`, treating zero as one (a duration never becomes a panic).
    fn div(self, k: u64) -> Duration {
        Duration(self.0 / k.max(1))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(d.0))
    }
}
impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Saturates at zero: time never runs backwards in a driver.
    fn sub(self, o: Instant) -> Duration {
        Duration(self.0.saturating_sub(o.0))
    }
}
impl Add for Duration {
    type Output = Duration;
    fn add(self, d: Duration) -> Duration {
        Duration(self.0.saturating_add(d.0))
    }
}
impl AddAssign for Duration {
    fn add_assign(&mut self, d: Duration) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub for Duration {
    type Output = Duration;
    fn sub(self, d: Duration) -> Duration {
        Duration(self.0.saturating_sub(d.0))
    }
}
impl SubAssign for Duration {
    fn sub_assign(&mut self, d: Duration) {
        self.0 = self.0.saturating_sub(d.0);
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        if ns.is_multiple_of(1_000_000_000) {
            write!(f, "{}s", ns / 1_000_000_000)
        } else if ns.is_multiple_of(1_000_000) {
            write!(f, "{}ms", ns / 1_000_000)
        } else if ns.is_multiple_of(1_000) {
            write!(f, "{}us", ns / 1_000)
        } else {
            write!(f, "{}ns", ns)
        }
    }
}
impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.9}s", self.as_secs_f64())
    }
}

/// A data rate in bits per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(pub u64);

impl Rate {
    pub const fn bps(bps: u64) -> Self {
        Rate(bps)
    }
    pub const fn kbps(k: u64) -> Self {
        Rate(k * 1_000)
    }
    pub const fn mbps(m: u64) -> Self {
        Rate(m * 1_000_000)
    }
    pub const fn as_bps(self) -> u64 {
        self.0
    }
    pub fn as_mbps_f64(self) -> f64 {
        self.0 as f64 * 1e-6
    }
    /// Serialization time of `bytes` at this rate, rounded up to a whole
    /// nanosecond so a link never runs faster than configured.
    pub fn tx_time(self, bytes: u64) -> Duration {
        if self.0 == 0 {
            return Duration::MAX;
        }
        let bits = bytes as u128 * 8 * 1_000_000_000;
        Duration(bits.div_ceil(self.0 as u128) as u64)
    }
    /// Bytes this rate carries in `d`, rounded down.
    pub fn bytes_in(self, d: Duration) -> u64 {
        (self.0 as u128 * d.0 as u128 / 8_000_000_000) as u64
    }
    /// The rate that carries `bytes` in `d`.
    pub fn from_bytes_over(bytes: u64, d: Duration) -> Rate {
        if d.0 == 0 {
            return Rate(0);
        }
        Rate((bytes as u128 * 8_000_000_000 / d.0 as u128) as u64)
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b >= 1_000_000_000 && b.is_multiple_of(1_000_000) {
            write!(f, "{}Gbps", b as f64 / 1e9)
        } else if b >= 1_000_000 && b.is_multiple_of(1_000) {
            write!(f, "{}Mbps", b as f64 / 1e6)
        } else if b >= 1_000 {
            write!(f, "{}kbps", b as f64 / 1e3)
        } else {
            write!(f, "{}bps", b)
        }
    }
}

/// Output formatting shared by every writer of pepkit's tidy files (the
/// simulator and the lab write the same shapes): part of the file format,
/// so identical on every machine.
pub mod fmt_out {
    use alloc::format;
    use alloc::string::String;

    use super::{Duration, Instant};

    /// Rounds to 6 decimals (with `libm`, not the platform's maths).
    pub fn round6(x: f64) -> f64 {
        libm::round(x * 1e6) / 1e6
    }

    /// `bytes` over `d` in Mbit/s, rounded to 6 decimals; zero for an empty span.
    pub fn mbps(bytes: u64, d: Duration) -> f64 {
        if d == Duration::ZERO {
            0.0
        } else {
            round6(bytes as f64 * 8.0 / d.as_secs_f64() / 1e6)
        }
    }

    /// Seconds as an exact decimal string ("1.25", "0.0001", "3").
    pub fn secs(t: Instant) -> String {
        let ns = t.as_nanos();
        let mut s = format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_formats_are_exact() {
        use super::fmt_out::{mbps, secs};
        assert_eq!(secs(Instant(1_250_000_000)), "1.25");
        assert_eq!(secs(Instant(3_000_000_000)), "3");
        assert_eq!(secs(Instant(100_000)), "0.0001");
        assert_eq!(secs(Instant(0)), "0");
        assert_eq!(mbps(1_250_000, Duration::from_secs(1)), 10.0);
        assert_eq!(mbps(1, Duration::ZERO), 0.0);
    }

    #[test]
    fn tx_time_rounds_up() {
        // 1040 B at 100 Mbit/s = 83.2 us.
        assert_eq!(Rate::mbps(100).tx_time(1040), Duration(83_200));
        // 1 B at 3 bps = 8/3 s, rounded up.
        assert_eq!(Rate::bps(3).tx_time(1), Duration(2_666_666_667));
    }

    #[test]
    fn bytes_in_inverts_tx_time() {
        let r = Rate::mbps(10);
        assert_eq!(r.bytes_in(Duration::from_secs(1)), 1_250_000);
        assert_eq!(Rate::from_bytes_over(1_250_000, Duration::from_secs(1)), r);
    }

    #[test]
    fn instant_arithmetic_saturates() {
        let t = Instant(5);
        assert_eq!(t - Instant(10), Duration::ZERO);
        assert_eq!(Instant::MAX + Duration(1), Instant::MAX);
    }

    #[test]
    fn display_picks_largest_exact_unit() {
        assert_eq!(Duration::from_millis(250).to_string(), "250ms");
        assert_eq!(Duration::from_secs(2).to_string(), "2s");
        assert_eq!(Duration(1500).to_string(), "1500ns");
        assert_eq!(Rate::mbps(10).to_string(), "10Mbps");
        assert_eq!(Rate::kbps(64).to_string(), "64kbps");
    }
}
