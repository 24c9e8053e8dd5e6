//! Readable units: rates, durations, byte sizes and queue limits, parsed
//! strictly and exactly. One grammar for every file pepkit reads: the
//! scenarios, the experiments and the daemon's `pep.toml` (which adds one
//! exception, documented in docs/daemon.md: a bare number there is bytes).
//!
//! * Rates are bits per second with SI prefixes (`k`/`K` = 1e3, `M` = 1e6,
//!   `G` = 1e9): `"10Mbps"`, `"10 Mbit/s"`, `"64kbps"`, `"1.5Mbps"`. Byte
//!   rates (`"MB/s"`) are refused with the equivalent in bits.
//! * Durations: `ns`, `us` (or `µs`), `ms`, `s`, `min`, `h`: `"0.5ms"`.
//! * Sizes are bytes: SI `KB`/`kB` = 1000, `MB`, `GB`; binary `KiB` = 1024,
//!   `MiB`, `GiB`; `B`. A bare number is refused: it is ambiguous.
//! * Queue limits: a number of packets (`100`, `"100pkt"`, `"100 packets"`),
//!   a byte size (`"150KB"`) or `"unlimited"`.
//!
//! Decimal strings are parsed as exact fractions (never through `f64`), and a
//! value that is not a whole number of the base unit (bits per second,
//! nanoseconds, bytes) is an error rather than silently rounded.

use std::fmt;

use pep_core::queue::QueueLimit;
use pep_core::{Duration, Rate};

/// A value that could not be read. The message says what was expected, with
/// an example, and what was wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnitError(String);

impl UnitError {
    pub fn message(&self) -> &str {
        &self.0
    }
}

const RATE_EXPECTED: &str = r#"expected a rate like "10Mbps" or "64kbit/s""#;
const DURATION_EXPECTED: &str = r#"expected a duration like "250ms" or "1s""#;
const SIZE_EXPECTED: &str = r#"expected a size like "1500B", "64KiB" (x1024) or "64KB" (x1000)"#;
const LIMIT_EXPECTED: &str = r#"expected a queue limit like 100 (packets), "100pkt" or "150KB""#;

fn fail<T>(expected: &str, input: &str, why: impl fmt::Display) -> Result<T, UnitError> {
    Err(UnitError(format!("{expected}, got {input:?}: {why}")))
}

/// A non-negative decimal read exactly: `mantissa / 10^scale`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Decimal {
    mantissa: u128,
    scale: u32,
}

impl Decimal {
    /// `self * num / den` if that is a whole number that fits a `u64`.
    fn times(self, num: u128, den: u128) -> Result<u64, &'static str> {
        let den = 10u128.pow(self.scale) * den;
        let scaled = self.mantissa.checked_mul(num).ok_or("too large")?;
        if scaled % den != 0 {
            return Err("not a whole number of the base unit");
        }
        u64::try_from(scaled / den).map_err(|_| "too large")
    }
}

/// Splits `"1.5 Mbps"` into the number and the unit, which may be separated
/// by spaces. Refuses signs, exponents and digit separators.
fn split(s: &str) -> Result<(Decimal, &str), &'static str> {
    let s = s.trim();
    if s.starts_with('-') {
        return Err("negative");
    }
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = (&s[..end], s[end..].trim_start());
    if num.is_empty() {
        return Err("no number");
    }
    let (int, frac) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if int.is_empty() || frac.contains('.') || (num.contains('.') && frac.is_empty()) {
        return Err("malformed number");
    }
    // 30 significant digits keep every product below 2^128.
    if int.len() + frac.len() > 30 {
        return Err("too many digits");
    }
    let mut mantissa: u128 = 0;
    for d in int.bytes().chain(frac.bytes()) {
        mantissa = mantissa * 10 + u128::from(d - b'0');
    }
    Ok((
        Decimal {
            mantissa,
            scale: frac.len() as u32,
        },
        unit,
    ))
}

/// Parses a rate in bits per second. Zero is accepted here; see
/// [`positive_rate`].
pub fn parse_rate(s: &str) -> Result<Rate, UnitError> {
    let (num, unit) = match split(s) {
        Ok(x) => x,
        Err("negative") => return fail(RATE_EXPECTED, s, "negative rate"),
        Err(why) => return fail(RATE_EXPECTED, s, why),
    };
    let (prefix, base) = split_prefix(unit);
    let mult: u128 = match prefix {
        "" => 1,
        "k" | "K" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "m" if base == "bps" || base == "bit/s" => {
            return fail(RATE_EXPECTED, s, "\"m\" is milli; write \"M\" for mega")
        }
        _ => return fail(RATE_EXPECTED, s, unknown_unit(unit)),
    };
    match base {
        "bps" | "bit/s" => {}
        "B/s" | "Bps" => {
            let hint = match num.times(8 * mult, 1) {
                Ok(bits) => format!(" ({})", Rate(bits)),
                Err(_) => String::new(),
            };
            return fail(
                RATE_EXPECTED,
                s,
                format!("that is bytes per second; rates are in bits per second{hint}"),
            );
        }
        _ => return fail(RATE_EXPECTED, s, unknown_unit(unit)),
    }
    match num.times(mult, 1) {
        Ok(bps) => Ok(Rate(bps)),
        Err(why) => fail(RATE_EXPECTED, s, why),
    }
}

fn split_prefix(unit: &str) -> (&str, &str) {
    match unit.chars().next() {
        Some(c @ ('k' | 'K' | 'M' | 'G' | 'm')) if unit.len() > 1 => unit.split_at(c.len_utf8()),
        _ => ("", unit),
    }
}

fn unknown_unit(unit: &str) -> String {
    if unit.is_empty() {
        "a bare number is ambiguous: add a unit".into()
    } else {
        format!("unknown unit {unit:?}")
    }
}

/// Refuses a zero rate, for fields where a link, a source or a pacer must
/// make progress.
pub fn positive_rate(r: Rate) -> Result<Rate, UnitError> {
    if r.0 == 0 {
        Err(UnitError(
            "the rate must be positive: at a zero rate nothing is ever sent".into(),
        ))
    } else {
        Ok(r)
    }
}

/// Parses a duration to exact integer nanoseconds. Zero is accepted here; see
/// [`positive_duration`].
pub fn parse_duration(s: &str) -> Result<Duration, UnitError> {
    let (num, unit) = match split(s) {
        Ok(x) => x,
        Err("negative") => return fail(DURATION_EXPECTED, s, "negative duration"),
        Err(why) => return fail(DURATION_EXPECTED, s, why),
    };
    let ns_per: u128 = match unit {
        "ns" => 1,
        "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "m" => {
            return fail(
                DURATION_EXPECTED,
                s,
                "\"m\" is ambiguous: write \"min\" or \"ms\"",
            )
        }
        _ => return fail(DURATION_EXPECTED, s, unknown_unit(unit)),
    };
    match num.times(ns_per, 1) {
        Ok(ns) => Ok(Duration(ns)),
        Err("not a whole number of the base unit") => {
            fail(DURATION_EXPECTED, s, "finer than one nanosecond")
        }
        Err(why) => fail(DURATION_EXPECTED, s, why),
    }
}

/// Refuses a zero duration, for fields where zero makes no sense (a run's
/// length, a sampling period).
pub fn positive_duration(d: Duration) -> Result<Duration, UnitError> {
    if d.0 == 0 {
        Err(UnitError("the duration must be positive".into()))
    } else {
        Ok(d)
    }
}

/// Parses a size in bytes. The unit is required: `KB` is 1000 bytes (SI),
/// `KiB` is 1024.
pub fn parse_bytes(s: &str) -> Result<u64, UnitError> {
    parse_bytes_with(s, SIZE_EXPECTED)
}

fn parse_bytes_with(s: &str, expected: &str) -> Result<u64, UnitError> {
    let (num, unit) = match split(s) {
        Ok(x) => x,
        Err("negative") => return fail(expected, s, "negative size"),
        Err(why) => return fail(expected, s, why),
    };
    let mult: u128 = match unit {
        "B" => 1,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "b" | "kb" | "Kb" | "Mb" | "Gb" | "bit" | "bits" => {
            return fail(
                expected,
                s,
                "lowercase b means bits; sizes are in bytes (B)",
            )
        }
        "kiB" | "kib" | "KIB" => return fail(expected, s, "write \"KiB\" for 1024 bytes"),
        _ => return fail(expected, s, unknown_unit(unit)),
    };
    num.times(mult, 1).or_else(|why| {
        let why = if why == "too large" {
            why
        } else {
            "not a whole number of bytes"
        };
        fail(expected, s, why)
    })
}

/// Parses a queue limit written as a string: `"100pkt"`, `"100 packets"`,
/// a bare `"100"` (packets, like the integer form), a byte size `"150KB"`, or
/// `"unlimited"`. Zero is refused: a queue must hold at least one packet.
pub fn parse_queue_limit(s: &str) -> Result<QueueLimit, UnitError> {
    let t = s.trim();
    if t == "unlimited" {
        return Ok(QueueLimit::Packets(u32::MAX));
    }
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let unit = t[digits..].trim_start();
    if digits > 0 && matches!(unit, "" | "p" | "pkt" | "pkts" | "packet" | "packets") {
        return match t[..digits].parse::<u32>() {
            Ok(n) => packets(n),
            Err(_) => fail(LIMIT_EXPECTED, s, "too many packets"),
        };
    }
    match parse_bytes_with(s, LIMIT_EXPECTED)? {
        0 => fail(LIMIT_EXPECTED, s, "a queue limit must be positive"),
        b => Ok(QueueLimit::Bytes(b)),
    }
}

/// A queue limit given as a TOML integer, which counts packets.
pub fn queue_limit_packets(n: i64) -> Result<QueueLimit, UnitError> {
    match u32::try_from(n) {
        Ok(n) => packets(n),
        Err(_) if n < 0 => fail(LIMIT_EXPECTED, &n.to_string(), "negative"),
        Err(_) => fail(LIMIT_EXPECTED, &n.to_string(), "too many packets"),
    }
}

fn packets(n: u32) -> Result<QueueLimit, UnitError> {
    if n == 0 {
        fail(LIMIT_EXPECTED, "0", "a queue limit must be positive")
    } else {
        Ok(QueueLimit::Packets(n))
    }
}

/// Formats a byte count the way a scenario would write it.
pub fn fmt_bytes(b: u64) -> String {
    for (unit, k) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if b >= k && b.rem_euclid(k) == 0 {
            return format!("{}{unit}", b / k);
        }
    }
    for (unit, k) in [("GB", 1_000_000_000u64), ("MB", 1_000_000), ("KB", 1_000)] {
        if b >= k && b.rem_euclid(k) == 0 {
            return format!("{}{unit}", b / k);
        }
    }
    format!("{b}B")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err<T: fmt::Debug>(r: Result<T, UnitError>) -> String {
        r.expect_err("should be refused").0
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("10Mbps"), Ok(Rate::mbps(10)));
        assert_eq!(parse_rate("10 Mbit/s"), Ok(Rate::mbps(10)));
        assert_eq!(parse_rate("64kbps"), Ok(Rate::kbps(64)));
        assert_eq!(parse_rate("64kbit/s"), Ok(Rate::kbps(64)));
        assert_eq!(parse_rate("64Kbps"), Ok(Rate::kbps(64)));
        assert_eq!(parse_rate("1Gbps"), Ok(Rate::mbps(1000)));
        assert_eq!(parse_rate("1 Gbit/s"), Ok(Rate::mbps(1000)));
        assert_eq!(parse_rate("9600bps"), Ok(Rate::bps(9600)));
        assert_eq!(parse_rate("9600 bit/s"), Ok(Rate::bps(9600)));
        assert_eq!(parse_rate("1.5Mbps"), Ok(Rate::bps(1_500_000)));
        assert_eq!(parse_rate("0.064Mbps"), Ok(Rate::kbps(64)));
        assert_eq!(parse_rate("0bps"), Ok(Rate(0)));
        assert_eq!(parse_rate(" 2Mbps "), Ok(Rate::mbps(2)));
    }

    #[test]
    fn rate_rejections() {
        let e = err(parse_rate("10MB/s"));
        assert!(e.starts_with(r#"expected a rate like "10Mbps" or "64kbit/s", got "10MB/s""#));
        assert!(e.contains("bits per second (80Mbps)"), "{e}");
        assert!(err(parse_rate("1KBps")).contains("(8kbps)"));
        assert!(err(parse_rate("10")).contains("bare number"));
        assert!(err(parse_rate("10mbps")).contains("milli"));
        assert!(err(parse_rate("10Tbps")).contains("unknown unit"));
        assert!(err(parse_rate("-1Mbps")).contains("negative rate"));
        assert!(err(parse_rate("1.5bps")).contains("whole number"));
        assert!(err(parse_rate("Mbps")).contains("no number"));
        assert!(err(parse_rate("1..5Mbps")).contains("malformed"));
        assert!(err(parse_rate("1.Mbps")).contains("malformed"));
        assert!(err(parse_rate("1e6bps")).contains("unknown unit"));
        assert!(err(parse_rate("99999999999Gbps")).contains("too large"));
        assert!(err(parse_rate("")).contains("no number"));
        assert!(positive_rate(Rate(0)).is_err());
        assert_eq!(positive_rate(Rate(1)), Ok(Rate(1)));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("0.5ms"), Ok(Duration(500_000)));
        assert_eq!(parse_duration("10us"), Ok(Duration(10_000)));
        assert_eq!(parse_duration("10µs"), Ok(Duration(10_000)));
        assert_eq!(parse_duration("10\u{3bc}s"), Ok(Duration(10_000)));
        assert_eq!(parse_duration("5ns"), Ok(Duration(5)));
        assert_eq!(parse_duration("2min"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("1 s"), Ok(Duration::from_secs(1)));
        // Exact where f64 is not: 0.1 s + 0.2 s style digits.
        assert_eq!(parse_duration("0.3s"), Ok(Duration(300_000_000)));
        assert_eq!(parse_duration("1.000000001s"), Ok(Duration(1_000_000_001)));
    }

    #[test]
    fn duration_rejections() {
        let e = err(parse_duration("-5ms"));
        assert!(e.starts_with(r#"expected a duration like "250ms" or "1s", got "-5ms""#));
        assert!(e.ends_with("negative duration"));
        assert!(err(parse_duration("0.5ns")).contains("finer than one nanosecond"));
        assert!(err(parse_duration("5")).contains("bare number"));
        assert!(err(parse_duration("5m")).contains("ambiguous"));
        assert!(err(parse_duration("5sec")).contains("unknown unit"));
        assert!(err(parse_duration("10000000h")).contains("too large"));
        assert!(positive_duration(Duration::ZERO).is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("1500B"), Ok(1500));
        assert_eq!(parse_bytes("64KiB"), Ok(65_536));
        assert_eq!(parse_bytes("64KB"), Ok(64_000));
        assert_eq!(parse_bytes("64kB"), Ok(64_000));
        assert_eq!(parse_bytes("1MiB"), Ok(1 << 20));
        assert_eq!(parse_bytes("10MB"), Ok(10_000_000));
        assert_eq!(parse_bytes("1GiB"), Ok(1 << 30));
        assert_eq!(parse_bytes("2GB"), Ok(2_000_000_000));
        assert_eq!(parse_bytes("1.5KiB"), Ok(1536));
        assert_eq!(parse_bytes("1.5 KB"), Ok(1500));
    }

    #[test]
    fn size_rejections() {
        let e = err(parse_bytes("1500"));
        assert!(e.starts_with(
            r#"expected a size like "1500B", "64KiB" (x1024) or "64KB" (x1000), got "1500""#
        ));
        assert!(e.contains("bare number"));
        assert!(err(parse_bytes("10Mb")).contains("bits"));
        assert!(err(parse_bytes("1kiB")).contains("KiB"));
        assert!(err(parse_bytes("0.5B")).contains("whole number of bytes"));
        assert!(err(parse_bytes("-1B")).contains("negative size"));
        assert!(err(parse_bytes("1TB")).contains("unknown unit"));
    }

    #[test]
    fn queue_limits() {
        assert_eq!(queue_limit_packets(100), Ok(QueueLimit::Packets(100)));
        assert_eq!(parse_queue_limit("100pkt"), Ok(QueueLimit::Packets(100)));
        assert_eq!(
            parse_queue_limit("100 packets"),
            Ok(QueueLimit::Packets(100))
        );
        assert_eq!(parse_queue_limit("1 packet"), Ok(QueueLimit::Packets(1)));
        assert_eq!(parse_queue_limit("100"), Ok(QueueLimit::Packets(100)));
        assert_eq!(parse_queue_limit("150KB"), Ok(QueueLimit::Bytes(150_000)));
        assert_eq!(parse_queue_limit("64KiB"), Ok(QueueLimit::Bytes(65_536)));
        assert_eq!(
            parse_queue_limit("unlimited"),
            Ok(QueueLimit::Packets(u32::MAX))
        );
    }

    #[test]
    fn queue_limit_rejections() {
        assert!(err(queue_limit_packets(0)).contains("must be positive"));
        assert!(err(queue_limit_packets(-3)).contains("negative"));
        assert!(err(queue_limit_packets(1 << 40)).contains("too many packets"));
        assert!(err(parse_queue_limit("0pkt")).contains("must be positive"));
        assert!(err(parse_queue_limit("0KB")).contains("must be positive"));
        assert!(err(parse_queue_limit("1.5pkt")).contains("unknown unit"));
        let e = err(parse_queue_limit("lots"));
        assert!(
            e.starts_with("expected a queue limit like 100 (packets)"),
            "{e}"
        );
    }

    #[test]
    fn fmt_bytes_round_trips() {
        for b in [1, 1000, 1040, 65_536, 625_000, 1 << 21, 3_000_000_000] {
            assert_eq!(parse_bytes(&fmt_bytes(b)), Ok(b));
        }
        assert_eq!(fmt_bytes(2 << 20), "2MiB");
        assert_eq!(fmt_bytes(625_000), "625KB");
    }
}
