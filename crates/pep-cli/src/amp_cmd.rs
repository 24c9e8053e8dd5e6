//! `pep amp`: the AMP model's bound on an asymmetric path (Shekhar et al.),
//! Lakshman's k, and the bidirectional two-class table.

use clap::Args;
use pep_core::amp::{self, Path, TwoWay};
use pep_sim::units;

#[derive(Args)]
pub struct AmpArgs {
    /// Forward (data) link rate, e.g. 8Mbit/s.
    #[arg(long, default_value = "8Mbit/s", value_parser = rate)]
    forward: f64,
    /// Reverse (ACK) link rate, e.g. 64kbit/s.
    #[arg(long, default_value = "64kbit/s", value_parser = rate)]
    reverse: f64,
    /// Bytes per data packet counted as throughput (the paper: the payload).
    #[arg(long, default_value = "1000B", value_parser = size)]
    data: f64,
    /// Bytes per ACK on the reverse link.
    #[arg(long, default_value = "40B", value_parser = size)]
    ack: f64,
    /// Packets each ACK covers, 1 to 1000 (2 for delayed ACKs).
    #[arg(long, default_value_t = 1.0, value_parser = packets_per_ack)]
    ack_every: f64,
    /// Also evaluate this multiplicative factor M (packets released per ACK
    /// that reaches the sender; ACK regulation raises it).
    #[arg(long, value_parser = positive)]
    m: Option<f64>,
    /// Bidirectional table: the data class's share of the forward link.
    #[arg(long, default_value_t = 0.997, value_parser = share)]
    f: f64,
    /// Bidirectional table: the data class's shares of the reverse link to
    /// tabulate (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "0.1,0.5,0.9", value_parser = share)]
    g: Vec<f64>,
}

fn rate(s: &str) -> Result<f64, String> {
    let r = units::parse_rate(s).map_err(|e| e.to_string())?;
    units::positive_rate(r).map_err(|e| e.to_string())?;
    Ok(r.as_bps() as f64)
}

fn size(s: &str) -> Result<f64, String> {
    match units::parse_bytes(s).map_err(|e| e.to_string())? {
        0 => Err("the size must be positive".into()),
        b => Ok(b as f64),
    }
}

fn positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("expected a positive number, got {s:?}")),
    }
}

/// An ACK covers at least the packet that triggered it.
fn packets_per_ack(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (1.0..=1000.0).contains(&v) => Ok(v),
        _ => Err(format!("expected 1 to 1000 packets per ACK, got {s:?}")),
    }
}

fn share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!(
            "expected a share strictly between 0 and 1, got {s:?}"
        )),
    }
}

fn mbps(bps: f64) -> String {
    format!("{:.3} Mbit/s", bps / 1e6)
}

pub fn run(a: AmpArgs) -> Result<(), String> {
    print!("{}", report(&a));
    Ok(())
}

fn report(a: &AmpArgs) -> String {
    use std::fmt::Write;
    let p = Path {
        forward_bps: a.forward,
        reverse_bps: a.reverse,
        data_bits: a.data * 8.0,
        ack_bits: a.ack * 8.0,
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "AMP model: forward {}, reverse {} kbit/s, {} B packets, {} B ACKs, an ACK every {} packet(s)",
        mbps(p.forward_bps),
        p.reverse_bps / 1e3,
        a.data,
        a.ack,
        a.ack_every
    );
    let _ = writeln!(
        s,
        "  Lakshman's k = (forward / reverse) / (data / ACK) = {:.3}{}",
        p.k(),
        if p.k() > 1.0 {
            format!(
                ": one ACK per packet caps the forward link at F/k = {}",
                mbps(p.forward_bps / p.k())
            )
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        s,
        "  A = reverse rate / ACK size = {:.1} ACKs/s",
        p.ack_rate()
    );
    let mut ms = vec![
        ("slow start", amp::m_slow_start(a.ack_every)),
        (
            "congestion avoidance",
            amp::m_congestion_avoidance(a.ack_every),
        ),
    ];
    if let Some(m) = a.m {
        ms.push(("given", m));
    }
    for (phase, m) in ms {
        let _ = writeln!(
            s,
            "  {phase:<21} M = {m:<5} min(F, A x M x P) = min({}, {}) = {}",
            mbps(p.forward_bps),
            mbps(p.ack_rate() * m * p.data_bits),
            mbps(p.bound(m))
        );
    }
    let _ = writeln!(
        s,
        "  M needed to fill the forward link: F / (A x P) = {:.2}",
        p.m_needed()
    );
    let m = a.m.unwrap_or(amp::m_congestion_avoidance(a.ack_every));
    let _ = writeln!(
        s,
        "\nTwo classes per direction, data gets f = {} forward and g reverse; M = {m}:",
        a.f
    );
    let _ = writeln!(
        s,
        "  {:>5}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}",
        "g", "fwd pkt/s", "fwd ACK/s", "rev pkt/s", "rev ACK/s", "fwd Mbit/s", "rev kbit/s"
    );
    for &g in &a.g {
        let t = TwoWay {
            path: p,
            f: a.f,
            g,
            m,
        };
        let r = t.rates();
        let _ = writeln!(
            s,
            "  {g:>5}  {:>12.1}  {:>12.1}  {:>12.2}  {:>12.1}  {:>12.3}  {:>12.1}",
            r.forward_packets,
            r.forward_acks,
            r.reverse_packets,
            r.reverse_acks,
            t.forward_bps() / 1e6,
            t.reverse_bps() / 1e3
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        a: AmpArgs,
    }

    #[test]
    fn prints_the_papers_worked_example() {
        let cli = Cli::try_parse_from(["amp"]).unwrap();
        let out = report(&cli.a);
        assert!(
            out.contains("k = (forward / reverse) / (data / ACK) = 5.000"),
            "{out}"
        );
        assert!(
            out.contains("A = reverse rate / ACK size = 200.0 ACKs/s"),
            "{out}"
        );
        assert!(
            out.contains(
                "M = 2     min(F, A x M x P) = min(8.000 Mbit/s, 3.200 Mbit/s) = 3.200 Mbit/s"
            ),
            "{out}"
        );
        assert!(out.contains("= 1.600 Mbit/s"), "{out}");
    }

    #[test]
    fn bad_flags_name_the_problem() {
        let e = Cli::try_parse_from(["amp", "--reverse", "64kB/s"])
            .err()
            .unwrap();
        assert!(e.to_string().contains("bits per second"), "{e}");
        let e = Cli::try_parse_from(["amp", "--g", "0.5,1.2"])
            .err()
            .unwrap();
        assert!(e.to_string().contains("between 0 and 1"), "{e}");
        let e = Cli::try_parse_from(["amp", "--reverse", "0bit/s"])
            .err()
            .unwrap();
        assert!(e.to_string().contains("positive"), "{e}");
    }
}
