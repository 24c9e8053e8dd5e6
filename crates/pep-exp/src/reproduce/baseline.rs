//! `baseline`: the simulator against textbook results, the reference every
//! mechanism paper's reproduction stands on. Its "figures" are formulas
//! evaluated on each point's scenario, not numbers typed in.

use pep_sim::scenario::Dir;
use pep_sim::Scenario;

use super::{Check, Claim, Figure, Kind, Paper, Tolerance};
use crate::experiment::value_number;
use crate::results::Results;

pub(super) static PAPER: Paper = Paper {
    name: "baseline",
    title: "TCP over a single path: analytic baselines",
    citation: "RFC 5681 (window and ACK clocking); M. Mathis, J. Semke, J. Mahdavi, \
               T. Ott, \"The Macroscopic Behavior of the TCP Congestion Avoidance \
               Algorithm\", ACM SIGCOMM CCR 27(3), 1997",
    about: "One bulk NewReno flow between two hosts. Window-limited throughput is \
            rwnd/RTT; link-limited goodput is the link rate times payload/(payload + \
            headers); under random loss goodput falls as the loss rate rises, and \
            follows Mathis et al.'s (MSS/RTT)·√(3/2)/√p in the regime the model covers.",
    experiments: &[
        "window-limited.toml",
        "link-limited.toml",
        "random-loss.toml",
    ],
    claims,
};

/// The first flow's path: (one-way delay s, bottleneck rate bit/s, data and
/// ACK transmission times s), over every link direction it crosses.
fn path(sc: &Scenario) -> (f64, f64, f64, f64) {
    let f = &sc.flows[0];
    let hops = sc.routes.path(f.src, f.dst).unwrap_or_default();
    let (mut delay, mut rate, mut tx_data, mut tx_ack) = (0.0, f64::INFINITY, 0.0, 0.0);
    let (data, ack) = (f64::from(f.tcp.mss + f.tcp.header), f64::from(f.tcp.header));
    for (l, d) in hops {
        let back = if d == Dir::Forward {
            Dir::Reverse
        } else {
            Dir::Forward
        };
        let (fwd, rev) = (sc.links[l].dir(d), sc.links[l].dir(back));
        let r = fwd.rate.as_bps() as f64;
        delay += fwd.delay.as_secs_f64() + rev.delay.as_secs_f64();
        rate = rate.min(r);
        tx_data += data * 8.0 / r;
        tx_ack += ack * 8.0 / rev.rate.as_bps() as f64;
    }
    (delay / 2.0, rate, tx_data, tx_ack)
}

fn rtt(sc: &Scenario) -> f64 {
    let (d, _, tx_data, tx_ack) = path(sc);
    2.0 * d + tx_data + tx_ack
}

fn window_limited(sc: &Scenario) -> f64 {
    f64::from(sc.flows[0].sink.rwnd) * 8.0 / rtt(sc) / 1e6
}

fn link_limited(sc: &Scenario) -> f64 {
    let t = &sc.flows[0].tcp;
    path(sc).1 * f64::from(t.mss) / f64::from(t.mss + t.header) / 1e6
}

fn mathis(sc: &Scenario) -> f64 {
    use pep_sim::scenario::LossSpec;
    let p = match sc.links[0].forward.loss {
        LossSpec::Bernoulli { p, .. } => p,
        _ => f64::NAN,
    };
    let mss = f64::from(sc.flows[0].tcp.mss) * 8.0;
    mss / rtt(sc) * (1.5f64).sqrt() / p.sqrt() / 1e6
}

/// Mean goodput strictly falls as the loss probability rises.
fn falls_with_loss(r: &Results) -> Result<(bool, String), String> {
    let k = r
        .params
        .iter()
        .position(|p| p.ends_with("loss.p"))
        .ok_or("no loss probability parameter")?;
    let m = r
        .measure_index("flow.f.goodput_mbps")
        .ok_or("no goodput measure")?;
    let mut pts: Vec<(f64, f64)> = (0..r.points.len())
        .filter_map(|p| {
            let x = value_number(r.points[p].values[k].as_ref()?)?.0;
            Some((x, r.stats(p, m).mean?))
        })
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let ok = pts.len() >= 2 && pts.windows(2).all(|w| w[1].1 < w[0].1);
    let seen: Vec<String> = pts
        .iter()
        .map(|(p, g)| format!("p = {p}: {g:.3} Mbit/s"))
        .collect();
    Ok((ok, seen.join("; ")))
}

fn claims() -> Vec<Claim> {
    vec![
        Claim {
            kind: Kind::Reproduction,
            id: "W1",
            statement: "A flow limited by the receiver's window moves one window per \
                        round trip: goodput = rwnd / RTT.",
            experiment: "window-limited",
            check: Check::Value {
                measure: "flow.f.goodput_mbps",
                at: vec![],
                figure: Figure::Analytic {
                    formula: "rwnd × 8 / RTT (RTT = 2 × delay + data and ACK serialization)",
                    eval: window_limited,
                },
                tolerance: Tolerance::Relative(0.02),
            },
            needs_full: false,
        },
        Claim {
            kind: Kind::Reproduction,
            id: "L1",
            statement: "A flow whose window exceeds the path's bandwidth-delay product \
                        fills the link: goodput = rate × MSS / (MSS + headers).",
            experiment: "link-limited",
            check: Check::Value {
                measure: "flow.f.goodput_mbps",
                at: vec![],
                figure: Figure::Analytic {
                    formula: "rate × mss / (mss + header)",
                    eval: link_limited,
                },
                tolerance: Tolerance::Relative(0.02),
            },
            needs_full: false,
        },
        Claim {
            kind: Kind::Reproduction,
            id: "L2",
            statement: "... and keeps the bottleneck busy all the time.",
            experiment: "link-limited",
            check: Check::Value {
                measure: "link.a->b.utilisation",
                at: vec![],
                figure: Figure::Reported {
                    value: 1.0,
                    source: "full utilisation (1.0)",
                },
                tolerance: Tolerance::Absolute(0.02),
            },
            needs_full: false,
        },
        Claim {
            kind: Kind::Reproduction,
            id: "P1",
            statement: "Under random loss, goodput falls as the loss probability rises.",
            experiment: "random-loss",
            check: Check::Predicate {
                describe: "mean goodput strictly decreasing in p",
                eval: falls_with_loss,
            },
            needs_full: false,
        },
        Claim {
            kind: Kind::Reproduction,
            id: "M1",
            statement: "In congestion avoidance with rare random loss, goodput ≈ \
                        (MSS/RTT)·√(3/2)/√p (Mathis et al. 1997, eq. 3). Decided on \
                        long runs only: short ones carry too few loss events.",
            experiment: "random-loss",
            check: Check::Value {
                measure: "flow.f.goodput_mbps",
                at: vec![("link[a-b].forward.loss.p", "0.001")],
                figure: Figure::Analytic {
                    formula: "MSS × 8 / RTT × √(3/2) / √p",
                    eval: mathis,
                },
                tolerance: Tolerance::Relative(0.15),
            },
            needs_full: true,
        },
    ]
}
