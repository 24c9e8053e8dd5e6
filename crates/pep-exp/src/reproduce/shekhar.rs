//! `shekhar`: ACK regulation on asymmetric links (Shekhar, Qin,
//! Kalyanaraman, Kidambi): the Smart ACK Dropper, ACK regeneration and
//! two-class sharing, against the paper's ns-2 tables. See docs/shekhar.md.

use super::{Check, Claim, Figure, Paper, Tolerance};
use crate::experiment::value_number;
use crate::results::Results;

pub(super) static PAPER: Paper = Paper {
    name: "shekhar",
    title: "Performance Optimization of TCP/IP over Asymmetric Wired and Wireless Links",
    citation: "D. Shekhar, H. Qin, S. Kalyanaraman, K. Kidambi, RPI (AMP model, \
               Smart ACK Dropper)",
    about: "One Reno flow over 8 Mbit/s down and 64..784 kbit/s up (ns-2 defaults: \
            1000 B segments, 40 B ACKs, window 20 packets, queues of 50; one-way \
            delay 10 ms), with FIFO or the Smart ACK Dropper on the uplink (Table 1), \
            ACK regeneration after it (Table 2), a flow each way with FIFO \
            (Table 3) and with SAD + AR + two-class sharing (Table 5).",
    experiments: &[
        "table1.toml",
        "table2.toml",
        "table3.toml",
        "table5.toml",
        "loss.toml",
        "delay.toml",
        "flows10.toml",
    ],
    claims,
};

const RATE: &str = "link[asym].reverse.rate";
const KIND: &str = "link[asym].reverse.queue.kind";
const SHARE: &str = "link[asym].reverse.queue.data_share";
const DOWN: &str = "flow.down.goodput_mbps";
const UP: &str = "flow.up.goodput_mbps";

/// Mean of `measure` at every point, with the values of `params` there.
fn table(r: &Results, params: &[&str], measure: &str) -> Result<Vec<(Vec<String>, f64)>, String> {
    let m = r
        .measure_index(measure)
        .ok_or(format!("no measure {measure}"))?;
    let idx: Vec<usize> = params
        .iter()
        .map(|k| {
            r.params
                .iter()
                .position(|x| x == k)
                .ok_or(format!("no parameter {k}"))
        })
        .collect::<Result<_, _>>()?;
    Ok((0..r.points.len())
        .filter_map(|p| {
            let mean = r.stats(p, m).mean?;
            Some((idx.iter().map(|&i| r.param_text(p, i)).collect(), mean))
        })
        .collect())
}

fn num(s: &str) -> f64 {
    value_number(&toml::Value::String(s.into()))
        .map(|v| v.0)
        .or_else(|| s.parse().ok())
        .unwrap_or(f64::NAN)
}

/// SAD is never more than 1% below plain Reno at the same uplink rate.
fn sad_never_below_reno(r: &Results) -> Result<(bool, String), String> {
    let t = table(r, &[RATE, KIND], DOWN)?;
    let mut ok = true;
    let mut seen = vec![];
    for (k, reno) in t.iter().filter(|(k, _)| k[1] == "droptail") {
        let sad = t
            .iter()
            .find(|(k2, _)| k2[0] == k[0] && k2[1] == "sad")
            .ok_or("no SAD point")?
            .1;
        ok &= sad >= 0.99 * reno;
        seen.push(format!("{}: {reno:.2} -> {sad:.2}", k[0]));
    }
    Ok((ok && !seen.is_empty(), seen.join("; ")))
}

/// Goodput rises with R (non-strictly) and R = 4 reaches 7.0 Mbit/s.
fn rises_with_r(r: &Results) -> Result<(bool, String), String> {
    let mut t = table(r, &["agent[ar].factor"], DOWN)?;
    t.sort_by(|a, b| num(&a.0[0]).total_cmp(&num(&b.0[0])));
    let rises =
        t.windows(2).all(|w| w[1].1 >= w[0].1) && t.first().map(|x| x.1) < t.last().map(|x| x.1);
    let r4 = t.last().map_or(0.0, |x| x.1);
    let seen: Vec<String> = t
        .iter()
        .map(|(k, g)| format!("R = {}: {g:.2}", k[0]))
        .collect();
    Ok((rises && r4 >= 7.0, seen.join("; ")))
}

/// With FIFO and a flow each way, downstream < 5% of 8 Mbit/s at 64k.
fn collapses(r: &Results) -> Result<(bool, String), String> {
    let t = table(r, &[RATE], DOWN)?;
    let up = table(r, &[RATE], UP)?;
    let d = t
        .iter()
        .find(|(k, _)| k[0] == "64kbit/s")
        .ok_or("no 64k point")?
        .1;
    let seen: Vec<String> = t
        .iter()
        .zip(&up)
        .map(|((k, d), (_, u))| {
            format!(
                "{}: down {:.1} kbit/s, up {:.1} kbit/s",
                k[0],
                d * 1e3,
                u * 1e3
            )
        })
        .collect();
    Ok((d < 0.05 * 8.0, seen.join("; ")))
}

/// SAD + AR + sharing: >= 10x the paper's Table 3 downstream at 64k and
/// 256k, at every g.
fn ten_fold(r: &Results) -> Result<(bool, String), String> {
    let t = table(r, &[RATE, SHARE], DOWN)?;
    let mut ok = true;
    let mut seen = vec![];
    for (rate, table3) in [("64kbit/s", 0.0188), ("256kbit/s", 0.2552)] {
        for (k, d) in t.iter().filter(|(k, _)| k[0] == rate) {
            ok &= *d >= 10.0 * table3;
            seen.push(format!("{rate} g = {}: {d:.2} ({:.0}x)", k[1], d / table3));
        }
    }
    Ok((ok && !seen.is_empty(), seen.join("; ")))
}

/// The AMP two-way table with g the uplink data share: downstream
/// non-increasing in g, upstream non-decreasing (1% slack).
fn amp_trend(r: &Results) -> Result<(bool, String), String> {
    let down = table(r, &[RATE, SHARE], DOWN)?;
    let up = table(r, &[RATE, SHARE], UP)?;
    let mut ok = true;
    let mut seen = vec![];
    for rate in ["64kbit/s", "256kbit/s", "640kbit/s"] {
        let series = |t: &[(Vec<String>, f64)]| {
            let mut v: Vec<(f64, f64)> = t
                .iter()
                .filter(|(k, _)| k[0] == rate)
                .map(|(k, x)| (num(&k[1]), *x))
                .collect();
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            v
        };
        let (d, u) = (series(&down), series(&up));
        ok &= d.windows(2).all(|w| w[1].1 <= w[0].1 * 1.01);
        ok &= u.windows(2).all(|w| w[1].1 >= w[0].1 * 0.99);
        let fmt = |v: &[(f64, f64)], scale: f64| {
            v.iter()
                .map(|(g, x)| format!("{g}: {:.2}", x * scale))
                .collect::<Vec<_>>()
                .join(", ")
        };
        seen.push(format!(
            "{rate}: down Mbit/s [{}], up kbit/s [{}]",
            fmt(&d, 1.0),
            fmt(&u, 1e3)
        ));
    }
    Ok((ok, seen.join("; ")))
}

/// With SAD, losses are still mostly repaired by fast retransmit.
fn fast_retransmit_survives(r: &Results) -> Result<(bool, String), String> {
    let keys = ["link[asym].forward.loss.p", KIND];
    let fr = table(r, &keys, "flow.down.fast_retransmits")?;
    let to = table(r, &keys, "flow.down.timeouts")?;
    let mut ok = false;
    let mut seen = vec![];
    for ((k, f), (_, t)) in fr.iter().zip(&to).filter(|((k, _), _)| k[1] == "sad") {
        if k[0] == "0.01" {
            ok = *f >= 10.0 && *f > 2.0 * t;
        }
        seen.push(format!(
            "p = {}: {f:.1} fast retransmits, {t:.1} timeouts",
            k[0]
        ));
    }
    Ok((ok, format!("with SAD: {}", seen.join("; "))))
}

static T1: [(&str, &str, &str, f64, f64); 5] = [
    ("T1-64", "T1S-64", "64kbit/s", 1.52, 6.20),
    ("T1-128", "T1S-128", "128kbit/s", 3.01, 6.79),
    ("T1-256", "T1S-256", "256kbit/s", 5.98, 7.28),
    ("T1-640", "T1S-640", "640kbit/s", 7.46, 7.45),
    ("T1-784", "T1S-784", "784kbit/s", 7.46, 7.46),
];

fn claims() -> Vec<Claim> {
    let mut v = vec![];
    for (id, sad_id, rate, reno, sad) in T1.iter().copied() {
        v.push(Claim {
            id,
            statement: "Table 1: Reno's downstream throughput, 8 Mbit/s down, one flow, no loss.",
            experiment: "table1",
            check: Check::Value {
                measure: DOWN,
                at: vec![(RATE, rate), (KIND, "droptail")],
                figure: Figure::Reported {
                    value: reno,
                    source: "Table 1, TCP Reno",
                },
                tolerance: Tolerance::Relative(0.15),
            },
            needs_full: false,
        });
        let tol = if reno < 7.0 { 0.25 } else { 0.15 };
        v.push(Claim {
            id: sad_id,
            statement: "Table 1: Reno with the Smart ACK Dropper on the uplink.",
            experiment: "table1",
            check: Check::Value {
                measure: DOWN,
                at: vec![(RATE, rate), (KIND, "sad")],
                figure: Figure::Reported {
                    value: sad,
                    source: "Table 1, Reno with SAD",
                },
                tolerance: Tolerance::Relative(tol),
            },
            needs_full: false,
        });
    }
    v.push(Claim {
        id: "T1-SAD",
        statement: "SAD never hurts: Reno + SAD is never more than 1% below Reno.",
        experiment: "table1",
        check: Check::Predicate {
            describe: "SAD >= 0.99 x Reno at every uplink rate",
            eval: sad_never_below_reno,
        },
        needs_full: false,
    });
    v.push(Claim {
        id: "T2",
        statement: "Table 2: with SAD + AR, throughput rises with the regeneration factor \
                    R (6.65, 6.98, 7.40, 7.51 Mbit/s for R = 1..4 at 8M/64k).",
        experiment: "table2",
        check: Check::Predicate {
            describe: "non-decreasing in R, and R = 4 >= 7.0 Mbit/s",
            eval: rises_with_r,
        },
        needs_full: false,
    });
    v.push(Claim {
        id: "T3",
        statement: "Table 3: one flow each way with FIFO: the downstream collapses \
                    (18.8 kbit/s at 8M/64k).",
        experiment: "table3",
        check: Check::Predicate {
            describe: "downstream < 5% of 8 Mbit/s at 64 kbit/s",
            eval: collapses,
        },
        needs_full: false,
    });
    v.push(Claim {
        id: "T5",
        statement: "Table 5: SAD + AR + two-class sharing raises the downstream by a \
                    factor of 10-20 over Table 3.",
        experiment: "table5",
        check: Check::Predicate {
            describe: ">= 10x Table 3's downstream at 64k and 256k, every g",
            eval: ten_fold,
        },
        needs_full: false,
    });
    v.push(Claim {
        id: "T5-G",
        statement: "Table 5 against the AMP two-way table, reading g as the uplink's data \
                    share: a larger g trades downstream for upstream.",
        experiment: "table5",
        check: Check::Predicate {
            describe: "downstream non-increasing, upstream non-decreasing in g",
            eval: amp_trend,
        },
        needs_full: false,
    });
    v.push(Claim {
        id: "C2",
        statement: "Chart 2: with random downstream loss SAD still repairs single losses \
                    by fast retransmit.",
        experiment: "loss",
        check: Check::Predicate {
            describe: "at p = 0.01: >= 10 fast retransmits, more than 2x the timeouts",
            eval: fast_retransmit_survives,
        },
        needs_full: false,
    });
    v
}
