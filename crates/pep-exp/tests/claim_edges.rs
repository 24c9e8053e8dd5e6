//! Every claim of every paper at the edge of its test: made-up results
//! just inside and just outside its threshold, on each side it has, give
//! pass and fail. Value claims against a reported number or table are fed
//! by one generic test (reproduce.rs); those against a formula, and every
//! predicate, here. A last test checks no claim of these papers is left
//! without an edge test.

use pep_exp::experiment::Experiment;
use pep_exp::reproduce::{
    default_scenarios_dir, evaluate, find, points_at, Check, Figure, Verdict,
};
use pep_exp::results::{Results, Row};
use pep_exp::Mode;

use crate::reproduce::{around, grid, runs, texts, verdict_of};

/// `paper`'s claim `id` on results built from `x` gives pass (`true`) or
/// fail (`false`) at each case.
fn edges(paper: &str, id: &str, build: impl Fn(f64) -> Results, cases: &[(f64, bool)]) {
    for &(x, pass) in cases {
        let want = if pass { Verdict::Pass } else { Verdict::Fail };
        assert_eq!(
            verdict_of(paper, id, &build(x)),
            want,
            "{paper} {id} at {x}"
        );
    }
}

fn one(v: f64) -> Vec<Vec<f64>> {
    vec![vec![v]]
}

// ---- baseline ----

#[test]
fn baseline_p1_strictly_falling() {
    let r = |last: f64| {
        let pts = [("0.001", 3.0), ("0.01", 2.0), ("0.1", last)]
            .iter()
            .map(|(p, g)| (texts(&[p]), one(*g)))
            .collect::<Vec<_>>();
        grid(
            &["link[a-b].forward.loss.p"],
            &["flow.f.goodput_mbps"],
            &pts,
        )
    };
    edges(
        "baseline",
        "P1",
        r,
        &[(1.0, true), (1.999, true), (2.0, false), (2.001, false)],
    );
}

/// Value claims against a formula: the formula evaluated on each point's
/// own scenario (the experiment file resolved), ours just inside and just
/// outside both ends of the tolerance.
#[test]
fn analytic_value_claims_fail_just_outside_both_ends() {
    let mut checked = 0;
    for name in PAPERS {
        let paper = find(name).unwrap();
        for c in (paper.claims)() {
            let Check::Value {
                measure,
                at,
                figure: Figure::Analytic { eval, .. },
                tolerance,
            } = &c.check
            else {
                continue;
            };
            let file = format!("{}.toml", c.experiment);
            let exp = Experiment::load(&default_scenarios_dir().join(name).join(file)).unwrap();
            let resolved = exp.resolve(Mode::Full).unwrap();
            let shape = Results {
                params: exp.params.clone(),
                points: exp.points.clone(),
                measures: vec![measure.to_string()],
                rows: vec![],
            };
            let pts = points_at(&shape, at);
            let want_at: Vec<f64> = pts.iter().map(|&q| eval(&resolved[q].scenario)).collect();
            for (i, &p) in pts.iter().enumerate() {
                let f = want_at[i];
                let (lo, hi) = tolerance.bounds(f);
                assert!(lo < f && f < hi, "{name} {}", c.id);
                for (ours, want) in around(lo, hi) {
                    let mut r = shape.clone();
                    // The other points at their formula's value: only p decides.
                    r.rows = pts
                        .iter()
                        .zip(&want_at)
                        .map(|(&q, &fq)| Row {
                            point: q,
                            seed: 1,
                            values: vec![Some(if q == p { ours } else { fq })],
                        })
                        .collect();
                    let got = evaluate(&c, &r, &resolved, Mode::Full).unwrap().verdict;
                    assert_eq!(got, want, "{name} {} point {p} at {ours}", c.id);
                }
                checked += 1;
            }
        }
    }
    // baseline W1, L1, M1; osada F5w.
    assert!(checked >= 4, "{checked}");
}

// ---- osada2005 ----

const W: &str = "agent[pep].watermark";
const MAX: &str = "agent.atd.max_mbps";

/// One curve of max throughput against W = 0..=50.
fn curve(y: impl Fn(f64) -> f64) -> Results {
    let pts: Vec<_> = (0..=50)
        .map(|w| (texts(&[&w.to_string()]), one(y(f64::from(w)))))
        .collect();
    grid(&[W], &[MAX], &pts)
}

/// Rises to 1.0 at W = 10, stays, then from W = 30 at `after`.
fn plateau_then(after: f64) -> Results {
    curve(move |w| {
        if w < 10.0 {
            0.5
        } else if w < 30.0 {
            1.0
        } else {
            after
        }
    })
}

#[test]
fn osada_r1_and_r2_at_the_five_percent_fall() {
    for id in ["F4", "F5"] {
        edges(
            "osada2005",
            id,
            plateau_then,
            &[(0.9501, true), (1.0, true), (0.9499, false)],
        );
    }
    for id in ["F9", "F10"] {
        edges(
            "osada2005",
            id,
            plateau_then,
            &[(0.9499, true), (0.9501, false)],
        );
    }
}

#[test]
fn osada_f4b_full_from_25_within_20_percent() {
    let first = |f: f64| curve(move |w| if w >= f { 1.0 } else { 0.5 });
    edges(
        "osada2005",
        "F4b",
        first,
        &[(20.0, true), (30.0, true), (19.0, false), (31.0, false)],
    );
    // And it stays: a later dip below 0.95 fails.
    let dip = |y: f64| {
        curve(move |w| {
            if w < 25.0 {
                0.5
            } else if w == 40.0 {
                y
            } else {
                1.0
            }
        })
    };
    edges("osada2005", "F4b", dip, &[(0.95, true), (0.9499, false)]);
}

/// R-2 whose first falling W is `fall`.
fn falls_at(fall: f64) -> Results {
    curve(move |w| if w < 10.0 || w >= fall { 0.5 } else { 1.0 })
}

#[test]
fn osada_fall_off_w_within_20_percent_of_the_papers() {
    // 39 ± 20%: 31.2..46.8.
    let f6 = [(32.0, true), (46.0, true), (31.0, false), (47.0, false)];
    edges("osada2005", "F6", falls_at, &f6);
    // 32 ± 20%: 25.6..38.4.
    let f7 = [(26.0, true), (38.0, true), (25.0, false), (39.0, false)];
    edges("osada2005", "F7", falls_at, &f7);
}

#[test]
fn osada_f7b_never_full() {
    let best = |b: f64| curve(move |w| if w == 20.0 { b } else { 0.5 });
    edges("osada2005", "F7b", best, &[(0.9499, true), (0.9501, false)]);
}

#[test]
fn osada_no_drops_setup_checks() {
    let r = |drops: f64| {
        grid(
            &[W],
            &["sum(link.*.queue_drops)"],
            &[(texts(&["10"]), one(drops))],
        )
    };
    for id in ["N1", "T1b"] {
        edges("osada2005", id, r, &[(0.0, true), (1.0, false)]);
    }
}

/// Table 1's trend: `r2(ds_small, dd_large, n_small)` says which
/// combinations are R-2.
fn table1(r2: impl Fn(bool, bool, bool) -> bool) -> Results {
    let mut pts = Vec::new();
    for ds in ["50ms", "100ms"] {
        for dd in ["50ms", "130ms"] {
            for n in ["30", "100"] {
                let fall = r2(ds == "50ms", dd == "130ms", n == "30");
                for (w, y) in [
                    ("0", 0.5),
                    ("10", 1.0),
                    ("20", if fall { 0.5 } else { 1.0 }),
                ] {
                    pts.push((texts(&[ds, dd, n, w]), one(y)));
                }
            }
        }
    }
    grid(
        &["link[s-p].delay", "link[p-d].delay", "agent[pep].buffer", W],
        &[MAX],
        &pts,
    )
}

#[test]
fn osada_t1_trend_in_each_parameter() {
    let v = |r: &Results| verdict_of("osada2005", "T1", r);
    let two = |a: bool, b: bool, c: bool| u8::from(a) + u8::from(b) + u8::from(c) >= 2;
    assert_eq!(v(&table1(two)), Verdict::Pass);
    // Each parameter's trend reversed, or flat, fails.
    assert_eq!(v(&table1(|a, b, c| two(!a, b, c))), Verdict::Fail);
    assert_eq!(v(&table1(|a, b, c| two(a, !b, c))), Verdict::Fail);
    assert_eq!(v(&table1(|a, b, c| two(a, b, !c))), Verdict::Fail);
    assert_eq!(v(&table1(|a, b, _| two(a, b, a))), Verdict::Fail);
    assert_eq!(v(&table1(|_, _, _| false)), Verdict::Fail);
}

/// `n` combinations (d_S = 1..=n ms), best fixed W 1.0; the adaptive
/// point's ratio to it by combination.
fn adaptive(n: usize, ratio: impl Fn(usize) -> f64) -> Results {
    let mut pts = Vec::new();
    for i in 0..n {
        let ds = format!("{}ms", i + 1);
        pts.push((texts(&[&ds, "0", "false"]), one(0.5)));
        pts.push((texts(&[&ds, "30", "false"]), one(1.0)));
        pts.push((texts(&[&ds, "30", "true"]), one(ratio(i))));
    }
    grid(&["link[s-p].delay", W, "agent[pep].adaptive"], &[MAX], &pts)
}

#[test]
fn osada_adaptive_within_five_percent() {
    let every = |r: f64| adaptive(4, move |i| if i == 2 { r } else { 1.0 });
    edges("osada2005", "A1", every, &[(0.9501, true), (0.9499, false)]);
    // Short runs: at least 97% of the combinations within 5%, mean >= 1.
    let share = |k: f64| adaptive(100, move |i| if (i as f64) < k { 1.01 } else { 0.9 });
    edges("osada2005", "A1s", share, &[(97.0, true), (96.0, false)]);
    let mean = |m: f64| adaptive(100, move |_| m);
    edges("osada2005", "A1s", mean, &[(1.0, true), (0.999, false)]);
}

#[test]
fn osada_c1_local_repair_above_end_to_end() {
    let r = |local: f64| {
        let mut pts = Vec::new();
        for p in ["0.0", "0.01", "0.05"] {
            pts.push((texts(&[p, "0"]), one(0.5)));
            let l = if p == "0.05" { local } else { 0.8 };
            pts.push((texts(&[p, "10"]), one(l)));
        }
        grid(
            &["link[p-d].forward.loss.p", W],
            &["flow.f.goodput_mbps"],
            &pts,
        )
    };
    edges(
        "osada2005",
        "C1",
        r,
        &[(0.5001, true), (0.5, false), (0.4999, false)],
    );
}

// ---- shekhar ----

const RATE: &str = "link[asym].reverse.rate";
const KIND: &str = "link[asym].reverse.queue.kind";
const DOWN: &str = "flow.down.goodput_mbps";

#[test]
fn shekhar_t1_sad_never_one_percent_below_reno() {
    let r = |sad: f64| {
        let mut pts = Vec::new();
        for rate in ["64kbit/s", "256kbit/s"] {
            pts.push((texts(&[rate, "droptail"]), one(1.0)));
            let s = if rate == "256kbit/s" { sad } else { 2.0 };
            pts.push((texts(&[rate, "sad"]), one(s)));
        }
        grid(&[RATE, KIND], &[DOWN], &pts)
    };
    edges("shekhar", "T1-SAD", r, &[(0.9901, true), (0.9899, false)]);
}

#[test]
fn shekhar_t2_rises_with_r_to_seven() {
    let r = |ys: [f64; 4]| {
        let pts: Vec<_> = ys
            .iter()
            .enumerate()
            .map(|(i, y)| (texts(&[&(i + 1).to_string()]), one(*y)))
            .collect();
        grid(&["agent[ar].factor"], &[DOWN], &pts)
    };
    let v = |ys| verdict_of("shekhar", "T2", &r(ys));
    assert_eq!(v([6.6, 6.9, 7.0, 7.0]), Verdict::Pass);
    assert_eq!(v([6.6, 6.9, 6.999, 6.999]), Verdict::Fail);
    assert_eq!(v([6.6, 6.9, 7.1, 7.09]), Verdict::Fail);
    assert_eq!(v([7.5, 7.5, 7.5, 7.5]), Verdict::Fail);
}

#[test]
fn shekhar_c2_fr_fast_retransmits_over_timeouts() {
    let r = |fr: f64, to: f64| {
        let mut pts = Vec::new();
        for p in ["0.001", "0.01"] {
            pts.push((texts(&[p, "droptail"]), vec![vec![5.0, 5.0]]));
            pts.push((texts(&[p, "sad"]), vec![vec![fr, to]]));
        }
        grid(
            &["link[asym].forward.loss.p", KIND],
            &["flow.down.fast_retransmits", "flow.down.timeouts"],
            &pts,
        )
    };
    let v = |fr, to| verdict_of("shekhar", "C2-FR", &r(fr, to));
    assert_eq!(v(10.0, 4.99), Verdict::Pass);
    assert_eq!(v(9.99, 1.0), Verdict::Fail);
    assert_eq!(v(10.0, 5.0), Verdict::Fail);
}

#[test]
fn shekhar_c3_sad_gains_at_every_delay() {
    let r = |sad: f64| {
        let mut pts = Vec::new();
        for d in ["1ms", "10ms", "100ms"] {
            pts.push((texts(&[d, "droptail"]), one(1.0)));
            let s = if d == "100ms" { sad } else { 2.0 };
            pts.push((texts(&[d, "sad"]), one(s)));
        }
        grid(&["link[asym].delay", KIND], &[DOWN], &pts)
    };
    edges("shekhar", "C3", r, &[(1.0501, true), (1.0499, false)]);
}

// ---- johnson ----

const RWND: &str = "defaults.sink.rwnd";
const N: &str = "defaults.sink.ack.count";

/// 32 KB: segments 1000 per connection, ACKs `segs / N × f(N)`.
#[test]
fn johnson_a1_acks_about_one_over_n() {
    let r = |at: &'static str, f: f64| {
        let pts: Vec<_> = ["1", "2", "3", "4", "6", "8", "12", "16"]
            .iter()
            .map(|n| {
                let k: f64 = n.parse().unwrap();
                let a = 1000.0 / k * if *n == at { f } else { 1.0 };
                (texts(&["32KiB", n]), vec![vec![a, 1000.0]])
            })
            .collect();
        grid(
            &[RWND, N],
            &["flow.ttcp.acks_sent", "flow.ttcp.segments_received"],
            &pts,
        )
    };
    edges(
        "johnson",
        "A1",
        |f| r("4", f),
        &[(0.951, true), (0.949, false)],
    );
    edges(
        "johnson",
        "A1",
        |f| r("2", f),
        &[(1.499, true), (1.501, false)],
    );
    // Not strictly falling: N = 16 as many as N = 12.
    edges(
        "johnson",
        "A1",
        |f| r("16", f),
        &[(1.33, true), (1.34, false)],
    );
}

#[test]
fn johnson_a2s_flat_past_the_window() {
    // (ACKs, timer ACKs, goodput) at N = 10, N = 3 at (100, 0, 1.0).
    let r = |a: f64, t: f64, g: f64| {
        let pts: Vec<_> = ["3", "4", "6", "10", "16"]
            .iter()
            .map(|n| {
                let run = if *n == "10" {
                    vec![a, t, g]
                } else {
                    vec![100.0, 0.0, 1.0]
                };
                (texts(&["4KiB", n]), vec![run])
            })
            .collect();
        grid(
            &[RWND, N],
            &[
                "flow.ttcp.acks_sent",
                "flow.ttcp.acks_by_timer",
                "flow.ttcp.goodput_mbps",
            ],
            &pts,
        )
    };
    let v = |a, t, g| verdict_of("johnson", "A2s", &r(a, t, g)) == Verdict::Pass;
    assert!(v(101.9, 0.0, 1.0) && v(98.1, 0.0, 1.0));
    assert!(!v(102.1, 0.0, 1.0) && !v(97.9, 0.0, 1.0));
    assert!(v(100.0, 1.9, 1.0) && !v(100.0, 2.1, 1.0));
    assert!(v(100.0, 0.0, 0.991) && !v(100.0, 0.0, 0.989));
}

/// 32 KB, every run equal (zero-width intervals): N = 2 at 1.0, the
/// others at `1 + gain / 100`.
fn local_gains(gains: &[(&str, f64)]) -> Results {
    let pts: Vec<_> = gains
        .iter()
        .map(|(n, g)| (texts(&["32KiB", n]), runs(1.0 + g / 100.0, 0.0)))
        .collect();
    grid(&[RWND, N], &["flow.ttcp.goodput_mbps"], &pts)
}

#[test]
fn johnson_gains_within_one_point_of_the_thesis() {
    let g1 = |x: f64| local_gains(&[("2", 0.0), ("3", x), ("14", 4.0)]);
    edges(
        "johnson",
        "G1",
        g1,
        &[(1.01, true), (2.99, true), (0.99, false), (3.01, false)],
    );
    let g14 = |x: f64| local_gains(&[("2", 0.0), ("3", 2.0), ("14", x)]);
    edges(
        "johnson",
        "G1",
        g14,
        &[(3.01, true), (4.99, true), (2.99, false), (5.01, false)],
    );
    let g6 = |x: f64| local_gains(&[("2", 0.0), ("6", x)]);
    edges(
        "johnson",
        "G1-6",
        g6,
        &[(2.01, true), (3.99, true), (1.99, false), (4.01, false)],
    );
}

#[test]
fn johnson_n1_near_gain_intervals_apart() {
    let r = |n6: f64| {
        let pts = vec![
            (texts(&["2"]), runs(1.0, 0.01)),
            (texts(&["6"]), runs(n6, 0.01)),
        ];
        grid(&[N], &["flow.ttcp.goodput_mbps"], &pts)
    };
    // Ten runs at ±0.01: each interval's half-width is t(9) × 0.01054 / √10.
    let half = 2.262_157 * 0.010_540_925 / 10f64.sqrt();
    edges(
        "johnson",
        "N1",
        r,
        &[
            (1.0 + 2.0 * half + 1e-4, true),
            (1.0 + 2.0 * half - 1e-4, false),
        ],
    );
}

#[test]
fn johnson_adaptive_not_worse_decided_only_when_detectable() {
    let ack = "defaults.sink.ack";
    let r = |adaptive: f64, d: f64| {
        let pts = vec![
            (texts(&["delayed, count = 2"]), runs(1.0, d)),
            (texts(&["adaptive"]), runs(adaptive, d)),
        ];
        grid(&[ack], &["flow.ttcp.goodput_mbps"], &pts)
    };
    for id in ["X1", "X2"] {
        edges("johnson", id, |a| r(a, 0.0), &[(1.0, true), (0.999, false)]);
        assert!(matches!(
            verdict_of("johnson", id, &r(1.0, 0.1)),
            Verdict::Skipped(_)
        ));
    }
    let distant = |a: f64| {
        let pts = vec![
            (texts(&["delayed, count = 2"]), runs(1.0, 0.0)),
            (texts(&["adaptive"]), runs(a, 0.0)),
        ];
        grid(&[ack], &["flow.ftp.goodput_mbps"], &pts)
    };
    edges("johnson", "X3", distant, &[(1.0, true), (0.999, false)]);
}

// ---- shikama ----

const LOSS: &str = "link[wireless].forward.loss.p";
const GOODPUT: &str = "total_goodput_mbps";
const QUEUE: &str = "link.n2->n3.mean_queue_packets";
const BYPASS: &str = "agent[0].bypass";
const CC: &str = "defaults.tcp.cc";

/// The throughput experiment: (bypass, cc) -> goodput at P_L = 0.01
/// (elsewhere NewReno 1.0, Westwood 2.0, the PEP 3.0), every queue `queue`.
fn throughput(at01: impl Fn(&str, &str) -> f64, queue: f64) -> Results {
    let mut pts = Vec::new();
    for p in ["0.0001", "0.001", "0.01"] {
        for (by, cc) in [
            ("false", "newreno"),
            ("true", "newreno"),
            ("true", "westwood"),
        ] {
            let g = if p == "0.01" {
                at01(by, cc)
            } else if by == "false" {
                3.0
            } else if cc == "westwood" {
                2.0
            } else {
                1.0
            };
            pts.push((texts(&[p, by, cc]), vec![vec![g, queue]]));
        }
    }
    grid(&[LOSS, BYPASS, CC], &[GOODPUT, QUEUE], &pts)
}

#[test]
fn shikama_t1_t2_orderings() {
    let t1 = |pep: f64| {
        throughput(
            move |by, cc| match (by, cc) {
                ("false", _) => pep,
                (_, "westwood") => 2.0,
                _ => 1.0,
            },
            0.0,
        )
    };
    edges(
        "shikama",
        "T1",
        t1,
        &[(1.0001, true), (1.0, false), (0.9999, false)],
    );
    let t2 = |ww: f64| {
        throughput(
            move |by, cc| match (by, cc) {
                ("false", _) => 2.0,
                (_, "westwood") => ww,
                _ => 1.0,
            },
            0.0,
        )
    };
    edges("shikama", "T2", t2, &[(1.0001, true), (1.0, false)]);
}

#[test]
fn shikama_t3_pep_above_westwood() {
    let t3 = |pep: f64| {
        throughput(
            move |by, cc| match (by, cc) {
                ("false", _) => pep,
                (_, "westwood") => 1.5,
                _ => 1.0,
            },
            0.0,
        )
    };
    edges(
        "shikama",
        "T3",
        t3,
        &[(1.5001, true), (1.5, false), (1.4999, false)],
    );
}

#[test]
fn shikama_q4_queue_sd_about_twice_its_mean() {
    let r = |sd: f64| {
        queue_exp(&[QUEUE, "link.n2->n3.sd_queue_packets"], move |_, _, _| {
            vec![4.0, sd]
        })
    };
    edges(
        "shikama",
        "Q4",
        r,
        &[(6.01, true), (9.99, true), (5.99, false), (10.01, false)],
    );
}

#[test]
fn shikama_q1_no_queue_without_the_pep() {
    let r = |q: f64| throughput(|_, _| 1.0, q);
    edges("shikama", "Q1", r, &[(0.0999, true), (0.1001, false)]);
}

/// The queue experiment: every (P_L, rate, count) with the given
/// measures' values from `f(P_L, rate, count)`.
fn queue_exp(measures: &[&str], f: impl Fn(&str, &str, &str) -> Vec<f64>) -> Results {
    let mut pts = Vec::new();
    for p in [
        "0.0001", "0.0004", "0.0005", "0.001", "0.002", "0.003", "0.05",
    ] {
        for rate in ["6Mbit/s", "10Mbit/s"] {
            for n in ["1", "5"] {
                pts.push((texts(&[p, rate, n]), vec![f(p, rate, n)]));
            }
        }
    }
    grid(&[LOSS, "link[wired].rate", "flow[f].count"], measures, &pts)
}

#[test]
fn shikama_f1a_forward_data_within_the_window() {
    let window = 128.0 * 1024.0 / 1460.0;
    let r = |x: f64| queue_exp(&["agent.pep.max_forward_segments"], move |_, _, _| vec![x]);
    edges(
        "shikama",
        "F1a",
        r,
        &[(window - 0.01, true), (window + 0.01, false)],
    );
}

#[test]
fn shikama_f1_bursts_of_thirty() {
    let r = |big: f64| {
        queue_exp(
            &["agent.pep.bursts_30plus", "agent.pep.max_burst_packets"],
            move |_, _, _| vec![big, 40.0],
        )
    };
    edges("shikama", "F1", r, &[(0.05, true), (0.0, false)]);
}

#[test]
fn shikama_f3_five_connections_differ() {
    let r = |ks: f64| {
        queue_exp(&["agent.pep.ks_forward_burst"], move |p, _, n| {
            vec![if p == "0.001" && n == "5" { ks } else { 0.5 }]
        })
    };
    edges("shikama", "F3", r, &[(0.1, true), (0.0999, false)]);
}

#[test]
fn shikama_q2_queue_peaks_near_one_in_a_thousand() {
    let r = |peak: f64| {
        queue_exp(&[QUEUE], move |p, _, _| {
            let x: f64 = p.parse().unwrap();
            vec![if (x - peak).abs() < 1e-12 { 5.0 } else { 1.0 }]
        })
    };
    edges(
        "shikama",
        "Q2",
        r,
        &[
            (0.0005, true),
            (0.002, true),
            (0.0004, false),
            (0.003, false),
        ],
    );
}

#[test]
fn shikama_q3_faster_bottleneck_smaller_queue() {
    let r = |q10: f64| {
        queue_exp(&[QUEUE], move |p, rate, n| {
            vec![match (p, rate, n) {
                (_, "6Mbit/s", _) => 2.0,
                ("0.002", _, "5") => q10,
                _ => 1.0,
            }]
        })
    };
    edges(
        "shikama",
        "Q3",
        r,
        &[(1.999, true), (2.0, false), (2.001, false)],
    );
}

/// The mitigations experiment at P_L = 0.001: (queue, goodput) by mitigation.
fn mitigations(f: impl Fn(&str) -> (f64, f64)) -> Results {
    let pts: Vec<_> = [
        "none",
        "shape-6M",
        "maxburst-4",
        "maxburst-2",
        "pacing",
        "pacing-cwv",
    ]
    .iter()
    .map(|m| {
        let (q, g) = f(m);
        (texts(&["0.001", m]), vec![vec![q, g]])
    })
    .collect();
    grid(&[LOSS, "agent[0].mitigation"], &[QUEUE, GOODPUT], &pts)
}

#[test]
fn shikama_shaping_cuts_the_queue_and_keeps_throughput() {
    let s1 = |q: f64| mitigations(move |m| (if m == "shape-6M" { q } else { 5.0 }, 4.0));
    edges("shikama", "S1", s1, &[(0.999, true), (1.001, false)]);
    let s1b = |g: f64| mitigations(move |m| (1.0, if m == "shape-6M" { g } else { 4.0 }));
    edges(
        "shikama",
        "S1b",
        s1b,
        &[(4.0 * 0.9701, true), (4.0 * 0.9699, false)],
    );
}

// ---- gschwandtner ----

const UTIL: &str = "link.a->b.utilisation";
const JAIN: &str = "jain(flow.*.goodput_mbps)";

/// PEP points at local queues 300, 1000, 3000 and no-PEP points at link
/// queues 300, 1000, 3000: (utilisation, Jain's index) from `f(pep, q)`.
fn fig48(f: impl Fn(bool, &str) -> (f64, f64)) -> Results {
    let mut pts = Vec::new();
    for q in ["300", "1000", "3000"] {
        let (u, j) = f(true, q);
        pts.push((texts(&["", "", q]), vec![vec![u, j]]));
        let (u, j) = f(false, q);
        pts.push((texts(&["false", q, ""]), vec![vec![u, j]]));
    }
    let mut r = grid(
        &[
            "agent[pep].enabled",
            "link[split].queue.limit",
            "agent[pep].local_queue_limit",
        ],
        &[UTIL, JAIN],
        &pts,
    );
    // An empty text is an unset parameter.
    for p in &mut r.points {
        for v in &mut p.values {
            if v.as_ref().and_then(|v| v.as_str()) == Some("") {
                *v = None;
            }
        }
    }
    r
}

#[test]
fn gschwandtner_flat_within_two_percent() {
    let r = |low: f64| fig48(move |pep, q| (if pep && q == "1000" { low } else { 0.9 }, 1.0));
    edges(
        "gschwandtner",
        "FLAT",
        r,
        &[(0.9 * 0.9801, true), (0.9 * 0.9799, false)],
    );
}

#[test]
fn gschwandtner_gain_trend_over_every_queue() {
    // PEP 0.95 everywhere; no-PEP by Q.
    let r = |at300: f64, at1000: f64, at3000: f64| {
        fig48(move |pep, q| {
            let u = match (pep, q) {
                (true, _) => 0.95,
                (false, "300") => at300,
                (false, "1000") => at1000,
                _ => at3000,
            };
            (u, 1.0)
        })
    };
    for id in ["GAIN50", "GAIN5"] {
        let v = |a, b, c| verdict_of("gschwandtner", id, &r(a, b, c));
        assert_eq!(v(0.7, 0.85, 0.96), Verdict::Pass);
        // Within the 0.5-point slack a step the wrong way is noise.
        assert_eq!(v(0.7, 0.7 - 0.0049, 0.96), Verdict::Pass);
        assert_eq!(v(0.7, 0.7 - 0.0051, 0.96), Verdict::Fail);
        // No gain at the smallest Q.
        assert_eq!(v(0.9501, 0.96, 0.97), Verdict::Fail);
        assert_eq!(v(0.9499, 0.96, 0.97), Verdict::Pass);
    }
}

#[test]
fn gschwandtner_fair_half_the_unfairness() {
    let r = |with: f64| fig48(move |pep, _| (0.9, if pep { with } else { 0.96 }));
    edges(
        "gschwandtner",
        "FAIR",
        r,
        &[(0.9801, true), (0.9799, false)],
    );
}

// ---- every claim has an edge test ----

/// The papers whose claims this file and reproduce.rs cover.
pub(crate) const PAPERS: [&str; 6] = [
    "baseline",
    "osada2005",
    "shekhar",
    "johnson",
    "shikama",
    "gschwandtner",
];

/// Non-value claims with an edge test (here or in reproduce.rs).
const TESTED: &[(&str, &[&str])] = &[
    ("baseline", &["P1"]),
    (
        "osada2005",
        &[
            "F4", "F4b", "F5", "F6", "F7", "F7b", "F9", "F10", "N1", "T1", "A1", "A1s", "C1", "T1b",
        ],
    ),
    ("shekhar", &["T1-SAD", "T2", "T5-G", "C2", "C3", "C2-FR"]),
    (
        "johnson",
        &[
            "A1", "A2", "A2s", "G1", "G1-6", "N1", "D1", "X1", "X2", "X3",
        ],
    ),
    (
        "shikama",
        &[
            "T1", "T2", "T3", "Q1", "F1a", "F1", "F2", "F3", "Q2", "Q4", "Q3", "S1", "S1b",
        ],
    ),
    ("gschwandtner", &["FLAT", "GAIN50", "GAIN5", "FAIR"]),
];

#[test]
fn every_claim_has_an_edge_test() {
    for name in PAPERS {
        let tested = TESTED.iter().find(|t| t.0 == name).map_or(&[][..], |t| t.1);
        for c in (find(name).unwrap().claims)() {
            // Value claims: the generic tests (reproduce.rs, and the
            // analytic one above).
            if matches!(c.check, Check::Value { .. }) {
                continue;
            }
            assert!(
                tested.contains(&c.id),
                "{name} {}: no edge test (add one here and list it in TESTED)",
                c.id
            );
        }
    }
}
