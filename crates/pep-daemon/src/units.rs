//! Written-out units in the config: `"4MiB"`, `"10s"`, `"20Mbps"`, as in
//! the scenarios (KB = 1000 bytes, KiB = 1024). Kept here, not shared with
//! the simulator, because the daemon does not depend on it.

fn split(s: &str) -> (&str, &str) {
    let s = s.trim();
    let i = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    (&s[..i], s[i..].trim())
}

fn number(n: &str, whole: &str) -> Result<f64, String> {
    n.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| format!("{whole:?}: expected a number followed by a unit"))
}

/// Bytes: `B`, `KB`, `KiB`, `MB`, `MiB`, `GB`, `GiB`.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let (n, unit) = split(s);
    let v = number(n, s)?;
    let mult = match unit {
        "B" | "" => 1.0,
        "KB" => 1e3,
        "KiB" => 1024.0,
        "MB" => 1e6,
        "MiB" => 1048576.0,
        "GB" => 1e9,
        "GiB" => 1073741824.0,
        u => {
            return Err(format!(
                "{s:?}: unknown size unit {u:?} (B, KB, KiB, MB, MiB, GB, GiB)"
            ))
        }
    };
    let b = v * mult;
    if b > u64::MAX as f64 / 2.0 {
        return Err(format!("{s:?}: too large"));
    }
    Ok(b.round() as u64)
}

/// A duration: `ms`, `s`, `min`, `h`.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let (n, unit) = split(s);
    let v = number(n, s)?;
    let secs = match unit {
        "ms" => v / 1e3,
        "s" => v,
        "min" => v * 60.0,
        "h" => v * 3600.0,
        "" => return Err(format!("{s:?}: a duration needs a unit (ms, s, min, h)")),
        u => {
            return Err(format!(
                "{s:?}: unknown duration unit {u:?} (ms, s, min, h)"
            ))
        }
    };
    if secs > 1e9 {
        return Err(format!("{s:?}: too long"));
    }
    let d = std::time::Duration::from_secs_f64(secs);
    if d.is_zero() && secs > 0.0 {
        // It would read as 0, which some fields take as "off".
        return Err(format!("{s:?}: shorter than a nanosecond"));
    }
    Ok(d)
}

/// A rate in bits per second: `bps`, `Kbps`, `Mbps`, `Gbps`.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let (n, unit) = split(s);
    let v = number(n, s)?;
    let mult = match unit {
        "bps" => 1.0,
        "Kbps" | "kbps" => 1e3,
        "Mbps" => 1e6,
        "Gbps" => 1e9,
        u => {
            return Err(format!(
                "{s:?}: unknown rate unit {u:?} (bps, Kbps, Mbps, Gbps)"
            ))
        }
    };
    let r = v * mult;
    if r > 1e15 {
        return Err(format!("{s:?}: too large"));
    }
    Ok(r.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_bytes("4MiB"), Ok(4 << 20));
        assert_eq!(parse_bytes("1.5KB"), Ok(1500));
        assert_eq!(
            parse_duration("250ms"),
            Ok(std::time::Duration::from_millis(250))
        );
        assert_eq!(
            parse_duration("2min"),
            Ok(std::time::Duration::from_secs(120))
        );
        assert_eq!(parse_rate("20Mbps"), Ok(20_000_000));
        assert!(parse_bytes("4 parsecs")
            .unwrap_err()
            .contains("unknown size unit"));
        assert!(parse_duration("10").unwrap_err().contains("needs a unit"));
        // Not rounded to 0 ("off" for idle_timeout) without a word.
        let tiny = parse_duration("0.0000000001ms").unwrap_err();
        assert!(tiny.contains("shorter than a nanosecond"), "{tiny}");
        assert_eq!(parse_duration("0s"), Ok(std::time::Duration::ZERO));
        assert!(parse_rate("-1Mbps").is_err());
        assert!(parse_rate("").is_err());
    }
}
