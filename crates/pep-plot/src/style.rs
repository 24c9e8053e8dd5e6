//! Colours, marker shapes and axis tick labels.

/// An opaque RGB colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

/// The Okabe–Ito palette (Okabe & Ito, "Color Universal Design", 2002),
/// distinguishable with the common colour-vision deficiencies, ordered so
/// the first colours contrast most on white (yellow last). Series beyond
/// eight reuse colours; scatter and error-bar series also change marker.
pub const PALETTE: [Rgb; 8] = [
    Rgb(0x00, 0x72, 0xB2), // blue
    Rgb(0xD5, 0x5E, 0x00), // vermillion
    Rgb(0x00, 0x9E, 0x73), // bluish green
    Rgb(0xCC, 0x79, 0xA7), // reddish purple
    Rgb(0xE6, 0x9F, 0x00), // orange
    Rgb(0x56, 0xB4, 0xE9), // sky blue
    Rgb(0x00, 0x00, 0x00), // black
    Rgb(0xF0, 0xE4, 0x42), // yellow
];

/// Colour of the `i`-th series.
pub fn series_color(i: usize) -> Rgb {
    PALETTE[i % PALETTE.len()]
}

/// Marker shapes, cycled per series where markers carry the series identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Marker {
    Circle,
    Triangle,
    Square,
    Diamond,
    Cross,
}

const MARKERS: [Marker; 5] = [
    Marker::Circle,
    Marker::Triangle,
    Marker::Square,
    Marker::Diamond,
    Marker::Cross,
];

pub(crate) fn series_marker(i: usize) -> Marker {
    MARKERS[i % MARKERS.len()]
}

/// How tick values of one axis are written. Chosen once per axis from all
/// its tick values, so labels share a unit suffix and a number of decimals.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TickFormat {
    log: bool,
    /// Log axes with ticks far from 1 use `1e-4` style.
    sci: bool,
    /// Linear axes: divide by this and append `suffix` (k, M, G, T).
    scale: f64,
    suffix: &'static str,
    decimals: usize,
}

impl TickFormat {
    /// Choose a format for the given tick values.
    pub(crate) fn for_ticks(ticks: &[f64], log: bool) -> Self {
        let max_abs = ticks.iter().fold(0f64, |m, v| m.max(v.abs()));
        if log {
            let sci = ticks.iter().any(|&v| v > 0.0 && !(1e-3..=1e5).contains(&v));
            return TickFormat {
                log,
                sci,
                scale: 1.0,
                suffix: "",
                decimals: 0,
            };
        }
        let (scale, suffix) = if max_abs >= 1e12 {
            (1e12, "T")
        } else if max_abs >= 1e9 {
            (1e9, "G")
        } else if max_abs >= 1e6 {
            (1e6, "M")
        } else if max_abs >= 1e4 {
            (1e3, "k")
        } else {
            (1.0, "")
        };
        // Smallest tick spacing decides the precision needed.
        let mut step = f64::INFINITY;
        for w in ticks.windows(2) {
            let d = (w[1] - w[0]).abs();
            if d > 0.0 {
                step = step.min(d);
            }
        }
        let tol = if step.is_finite() {
            step / scale * 1e-6
        } else {
            1e-9
        };
        let decimals = (0..=9)
            .find(|&d| {
                let p = 10f64.powi(d as i32);
                ticks.iter().all(|&v| {
                    let s = v / scale;
                    ((s * p).round() / p - s).abs() <= tol
                })
            })
            .unwrap_or(9);
        TickFormat {
            log,
            sci: false,
            scale,
            suffix,
            decimals,
        }
    }

    /// The label for one tick value.
    pub(crate) fn format(&self, v: f64) -> String {
        if self.log {
            return format_log(v, self.sci);
        }
        let s = format!("{:.*}", self.decimals, v / self.scale);
        let s = if s.trim_start_matches(['-', '0', '.']).is_empty() {
            "0".to_string() // no "-0" / "-0.00"
        } else {
            s
        };
        if s == "0" {
            s
        } else {
            format!("{s}{}", self.suffix)
        }
    }
}

/// A log-axis label: `1e-4`, `2e-4` (sci), or plain `0.01`, `500`.
fn format_log(v: f64, sci: bool) -> String {
    if v <= 0.0 || !v.is_finite() {
        return String::new();
    }
    let e = v.log10().floor();
    let mut m = v / 10f64.powf(e);
    let mut e = e as i32;
    // Guard against 9.9999999 from rounding.
    if (m - 10.0).abs() < 1e-6 {
        m = 1.0;
        e += 1;
    }
    let m_str = trim_float(m, 3);
    if sci {
        format!("{m_str}e{e}")
    } else {
        let decimals = (-(e as i64)).max(0) as usize + m_str.len().saturating_sub(2);
        trim_float(v, decimals.min(12))
    }
}

/// `v` with up to `decimals` decimals, trailing zeros removed.
fn trim_float(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(ticks: &[f64], log: bool) -> Vec<String> {
        let f = TickFormat::for_ticks(ticks, log);
        ticks.iter().map(|&v| f.format(v)).collect()
    }

    #[test]
    fn linear_labels_share_precision_and_hide_float_noise() {
        assert_eq!(
            labels(&[0.0, 0.1, 0.2, 0.30000000000000004], false),
            ["0", "0.1", "0.2", "0.3"]
        );
        assert_eq!(labels(&[0.0, 5.0, 10.0], false), ["0", "5", "10"]);
        assert_eq!(labels(&[-0.5, 0.0, 0.5], false), ["-0.5", "0", "0.5"]);
        assert_eq!(labels(&[2.5, 5.0, 7.5], false), ["2.5", "5.0", "7.5"]);
    }

    #[test]
    fn large_values_get_a_suffix() {
        assert_eq!(
            labels(&[0.0, 2e6, 4e6, 6e6], false),
            ["0", "2M", "4M", "6M"]
        );
        assert_eq!(labels(&[0.0, 5e8, 1e9], false), ["0", "0.5G", "1.0G"]);
        assert_eq!(labels(&[0.0, 5000.0, 10000.0], false), ["0", "5k", "10k"]);
        assert_eq!(labels(&[0.0, 1.5e5, 3e5], false), ["0", "150k", "300k"]);
    }

    #[test]
    fn log_labels() {
        assert_eq!(
            labels(&[1e-4, 1e-3, 1e-2, 1e-1], true),
            ["1e-4", "1e-3", "1e-2", "1e-1"]
        );
        assert_eq!(
            labels(&[0.01, 0.1, 1.0, 10.0], true),
            ["0.01", "0.1", "1", "10"]
        );
        assert_eq!(labels(&[2e-4], true), ["2e-4"]);
        assert_eq!(labels(&[0.02, 0.05], true), ["0.02", "0.05"]);
    }
}
