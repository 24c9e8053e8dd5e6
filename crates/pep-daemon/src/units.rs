//! Written-out units in the config: `"4MiB"`, `"10s"`, `"20Mbit/s"`, in
//! the scenarios' grammar (`pep_model::units`, docs/scenario-format.md):
//! KB = 1000 bytes, KiB = 1024, rates in bits per second, durations from
//! `ns` to `h`, exact decimals, nothing rounded.
//!
//! One exception, kept because the config has always promised it
//! (`buffer_start = "208000"` in pep.example.toml): a size written as a
//! bare number counts bytes. A bare rate (bits or bytes per second?) or
//! duration (milliseconds or seconds?) is ambiguous and refused.
//! The callers prefix each error with its field.

use pep_model::units;

/// Bytes: `B`, `KB`/`kB`, `KiB`, `MB`, `MiB`, `GB`, `GiB`, or a bare
/// number of bytes.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t
            .parse()
            .map_err(|_| format!("{s:?}: too large for a number of bytes"));
    }
    units::parse_bytes(s).map_err(|e| e.to_string())
}

/// A duration: `ns`, `us` (or `µs`), `ms`, `s`, `min`, `h`.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let d = units::parse_duration(s).map_err(|e| e.to_string())?;
    Ok(std::time::Duration::from_nanos(d.0))
}

/// A rate in bits per second: `bps` or `bit/s`, with `k`/`K`, `M`, `G`.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    units::parse_rate(s)
        .map(|r| r.as_bps())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_scenarios_grammar() {
        assert_eq!(parse_bytes("4MiB"), Ok(4 << 20));
        assert_eq!(parse_bytes("1.5KB"), Ok(1500));
        assert_eq!(parse_bytes("64kB"), Ok(64_000));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2min"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("500us"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("500µs"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_rate("20Mbps"), Ok(20_000_000));
        assert_eq!(parse_rate("10Mbit/s"), Ok(10_000_000));
        assert_eq!(parse_rate("60kbps"), Ok(60_000));
        assert_eq!(parse_rate("1.5Mbps"), Ok(1_500_000));
    }

    #[test]
    fn bare_sizes_are_bytes() {
        assert_eq!(parse_bytes("208000"), Ok(208_000));
        assert_eq!(parse_bytes(" 4096 "), Ok(4096));
        let e = parse_bytes("99999999999999999999999").unwrap_err();
        assert!(e.contains("too large"), "{e}");
    }

    #[test]
    fn ambiguous_or_inexact_values_are_refused() {
        for (e, says) in [
            (parse_rate("10").unwrap_err(), "bare number"),
            (parse_duration("10").unwrap_err(), "bare number"),
            (parse_rate("10MB/s").unwrap_err(), "(80Mbps)"),
            (parse_rate("10mbps").unwrap_err(), "milli"),
            (parse_rate("-1Mbps").unwrap_err(), "negative"),
            (parse_rate("").unwrap_err(), "no number"),
            (parse_duration("5m").unwrap_err(), "ambiguous"),
            (parse_duration("0.0000000001ms").unwrap_err(), "nanosecond"),
            (parse_bytes("4 parsecs").unwrap_err(), "unknown unit"),
            (parse_bytes("10Mb").unwrap_err(), "bits"),
            (parse_bytes("0.5B").unwrap_err(), "whole number"),
        ] {
            assert!(e.contains(says), "{e}");
        }
    }
}
