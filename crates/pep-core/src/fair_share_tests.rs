//! Properties of the sharing, on flows that ask as a relay reads: a
//! backlogged flow asks for a read's worth whenever it may, an
//! application-limited one for what its sender produced; each ask comes
//! a seeded random scheduling delay after the instant it was due.

use super::*;
use crate::rng::Stream;
use crate::time::Rate;

/// 8 Mbit/s: 1000 B per ms; quanta of 10 ms, a bucket of 50 ms.
const RATE: Rate = Rate::mbps(8);
const QUANTUM: u64 = 10_000;
const DEPTH: u64 = 50_000;
/// A read's worth.
const READ: u64 = 64 << 10;

fn cfg() -> FairShareConfig {
    FairShareConfig {
        bucket: ShaperConfig {
            rate: RATE,
            depth: DEPTH,
            overhead: 0,
            quantum: QUANTUM,
        },
        slack: DEPTH,
        idle: Duration::from_millis(100),
    }
}

fn ms(t: u64) -> Instant {
    Instant::from_nanos(t.saturating_mul(1_000_000))
}

/// What a simulated flow asks for.
#[derive(Clone, Copy)]
enum Demand {
    /// Always a read's worth, from `start` until `stop`.
    Bulk { start: u64, stop: u64 },
    /// Bytes produced at this many per ms (asks every ms for them).
    Limited { per_ms: u64 },
    /// Backlogged, but asks for the rest of a read's worth until it is
    /// paid, then for the next read (a pump that reads, then pays): the
    /// last piece of each read is granted whole.
    Reads,
}

struct Run {
    /// Bytes each flow was granted in the window.
    got: Vec<u64>,
    /// Bytes granted to all, and the most by any instant beyond what the
    /// rate allows since 0 (the bucket's burst at most).
    total: u64,
    worst_excess: i64,
}

/// Runs `flows` until `end` ms; counts grants from `from` ms on.
fn run(flows: &[Demand], seed: u64, jitter_us: u64, from: u64, end: u64) -> Run {
    run_late(flows, &[], seed, jitter_us, from, end)
}

/// [`run`] with flow k's every ask `late[k]` µs later than due (a
/// systematically slower reader).
fn run_late(flows: &[Demand], late: &[u64], seed: u64, jitter_us: u64, from: u64, end: u64) -> Run {
    let mut fs = FairShare::new(cfg());
    let ids: Vec<ShareId> = flows.iter().map(|_| fs.open()).collect();
    let mut rng = Stream::derive(seed, "fair_share/jitter");
    let mut jitter = |t: Instant, k: usize| {
        let us = if jitter_us == 0 {
            0
        } else {
            rng.next_u64() % jitter_us
        };
        t + Duration::from_micros(us + late.get(k).copied().unwrap_or(0))
    };
    // Each flow's next ask and, when limited, its unread bytes.
    let mut next: Vec<Instant> = flows
        .iter()
        .map(|d| match *d {
            Demand::Bulk { start, .. } => ms(start),
            Demand::Limited { .. } | Demand::Reads => ms(1),
        })
        .collect();
    let mut pending = vec![0u64; flows.len()];
    let mut produced_at = vec![Instant::ZERO; flows.len()];
    let mut got = vec![0u64; flows.len()];
    let (mut total, mut worst_excess) = (0u64, i64::MIN);
    loop {
        let (k, &now) = next.iter().enumerate().min_by_key(|&(_, t)| *t).unwrap();
        if now >= ms(end) {
            break;
        }
        let want = match flows[k] {
            Demand::Bulk { stop, .. } if now >= ms(stop) => {
                next[k] = Instant::MAX;
                continue;
            }
            Demand::Bulk { .. } => READ,
            Demand::Reads => {
                if pending[k] == 0 {
                    pending[k] = READ;
                }
                pending[k]
            }
            Demand::Limited { per_ms } => {
                let elapsed = now.saturating_since(produced_at[k]).as_nanos();
                pending[k] += per_ms * elapsed / 1_000_000;
                produced_at[k] = now;
                pending[k]
            }
        };
        let g = fs.release(now, ids[k], want);
        total += g;
        if now >= ms(from) {
            got[k] += g;
        }
        let allowed = RATE.bytes_in(Duration::from_nanos(now.as_nanos())) as i64;
        worst_excess = worst_excess.max(total as i64 - allowed);
        next[k] = match flows[k] {
            Demand::Bulk { .. } if g < want => jitter(fs.poll_timeout(ids[k]).expect("a time"), k),
            // Read it all: the next read when the socket has more.
            Demand::Bulk { .. } => jitter(now + Duration::from_millis(1), k),
            Demand::Limited { .. } | Demand::Reads => {
                pending[k] -= g;
                match fs.poll_timeout(ids[k]).filter(|_| g < want) {
                    Some(t) => jitter(t, k),
                    None => jitter(now + Duration::from_millis(1), k),
                }
            }
        };
    }
    Run {
        got,
        total,
        worst_excess,
    }
}

fn bytes_per_ms(r: &Run, k: usize, from: u64, end: u64) -> f64 {
    r.got[k] as f64 / (end - from) as f64
}

#[test]
fn backlogged_flows_each_get_an_equal_share_whoever_started_first() {
    for n in [2usize, 3, 5, 8] {
        for seed in 0..6 {
            // The first starts alone, the others 1 s later.
            let flows: Vec<Demand> = (0..n)
                .map(|k| Demand::Bulk {
                    start: if k == 0 { 0 } else { 1000 },
                    stop: u64::MAX,
                })
                .collect();
            let (from, end) = (1500, 4500);
            let r = run(&flows, seed, 2000, from, end);
            let share = 1000.0 / n as f64;
            for k in 0..n {
                let got = bytes_per_ms(&r, k, from, end);
                // Any two flows' grants differ by at most the slack and a
                // read at either end of the window: 2 x 114 kB over 3 s.
                let bound = 2.0 * (DEPTH + READ) as f64 / (end - from) as f64;
                assert!(
                    (got - share).abs() <= bound,
                    "n {n} seed {seed}: flow {k} got {got:.1} B/ms, share {share:.1} (±{bound:.1})"
                );
            }
            let sum: f64 = (0..n).map(|k| bytes_per_ms(&r, k, from, end)).sum();
            // At the rate, and above it by no more than a bucket.
            let most = 1000.0 + DEPTH as f64 / (end - from) as f64;
            assert!((970.0..=most).contains(&sum), "n {n}: sum {sum}");
        }
    }
}

#[test]
fn pumps_that_read_then_pay_share_equally_too() {
    // Each read's last piece is granted whole, so a pump stops waiting
    // between reads: the rule must not forgive the lead it had on it.
    for seed in 0..6 {
        let (from, end) = (1000, 4000);
        // The second pump always 2 ms slower to ask than the first.
        let r = run_late(
            &[Demand::Reads, Demand::Reads],
            &[0, 2000],
            seed,
            1000,
            from,
            end,
        );
        let bound = 2.0 * (DEPTH + READ) as f64 / (end - from) as f64;
        for k in 0..2 {
            let got = bytes_per_ms(&r, k, from, end);
            assert!(
                (got - 500.0).abs() <= bound,
                "seed {seed}: flow {k} got {got:.1} B/ms (500 ± {bound:.1})"
            );
        }
    }
}

#[test]
fn the_total_never_exceeds_the_rate_beyond_one_bucket() {
    for seed in 0..6 {
        let flows = [
            Demand::Bulk {
                start: 0,
                stop: 700,
            },
            Demand::Bulk {
                start: 300,
                stop: u64::MAX,
            },
            Demand::Limited { per_ms: 150 },
            Demand::Bulk {
                start: 1200,
                stop: 1900,
            },
        ];
        let r = run(&flows, seed, 3000, 0, 3000);
        // The bucket starts full: DEPTH ahead of the rate at most.
        assert!(
            r.worst_excess <= DEPTH as i64,
            "seed {seed}: {} B beyond the rate",
            r.worst_excess
        );
        // ... and the flows used it: within 2 % of the rate over 3 s.
        assert!(r.total >= 2_940_000, "seed {seed}: {}", r.total);
    }
}

#[test]
fn a_flow_that_stops_leaves_its_share_to_the_others() {
    for seed in 0..6 {
        let bulk = |stop| Demand::Bulk { start: 0, stop };
        // Three share until 1 s; the third stops asking (it never closes).
        let r = run(
            &[bulk(u64::MAX), bulk(u64::MAX), bulk(1000)],
            seed,
            2000,
            1200,
            4200,
        );
        for k in 0..2 {
            let got = bytes_per_ms(&r, k, 1200, 4200);
            assert!(
                (got - 500.0).abs() <= 40.0,
                "seed {seed}: flow {k} {got:.1}"
            );
        }
        assert_eq!(r.got[2], 0);
    }
}

#[test]
fn a_flow_asking_less_than_its_share_gets_it_and_the_rest_goes_to_the_others() {
    for seed in 0..6 {
        let bulk = Demand::Bulk {
            start: 0,
            stop: u64::MAX,
        };
        // 100 B/ms (a tenth of the rate) beside two bulk flows: max-min
        // gives it all it asks, and each bulk flow 450.
        let r = run(
            &[bulk, bulk, Demand::Limited { per_ms: 100 }],
            seed,
            2000,
            1000,
            4000,
        );
        let got: Vec<f64> = (0..3).map(|k| bytes_per_ms(&r, k, 1000, 4000)).collect();
        assert!(
            (got[2] - 100.0).abs() <= 5.0,
            "seed {seed}: limited {got:?}"
        );
        for k in 0..2 {
            assert!((got[k] - 450.0).abs() <= 40.0, "seed {seed}: {got:?}");
        }
    }
}

#[test]
fn without_the_rule_the_first_to_ask_takes_the_bucket() {
    // The contrast: with no slack limit (first come, first served, as one
    // shared bucket is) a flow asking without delay starves one whose
    // asks come late. With the rule both get half.
    let unfair = FairShareConfig {
        slack: u64::MAX / 4,
        ..cfg()
    };
    let halves = |cfg: FairShareConfig| {
        let mut fs = FairShare::new(cfg);
        let (a, b) = (fs.open(), fs.open());
        let (mut got, mut t) = ([0u64; 2], ms(0));
        while t < ms(2000) {
            // a asks at each refill instant, b 2 ms later.
            got[0] += fs.release(t, a, READ);
            got[1] += fs.release(t + Duration::from_millis(2), b, READ);
            t += Duration::from_millis(10);
        }
        got
    };
    let fcfs = halves(unfair);
    assert!(fcfs[1] * 4 < fcfs[0], "first come, first served: {fcfs:?}");
    let fair = halves(cfg());
    // Apart by at most the slack and one grant (a bucket's depth).
    let diff = fair[0].abs_diff(fair[1]);
    assert!(diff <= cfg().slack + DEPTH, "fair: {fair:?}");
}

#[test]
fn closed_slots_are_reused_and_hold_nobody_back() {
    let mut fs = FairShare::new(cfg());
    let (a, b) = (fs.open(), fs.open());
    // b is held back by the empty bucket: it is waiting.
    assert_eq!(fs.release(ms(0), a, DEPTH), DEPTH);
    assert_eq!(fs.release(ms(0), b, READ), 0);
    assert_eq!(fs.poll_timeout(b), Some(ms(10)));
    fs.close(b);
    assert_eq!(fs.flows(), 1);
    // a, far ahead of the closed b, is not held for it.
    assert_eq!(fs.release(ms(60), a, READ), DEPTH);
    assert_eq!(fs.open(), b, "the slot again");
    assert_eq!(fs.release(ms(60), ShareId(7), READ), 0, "no such flow");
    assert_eq!(fs.release(ms(60), a, 0), 0);
}
