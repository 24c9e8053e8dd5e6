//! The TCP models against analytic expectations, end to end through the
//! engine from scenario text: Reno/NewReno against Mathis et al. and
//! Padhye et al. (PFTK), CUBIC against its RFC 9438 curve, SACK recovery
//! against NewReno on the same drops, Westwood+ against NewReno under
//! random loss. docs/tcp.md lists these checks and their tolerances.

use pep_core::cc::{Growth, GrowthView, Recovery};
use pep_core::{Duration, Instant};
use pep_sim::sim::Retransmission;
use pep_sim::tcp::TxKind;
use pep_sim::{Scenario, Simulation};

/// Two hosts, one link; `link` adds lines to the `[[link]]` table (after
/// `rate`, `delay`, `queue`), `tcp` and `sink` fill the flow's tables.
fn two_hosts(
    duration: &str,
    seed: u64,
    (rate, delay, queue): (&str, &str, u32),
    link: &str,
    tcp: &str,
    sink: &str,
) -> Scenario {
    let text = format!(
        r#"
[scenario]
name = "tcp-models"
duration = "{duration}"
seed = {seed}
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
between = ["a", "b"]
rate = "{rate}"
delay = "{delay}"
queue = {{ limit = {queue} }}
{link}
[[flow]]
name = "f"
from = "a"
to = "b"
tcp = {{ mss = "1000B", header = "40B", min_rto = "200ms", clock_granularity = "1ms", {tcp} }}
sink = {{ ack = "every", {sink} }}
[output]
series = []
"#
    );
    Scenario::from_toml_str(&text, "tcp-models").unwrap_or_else(|e| panic!("{e}"))
}

fn at(secs: f64) -> Instant {
    Instant::ZERO + Duration::from_secs_f64(secs)
}

/// Goodput in bytes per second between two instants.
fn goodput(sim: &mut Simulation, from: f64, to: f64) -> f64 {
    sim.run_until(at(from));
    let a = sim.sink(0).delivered_bytes();
    sim.run_until(at(to));
    (sim.sink(0).delivered_bytes() - a) as f64 / (to - from)
}

/// Loss events: window reductions by fast retransmit or timeout.
fn loss_events(sim: &Simulation) -> u64 {
    let st = sim.sender(0).expect("started").stats();
    st.fast_retransmits + st.timeouts
}

// ---- Reno and NewReno against Mathis et al. and PFTK ------------------

/// 1 Gbit/s, 10 ms each way, a queue that never fills and a 64 MiB
/// window: only the random loss on the data direction limits the flow.
const FAST: (&str, &str, u32) = ("1Gbps", "10ms", 100_000);
const MSS: f64 = 1000.0;

/// The path's RTT: propagation plus one 1040 B packet and one 40 B ACK
/// serialized at 1 Gbit/s.
fn fast_rtt() -> f64 {
    0.020 + 1040.0 * 8.0 / 1e9 + 40.0 * 8.0 / 1e9
}

/// A long run with Bernoulli loss `p` on the data direction only.
fn lossy(cc: &str, p: f64, secs: u64, seed: u64) -> Simulation {
    let link = format!("[link.forward]\nloss = {{ kind = \"bernoulli\", p = {p} }}");
    let sc = two_hosts(
        &format!("{secs}s"),
        seed,
        FAST,
        &link,
        &format!("cc = \"{cc}\""),
        "rwnd = \"64MiB\"",
    );
    Simulation::new(&sc)
}

/// Mathis, Semke, Mahdavi, Ott (1997): `BW = (MSS/RTT) * sqrt(3/(2p))`.
fn mathis(p: f64) -> f64 {
    MSS / fast_rtt() * (1.5 / p).sqrt()
}

fn mathis_check(cc: &str, p: f64, secs: u64) {
    let mut sim = lossy(cc, p, secs, 1);
    let got = goodput(&mut sim, 10.0, secs as f64);
    let events = loss_events(&sim);
    let ratio = got / mathis(p);
    println!(
        "mathis {cc} p={p}: {got:.0} B/s, model {:.0}, ratio {ratio:.3}, {events} loss events",
        mathis(p)
    );
    assert!(events >= 300, "{cc} p={p}: only {events} loss events");
    assert!((ratio - 1.0).abs() <= 0.20, "{cc} p={p}: ratio {ratio:.3}");
}

#[test]
fn reno_matches_mathis_at_p_1e4() {
    mathis_check("reno", 1e-4, 560);
}

#[test]
fn newreno_matches_mathis_at_p_1e4() {
    mathis_check("newreno", 1e-4, 560);
}

#[test]
fn reno_and_newreno_match_mathis_at_p_1e3() {
    for cc in ["reno", "newreno"] {
        mathis_check(cc, 1e-3, 200);
    }
}

/// Padhye, Firoiu, Towsley, Kurose (1998), the full model (triple-duplicate
/// and timeout loss indications) without the receiver-window limit, in
/// packets per second; `b` packets per ACK, `t0` the first timeout.
fn pftk(p: f64, rtt: f64, t0: f64, b: f64) -> f64 {
    let q = 1.0 - p;
    let c = (2.0 + b) / (3.0 * b);
    let ew = c + (8.0 * q / (3.0 * b * p) + c * c).sqrt();
    let qhat = ((1.0 - q.powi(3)) * (1.0 + q.powi(3) * (1.0 - q.powf(ew - 3.0)))
        / (1.0 - q.powf(ew)))
    .min(1.0);
    let f = 1.0
        + p
        + 2.0 * p.powi(2)
        + 4.0 * p.powi(3)
        + 8.0 * p.powi(4)
        + 16.0 * p.powi(5)
        + 32.0 * p.powi(6);
    let num = q / p + ew + qhat / q;
    let den = rtt * (b / 2.0 * ew + 1.0) + qhat * t0 * f / q;
    num / den
}

#[test]
fn reno_and_newreno_match_pftk_with_timeouts_at_p_1e2() {
    for cc in ["reno", "newreno"] {
        let secs = 100;
        let mut sim = lossy(cc, 0.01, secs, 1);
        let got = goodput(&mut sim, 5.0, secs as f64);
        let s = sim.sender(0).unwrap();
        // T0: the RTO a first timeout waits, the configured 200 ms minimum
        // on this path (SRTT + 4 RTTVAR is about 20 ms).
        let t0 = s.rtt_estimator().base_rto();
        assert_eq!(t0, Duration::from_millis(200));
        let model = pftk(0.01, fast_rtt(), t0.as_secs_f64(), 1.0) * MSS;
        let st = s.stats();
        let ratio = got / model;
        println!(
            "pftk {cc}: {got:.0} B/s, model {model:.0} (no timeouts {:.0}), ratio {ratio:.3}, {} FR, {} TO",
            mathis(0.01),
            st.fast_retransmits,
            st.timeouts
        );
        assert!(loss_events(&sim) >= 300);
        assert!(st.timeouts > 0, "{cc}: the model's timeouts should occur");
        assert!((ratio - 1.0).abs() <= 0.25, "{cc}: ratio {ratio:.3}");
    }
}

// ---- CUBIC against its curve ------------------------------------------

/// Steps the simulation in `dt` increments until `done` holds (or `limit`),
/// calling `each` after every step.
fn step_until(
    sim: &mut Simulation,
    dt: Duration,
    limit: f64,
    mut each: impl FnMut(&Simulation) -> bool,
) -> Option<Instant> {
    while sim.now() < at(limit) {
        let next = sim.now() + dt;
        sim.run_until(next);
        if each(sim) {
            return Some(sim.now());
        }
    }
    None
}

#[test]
fn cubic_follows_its_curve_after_one_loss() {
    const C: f64 = 0.4;
    let rtt = 0.1;
    for sack in [false, true] {
        // 100 Mbit/s, 100 ms RTT: BDP 1202 packets. Segment 700 is lost in
        // slow start, so W_max is about 700 segments: K = cbrt(0.3 * 700 /
        // 0.4) = 8 s, when Reno-friendly growth (alpha 0.53 per RTT) would
        // have added about 40.
        let sc = two_hosts(
            "25s",
            1,
            ("100Mbps", "50ms", 100_000),
            "loss = { kind = \"drop\", flow = \"f\", segments = [700] }",
            "cc = \"cubic\"",
            &format!("rwnd = \"64MiB\", sack = {sack}"),
        );
        let mut sim = Simulation::new(&sc);
        let want_recovery = if sack {
            Recovery::Sack
        } else {
            Recovery::NewReno
        };
        // Watch every 50 us (under one packet time) for the largest cwnd
        // before recovery, and for recovery's start and end.
        let dt = Duration::from_micros(50);
        let mut w_max = 0;
        step_until(&mut sim, dt, 5.0, |s| {
            let tx = s.sender(0).unwrap();
            if !tx.in_recovery() {
                w_max = w_max.max(tx.cwnd());
            }
            tx.in_recovery()
        })
        .expect("the drop is detected");
        let end = step_until(&mut sim, dt, 5.0, |s| !s.sender(0).unwrap().in_recovery())
            .expect("recovery ends");
        let tx = sim.sender(0).unwrap();
        assert_eq!(tx.congestion().recovery(), want_recovery);
        assert!(matches!(tx.congestion().growth(), Growth::Cubic(_)));
        assert_eq!(tx.stats().timeouts, 0);
        let w_max = w_max as f64 / MSS;
        let cwnd_epoch = tx.cwnd() as f64 / MSS;
        // The controller's own W_max is the cwnd it was reduced from.
        let GrowthView::Cubic(v) = tx.congestion().growth_view() else {
            panic!()
        };
        assert_eq!(v.w_max, Some(w_max), "sack {sack}");
        // beta = 0.7 of the flight (which was the window).
        assert!(
            (cwnd_epoch / w_max - 0.7).abs() < 0.01,
            "{cwnd_epoch} / {w_max}"
        );
        // Independent K from RFC 9438 Figure 2.
        let k = ((w_max - cwnd_epoch) / C).cbrt();
        let t0 = end.as_nanos() as f64 / 1e9;
        let mut worst: f64 = 0.0;
        for i in 1..=((k + 4.0) as u64) {
            let t = i as f64;
            sim.run_until(at(t0 + t));
            let got = sim.sender(0).unwrap().cwnd() as f64 / MSS;
            let want = C * (t - k).powi(3) + w_max;
            worst = worst.max((got - want).abs() / w_max);
            assert!(
                (got - want).abs() <= 0.05 * w_max,
                "sack {sack}, t = {t} s: cwnd {got:.1}, W_cubic {want:.1} (W_max {w_max})"
            );
        }
        // Back to W_max within one RTT of K.
        let mut sim2 = Simulation::new(&sc);
        sim2.run_until(end);
        let regain = step_until(&mut sim2, dt, t0 + k + 2.0, |s| {
            s.sender(0).unwrap().cwnd() as f64 >= w_max * MSS
        })
        .expect("W_max regained");
        let after = regain.as_nanos() as f64 / 1e9 - t0;
        println!(
            "cubic sack={sack}: W_max {w_max}, cwnd_epoch {cwnd_epoch}, K {k:.3} s, regained at {after:.3} s, worst error {:.2}% of W_max",
            worst * 100.0
        );
        assert!(
            (after - k).abs() <= rtt,
            "regained W_max at {after:.3} s, K = {k:.3} s"
        );
    }
}

// ---- SACK against NewReno on the same three drops ------------------------

fn kinds(r: &[Retransmission]) -> Vec<(u32, TxKind)> {
    r.iter().map(|x| (x.offset / 1000 + 1, x.kind)).collect()
}

/// Segments 30, 33 and 36 lost in one window (10 Mbit/s, 20 ms each way):
/// the retransmissions, and the repair time in RTTs (first retransmission
/// to the end of recovery, over the smoothed RTT then).
fn three_drops(cc: &str, sack: bool) -> (Vec<(u32, TxKind)>, f64, u64) {
    let sc = two_hosts(
        "5s",
        1,
        ("10Mbps", "20ms", 1000),
        "loss = { kind = \"drop\", flow = \"f\", segments = [30, 33, 36] }",
        &format!("cc = \"{cc}\", init_cwnd = 2"),
        &format!("rwnd = \"64KiB\", sack = {sack}"),
    );
    let mut sim = Simulation::new(&sc);
    let dt = Duration::from_micros(100);
    let start = step_until(&mut sim, dt, 5.0, |s| s.sender(0).unwrap().in_recovery()).unwrap();
    let end = step_until(&mut sim, dt, 5.0, |s| !s.sender(0).unwrap().in_recovery()).unwrap();
    let srtt = sim.sender(0).unwrap().srtt().unwrap();
    sim.run();
    let rtts = (end - start).as_secs_f64() / srtt.as_secs_f64();
    (
        kinds(sim.retransmissions(0)),
        rtts,
        sim.sender(0).unwrap().stats().timeouts,
    )
}

#[test]
fn sack_repairs_three_drops_in_one_rtt_newreno_in_three() {
    let (sack, sack_rtts, sack_rto) = three_drops("sack", true);
    let (nr, nr_rtts, nr_rto) = three_drops("newreno", false);
    println!("three drops: SACK {sack_rtts:.2} RTTs, NewReno {nr_rtts:.2} RTTs");
    assert_eq!(
        sack,
        [
            (30, TxKind::FastRetransmit),
            (33, TxKind::SackRetransmit),
            (36, TxKind::SackRetransmit)
        ]
    );
    assert_eq!(
        nr,
        [
            (30, TxKind::FastRetransmit),
            (33, TxKind::PartialAckRetransmit),
            (36, TxKind::PartialAckRetransmit)
        ]
    );
    assert_eq!((sack_rto, nr_rto), (0, 0));
    // SACK: one RTT, plus the few packet times until the last hole is
    // known lost and the retransmissions' wait in the bottleneck queue.
    assert!(
        (0.9..=1.5).contains(&sack_rtts),
        "SACK took {sack_rtts:.2} RTTs"
    );
    // NewReno: one hole per RTT.
    assert!(
        (2.7..=3.3).contains(&nr_rtts),
        "NewReno took {nr_rtts:.2} RTTs"
    );
}

/// Slow start overshoots a 100-packet queue (20 Mbit/s, 40 ms each way)
/// and DropTail takes about every other segment of a window of several
/// hundred: (timeouts, retransmissions, recovery episodes) in 3 s.
fn overshoot(cc: &str, sack: bool) -> (u64, u64, u64) {
    let sc = two_hosts(
        "3s",
        1,
        ("20Mbps", "40ms", 100),
        "",
        &format!("cc = \"{cc}\""),
        &format!("rwnd = \"16MiB\", sack = {sack}"),
    );
    let mut sim = Simulation::new(&sc);
    sim.run();
    let st = sim.sender(0).unwrap().stats();
    let drops = sim.link("a->b").unwrap().queue.stats.dropped;
    assert!(drops > 100, "{cc}: only {drops} drops");
    (st.timeouts, st.retransmitted_segments, st.fast_retransmits)
}

#[test]
fn sack_repairs_a_slow_start_overshoot_without_a_timeout() {
    let (to, rtx, fr) = overshoot("sack", true);
    println!("overshoot: SACK {to} timeouts, {rtx} retransmissions, {fr} recoveries");
    assert_eq!(to, 0);
    assert!(
        rtx > 100 && fr <= 2,
        "{rtx} retransmissions in {fr} recoveries"
    );
    // NewReno, one hole per RTT, runs into its retransmission timer.
    let (to, rtx, _) = overshoot("newreno", false);
    println!("overshoot: NewReno {to} timeouts, {rtx} retransmissions");
    assert!(to >= 1);
}

// ---- Westwood+ against NewReno under random loss --------------------------

/// Mean goodput (bytes/s, after a 5 s warm-up) over seeds 1..=5 of a bulk
/// flow over 5 Mbit/s, 20 ms each way, 1% loss on the data direction.
fn wireless(cc: &str) -> f64 {
    let seeds = 1..=5u64;
    let n = seeds.clone().count() as f64;
    seeds
        .map(|seed| {
            let sc = two_hosts(
                "60s",
                seed,
                ("5Mbps", "20ms", 100),
                "[link.forward]\nloss = { kind = \"bernoulli\", p = 0.01 }",
                &format!("cc = \"{cc}\""),
                "rwnd = \"128KiB\"",
            );
            let mut sim = Simulation::new(&sc);
            goodput(&mut sim, 5.0, 60.0)
        })
        .sum::<f64>()
        / n
}

#[test]
fn westwood_beats_newreno_under_random_loss() {
    let ww = wireless("westwood");
    let nr = wireless("newreno");
    let link = 5e6 / 8.0 * 1000.0 / 1040.0;
    println!(
        "westwood {ww:.0} B/s ({:.2} of link), newreno {nr:.0} B/s ({:.2}), ratio {:.3}",
        ww / link,
        nr / link,
        ww / nr
    );
    assert!(
        ww >= 1.5 * nr,
        "Westwood+ {ww:.0} B/s vs NewReno {nr:.0} B/s"
    );
    assert!(ww <= link);
}

// ---- Tahoe ------------------------------------------------------------------

#[test]
fn tahoe_goes_back_n_after_a_fast_retransmit() {
    let sc = two_hosts(
        "5s",
        1,
        ("10Mbps", "20ms", 1000),
        "loss = { kind = \"drop\", flow = \"f\", segments = [30, 33, 36] }",
        "cc = \"tahoe\", init_cwnd = 2",
        "rwnd = \"64KiB\"",
    );
    let mut sim = Simulation::new(&sc);
    sim.run();
    let r = kinds(sim.retransmissions(0));
    // One fast retransmit; its ACK stops at the next hole, 33, and slow
    // start resends from there, received or not (34 was); the ACK of 33
    // covers 35, so resending resumes at 36.
    assert_eq!(r[0], (30, TxKind::FastRetransmit), "{r:?}");
    let gb = TxKind::GoBackN;
    assert_eq!(r[1..4], [(33, gb), (34, gb), (36, gb)]);
    assert!(r[1..].iter().all(|&(_, k)| k == TxKind::GoBackN), "{r:?}");
    let s = sim.sender(0).unwrap();
    assert_eq!(s.congestion().recovery(), Recovery::Tahoe);
    assert_eq!((s.stats().fast_retransmits, s.stats().timeouts), (1, 0));
    assert!(sim.sink(0).delivered_bytes() > 4_000_000);
}
