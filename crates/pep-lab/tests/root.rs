//! End-to-end lab tests: real namespaces, emulated links, real Linux TCP.
//!
//! They need root (namespaces, packet sockets) and `ip` (iproute2), and
//! are `#[ignore]`d: as root add `-- --include-ignored`. Each builds its own lab with
//! a `pepl-<pid>-<n>` id and removes it on success or failure (the `Lab`
//! guard's `Drop`). They take a global lock, so one runs at a time and none
//! disturbs another's timing. No packet leaves the namespaces they create.
//!
//! Measured numbers are printed: `cargo test -p pep-lab --test root --
//! --nocapture` shows them.

use std::sync::{Mutex, MutexGuard};

use pep_core::{Duration, Rate};
use pep_io::clock::IdlePolling;
use pep_lab::lab::{Lab, LabOptions};
use pep_lab::probe::{ping, udp_probe, UdpProbeReport, UdpProbeSpec};
use pep_lab::state::Endpoint;
use pep_lab::topology::{DirParams, LabTopology, LossParams, Role};
use pep_lab::traffic::{self, Amount, FlowSpec, TrafficOptions};

static SERIAL: Mutex<()> = Mutex::new(());

/// The lock. The tests taking it are `#[ignore = "needs root"]`; run
/// anyway without root, they fail here saying why.
fn root_test(name: &str) -> MutexGuard<'static, ()> {
    pep_lab::error::require_root_for_test(name);
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Two hosts joined by one link with the same parameters both ways.
fn two_hosts(name: &str, d: DirParams) -> LabTopology {
    let mut t = LabTopology::new(name, 1);
    t.node("a", Role::Host);
    t.node("b", Role::Host);
    t.link("a", "b", d, d);
    t
}

fn ms(d: Duration) -> f64 {
    d.as_millis_f64()
}

/// The delay test's train: `packets` datagrams of 1000 B at 10 % of
/// `rate` (so nothing queues) from `a` to `b`. Returns what arrived and
/// the one-way delay a link of `rate` and `delay` gives each.
fn sparse_train(
    a: &Endpoint,
    b: &Endpoint,
    rate: Rate,
    delay: Duration,
    packets: u32,
) -> (UdpProbeReport, Duration) {
    let size = 1000;
    let sparse = UdpProbeSpec {
        packets,
        ip_size: size,
        rate: Some(Rate(rate.as_bps() / 10)),
        port: 6000,
        linger: Duration::from_millis(300),
    };
    let r = udp_probe(a, b, &sparse).unwrap();
    (r, delay + rate.tx_time(size as u64))
}

/// Payload rate of a link of `rate` for full segments of `mss` bytes with
/// 52 bytes of IP and TCP header (timestamps on, as Linux sends them).
fn net_of_headers(rate: Rate, mss: u32) -> f64 {
    rate.as_mbps_f64() * mss as f64 / (mss + 52) as f64
}

/// The issue's reference path: 10 Mbit/s, 100 ms each way, queue larger
/// than the BDP (167 packets), so cubic keeps the link busy once its
/// window has grown.
#[test]
#[ignore = "needs root"]
fn geo_like_path_rtt_goodput_and_exact_stream() {
    let _g = root_test("geo_like_path");
    let d = DirParams::new(Rate::mbps(10), Duration::from_millis(100), 250);
    let lab = Lab::up(&two_hosts("geo", d), &LabOptions::default()).expect("lab up");
    let (a, b) = (lab.endpoint("a").unwrap(), lab.endpoint("b").unwrap());

    // 84-byte echo packets: 2 x 67 us of serialization on top of 200 ms.
    let p = ping(
        &a,
        b.addr,
        20,
        Duration::from_millis(50),
        56,
        Duration::from_secs(1),
    )
    .unwrap();
    println!(
        "ping: {}/{} replies, rtt min {:.3} median {:.3} mean {:.3} max {:.3} ms",
        p.received(),
        p.sent,
        ms(p.min()),
        ms(p.median()),
        ms(p.mean()),
        ms(p.max())
    );
    assert_eq!(p.received(), 20);
    assert!(
        (ms(p.median()) - 200.0).abs() < 2.0,
        "median rtt {:?}",
        p.median()
    );
    assert!(
        (ms(p.mean()) - 200.0).abs() < 2.0,
        "mean rtt {:?}",
        p.mean()
    );

    let mut f = FlowSpec::new("bulk", a, b, Amount::For(Duration::from_secs(13)));
    f.cc = "cubic".into();
    f.seed = 2024;
    let opts = TrafficOptions {
        deadline: Duration::from_secs(40),
        ..TrafficOptions::default()
    };
    let r = traffic::run(&[f], &opts).unwrap();
    let flow = &r.flows[0];
    assert!(flow.byte_exact(), "not byte-exact: {flow:?}");
    // Once slow start is over (3 s) until the sender stops (13 s): the rate
    // at which data reaches the receiver's TCP, from the sender's
    // tcpi_delivered. The receiver's own goodput over such a window is
    // biased by up to a window of data held back for in-order delivery
    // around a loss at either end; it is printed for comparison.
    let (t0, t1) = (Duration::from_secs(3), Duration::from_millis(12_900));
    let mss = flow.last_sample().map_or(1448, |s| s.snd_mss);
    let want = net_of_headers(Rate::mbps(10), mss);
    let delivered = flow.delivery_rate_between(t0, t1).unwrap().as_mbps_f64();
    let goodput = flow.goodput_between(r.interval, t0, t1).as_mbps_f64();
    let whole = flow.delivered_bytes as f64 * 8e-6
        / (flow.last_byte.unwrap() - pep_core::Instant::ZERO).as_secs_f64();
    println!(
        "bulk cubic: {} bytes byte-exact, {} segments retransmitted; 3-12.9 s: delivered \
         {delivered:.3} Mbit/s, receiver goodput {goodput:.3} Mbit/s; whole transfer \
         {whole:.3} Mbit/s; link net of headers {want:.3} Mbit/s",
        flow.delivered_bytes,
        flow.last_sample().map_or(0, |s| s.total_retrans)
    );
    assert!(
        (delivered / want - 1.0).abs() < 0.05,
        "delivered {delivered:.3} vs {want:.3}"
    );
    let reports = lab.down().unwrap();
    for rep in &reports {
        assert_eq!(rep.truncated, 0, "{}: offloads left on", rep.name);
    }
}

/// A receiver with a small `SO_RCVBUF` limits the flow to about rwnd/RTT,
/// rwnd being the window the kernel actually advertises (it doubles
/// SO_RCVBUF and keeps part of it for overhead).
#[test]
#[ignore = "needs root"]
fn window_limited_transfer_reaches_rwnd_over_rtt() {
    let _g = root_test("window_limited");
    let d = DirParams::new(Rate::mbps(10), Duration::from_millis(100), 250);
    let lab = Lab::up(&two_hosts("rwnd", d), &LabOptions::default()).expect("lab up");
    let (a, b) = (lab.endpoint("a").unwrap(), lab.endpoint("b").unwrap());
    let mut f = FlowSpec::new("small-rwnd", a, b, Amount::For(Duration::from_secs(10)));
    f.rcvbuf = Some(64 << 10);
    let opts = TrafficOptions {
        deadline: Duration::from_secs(30),
        ..TrafficOptions::default()
    };
    let r = traffic::run(&[f], &opts).unwrap();
    let flow = &r.flows[0];
    assert!(flow.byte_exact(), "not byte-exact: {flow:?}");
    let (t0, t1) = (Duration::from_secs(3), Duration::from_secs(10));
    let steady: Vec<_> = flow.samples_between(t0, t1).collect();
    assert!(steady.len() > 40, "{} samples", steady.len());
    let n = steady.len() as f64;
    let rwnd = steady
        .iter()
        .map(|s| s.snd_wnd.expect("kernel reports snd_wnd") as f64)
        .sum::<f64>()
        / n;
    let rtt_s = steady.iter().map(|s| s.rtt_us as f64).sum::<f64>() / n / 1e6;
    let expect = rwnd * 8.0 / rtt_s / 1e6;
    let got = flow.goodput_between(r.interval, t0, t1).as_mbps_f64();
    println!(
        "window-limited: SO_RCVBUF 64 KiB -> advertised {rwnd:.0} B, srtt {:.1} ms; goodput \
         {got:.3} Mbit/s vs rwnd/RTT {expect:.3}",
        rtt_s * 1e3
    );
    assert!(
        expect < 8.0,
        "the window should limit the flow: {expect:.3}"
    );
    assert!((got / expect - 1.0).abs() < 0.10, "{got:.3} vs {expect:.3}");
    lab.down().unwrap();
}

/// `FlowSpec::window_clamp` is the window the sender sees, exactly, below
/// 64 KB (no window scaling) and above it, and the flow gets window/RTT.
/// (Linux 6.18 overwrites a clamp set only before the handshake: the
/// sender then saw 65535 B whatever was asked.)
#[test]
#[ignore = "needs root"]
fn window_clamp_is_the_window_the_sender_sees() {
    let _g = root_test("window_clamp");
    let d = DirParams::new(Rate::mbps(100), Duration::from_millis(20), 1000);
    let lab = Lab::up(&two_hosts("clamp", d), &LabOptions::default()).expect("lab up");
    let (a, b) = (lab.endpoint("a").unwrap(), lab.endpoint("b").unwrap());
    let mss = 1448;
    let asked = [20, 100];
    let flows: Vec<FlowSpec> = asked
        .iter()
        .enumerate()
        .map(|(i, segs)| {
            let mut f = FlowSpec::new(
                &format!("w{segs}"),
                a.clone(),
                b.clone(),
                Amount::For(Duration::from_secs(5)),
            );
            f.cc = "reno".into();
            f.window_clamp = Some(segs * mss);
            f.port = 5001 + i as u16;
            f
        })
        .collect();
    let opts = TrafficOptions {
        deadline: Duration::from_secs(30),
        ..TrafficOptions::default()
    };
    let r = traffic::run(&flows, &opts).unwrap();
    let (t0, t1) = (Duration::from_secs(2), Duration::from_secs(5));
    for (flow, segs) in r.flows.iter().zip(asked) {
        assert!(flow.byte_exact(), "not byte-exact: {flow:?}");
        let steady: Vec<_> = flow.samples_between(t0, t1).collect();
        assert!(steady.len() > 20, "{} samples", steady.len());
        let wnd: Vec<u32> = steady.iter().map(|s| s.snd_wnd.expect("snd_wnd")).collect();
        let (lo, hi) = (*wnd.iter().min().unwrap(), *wnd.iter().max().unwrap());
        let n = steady.len() as f64;
        let rtt_s = steady.iter().map(|s| s.rtt_us as f64).sum::<f64>() / n / 1e6;
        let expect = (segs * mss) as f64 * 8.0 / rtt_s / 1e6;
        let got = flow.goodput_between(r.interval, t0, t1).as_mbps_f64();
        println!(
            "{}: asked {} B, sender saw {lo}..{hi} B; srtt {:.1} ms; goodput {got:.2} Mbit/s, \
             window/RTT {expect:.2}",
            flow.name,
            segs * mss,
            rtt_s * 1e3
        );
        // Within one segment: the receiver may round its window down.
        assert!(
            hi <= segs * mss && lo + mss >= segs * mss,
            "{}: the sender saw {lo}..{hi} B, asked {}",
            flow.name,
            segs * mss
        );
        assert!((got / expect - 1.0).abs() < 0.10, "{got:.3} vs {expect:.3}");
    }
    lab.down().unwrap();
}

/// Emulated rate within 2 % and delay within 1 ms (median and 95th
/// percentile of a sparse train), at 10 and 100 Mbit/s.
#[test]
#[ignore = "needs root"]
fn rate_and_delay_hold_up_to_100mbps() {
    let _g = root_test("rate_and_delay");
    for mbps in [10u64, 100] {
        let rate = Rate::mbps(mbps);
        let delay = Duration::from_millis(10);
        let d = DirParams::new(rate, delay, 1000);
        let lab = Lab::up(&two_hosts("rate", d), &LabOptions::default()).expect("lab up");
        let (a, b) = (lab.endpoint("a").unwrap(), lab.endpoint("b").unwrap());

        let (r, base) = sparse_train(&a, &b, rate, delay, 1000);
        let excess = |q| ms(r.owd_quantile(q)) - ms(base);
        println!(
            "{mbps} Mbit/s: one-way delay minus (delay + serialization {:.3} ms): min {:.3} \
             median {:.3} p95 {:.3} p99 {:.3} max {:.3} ms",
            ms(base),
            excess(0.0),
            excess(0.5),
            excess(0.95),
            excess(0.99),
            excess(1.0)
        );
        let fwd = &lab.link_reports()[0];
        println!(
            "{mbps} Mbit/s: the emulator's timers late by p50 {:.3} p99 {:.3} max {:.3} ms \
             (SCHED_FIFO {}, idle CPUs polling {})",
            ms(fwd.lateness.quantile(0.5)),
            ms(fwd.lateness.quantile(0.99)),
            ms(fwd.lateness.max()),
            fwd.realtime,
            fwd.idle_polling
        );
        assert!(fwd.realtime && fwd.idle_polling, "timing not tuned as root");
        assert_eq!(r.received, 1000);
        // The stamps are the sender's and the kernel's receive time on the
        // wall clock, which the machine's time service may slew between
        // them: a CI run on 2026-11-26 saw one datagram 0.193 ms early at
        // 100 Mbit/s (median 0.049 ms late). Half a millisecond early is
        // past any slew seen here; an emulator that shortened the delay
        // by more would fail.
        assert!(excess(0.0) >= -0.5, "faster than light: {:.3}", excess(0.0));
        // Up to the 95th percentile: the host of this project's VM takes a
        // vCPU away for 1-8 ms several times in 10 s (a SCHED_FIFO spinner
        // on an idle vCPU sees it), which no guest can hide and which
        // reached 1 % of a train in some runs (docs/lab.md, "What no guest
        // can hide").
        assert!(
            excess(0.5) < 1.0 && excess(0.95) < 1.0,
            "median {:.3} p95 {:.3} ms over the link's delay",
            excess(0.5),
            excess(0.95)
        );

        // Rate: a train at 120 % of the link, about 2 s of it.
        let packets = (rate.bytes_in(Duration::from_secs(2)) / 1500) as u32;
        let flood = UdpProbeSpec {
            packets,
            ip_size: 1500,
            rate: Some(Rate(rate.as_bps() * 6 / 5)),
            port: 6001,
            linger: Duration::from_millis(300),
        };
        let r = udp_probe(&a, &b, &flood).unwrap();
        let got = r.rx_rate(0.1, 0.9);
        println!(
            "{mbps} Mbit/s: received {:.4} Mbit/s over the middle 80 % of a 120 % train",
            got.as_mbps_f64()
        );
        let err = got.as_mbps_f64() / rate.as_mbps_f64() - 1.0;
        assert!(err.abs() < 0.02, "rate off by {:.2} %", err * 100.0);
        lab.down().unwrap();
    }
}

/// The benchmark of docs/lab.md: the highest link rate whose added
/// one-way delay (a train of 1000 B datagrams, less the delay and one
/// serialization) stays under 0.5 ms at p99, at 10 % and at 90 % of the
/// rate (evenly spaced, so the model itself never queues them: what is
/// added is the emulator's). Prints each rate's quantiles; fails if no
/// rate meets it at 10 % load. A train that loses datagrams ends the
/// sweep at its rate: past what this machine carries (here, 1 Gbit/s at
/// 90 %: about a quarter of 112,500 datagrams/s lost).
#[test]
#[ignore = "needs root"]
fn added_delay_p99_by_rate() {
    let _g = root_test("delay_by_rate");
    for load in [10u64, 90] {
        let mut best = None;
        for mbps in [10u64, 100, 200, 500, 1000, 2000] {
            let rate = Rate::mbps(mbps);
            let delay = Duration::from_millis(10);
            let d = DirParams::new(rate, delay, 1000);
            let lab = Lab::up(&two_hosts("delayrate", d), &LabOptions::default()).expect("lab up");
            let (a, b) = (lab.endpoint("a").unwrap(), lab.endpoint("b").unwrap());
            // One second of the train, 250 to 50,000 datagrams.
            let size = 1000;
            let packets =
                (rate.bytes_in(Duration::from_secs(1)) * load / 100 / size).clamp(250, 50_000);
            let train = UdpProbeSpec {
                packets: packets as u32,
                ip_size: size as usize,
                rate: Some(Rate(rate.as_bps() * load / 100)),
                port: 6000,
                linger: Duration::from_millis(300),
            };
            let r = udp_probe(&a, &b, &train).unwrap();
            let late = lab.link_reports()[0].lateness.quantile(0.99);
            lab.down().unwrap();
            let base = delay + rate.tx_time(size);
            let excess = |q| ms(r.owd_quantile(q)) - ms(base);
            println!(
                "{mbps} Mbit/s at {load} %, {packets} datagrams: added delay median {:.3} p95 {:.3} \
                 p99 {:.3} max {:.3} ms (timers late p99 {:.3} ms)",
                excess(0.5),
                excess(0.95),
                excess(0.99),
                excess(1.0),
                ms(late)
            );
            if r.received < packets {
                // Past what the emulator (or the sending host) carries.
                println!(
                    "{mbps} Mbit/s at {load} %: {} datagrams lost",
                    packets - r.received
                );
                break;
            }
            if excess(0.99) < 0.5 {
                best = Some(mbps);
            }
        }
        println!("{load} % load: highest rate with added delay p99 under 0.5 ms: {best:?} Mbit/s");
        assert!(load > 10 || best.is_some(), "no rate kept p99 under 0.5 ms");
    }
}

/// A lab keeps idle CPUs polling while it is up (the machine's CPU latency
/// limit reads 0) and withdraws the request when it goes down.
#[test]
#[ignore = "needs root"]
fn idle_cpus_poll_while_a_lab_is_up() {
    let _g = root_test("idle_polling");
    let before = IdlePolling::current_limit_us().expect("read /dev/cpu_dma_latency");
    let d = DirParams::new(Rate::mbps(10), Duration::from_millis(1), 100);
    let lab = Lab::up(&two_hosts("idle", d), &LabOptions::default()).expect("lab up");
    assert!(lab.idle_polling());
    assert_eq!(IdlePolling::current_limit_us(), Some(0));
    let reports = lab.down().unwrap();
    assert!(reports.iter().all(|r| r.idle_polling));
    assert_eq!(IdlePolling::current_limit_us(), Some(before));

    let mut opts = LabOptions::default();
    opts.emu.poll_idle = false;
    let lab = Lab::up(&two_hosts("idle", d), &opts).expect("lab up");
    assert!(!lab.idle_polling());
    assert_eq!(IdlePolling::current_limit_us(), Some(before));
    lab.down().unwrap();
}

/// A bridged segment (`LabTopology::wire`) in front of an emulated link:
/// no emulator of its own, nothing added to the path's delay or taken
/// from its rate, and a TCP stream across both arrives byte-exact.
#[test]
#[ignore = "needs root"]
fn a_wired_segment_adds_no_delay_and_no_emulator() {
    let _g = root_test("wired_segment");
    let rate = Rate::mbps(10);
    let delay = Duration::from_millis(10);
    let d = DirParams::new(rate, delay, 1000);
    let mut t = LabTopology::new("wire", 1);
    t.node("a", Role::Host);
    t.node("r", Role::Router);
    t.node("b", Role::Host);
    t.wire("a", "r");
    t.link("r", "b", d, d);
    let lab = Lab::up(&t, &LabOptions::default()).expect("lab up");
    let names: Vec<String> = lab.link_reports().into_iter().map(|r| r.name).collect();
    assert_eq!(
        names,
        ["r-b/fwd", "r-b/rev"],
        "one emulator, the r-b link's"
    );
    let (a, b) = (lab.endpoint("a").unwrap(), lab.endpoint("b").unwrap());
    let (r, base) = sparse_train(&a, &b, rate, delay, 500);
    let excess = |q| ms(r.owd_quantile(q)) - ms(base);
    println!(
        "wire + 10 Mbit/s: one-way delay minus the emulated link's: min {:.3} median {:.3} ms",
        excess(0.0),
        excess(0.5)
    );
    assert_eq!(r.received, 500);
    assert!(excess(0.0) >= -0.01 && excess(0.5) < 1.0);
    let f = FlowSpec::new("across", a, b, Amount::Bytes(2_000_000));
    let report = traffic::run(&[f], &TrafficOptions::default()).expect("traffic");
    assert!(report.flows[0].byte_exact(), "{:?}", report.flows[0]);
    lab.down().unwrap();
}

/// 1 % Bernoulli loss, measured end to end over 20k packets.
#[test]
#[ignore = "needs root"]
fn bernoulli_loss_matches_its_probability() {
    let _g = root_test("bernoulli_loss");
    let d = DirParams {
        // A queue no train can fill: only the loss model drops.
        queue: pep_core::queue::QueueLimit::Packets(50_000),
        ..DirParams::new(Rate::mbps(100), Duration::from_millis(1), 0)
    }
    .with_loss(LossParams::Bernoulli { p: 0.01 });
    let lab = Lab::up(&two_hosts("loss", d), &LabOptions::default()).expect("lab up");
    let (a, b) = (lab.endpoint("a").unwrap(), lab.endpoint("b").unwrap());
    let spec = UdpProbeSpec {
        packets: 20_000,
        ip_size: 200,
        rate: Some(Rate::mbps(20)),
        port: 6002,
        linger: Duration::from_millis(300),
    };
    let r = udp_probe(&a, &b, &spec).unwrap();
    let reports = lab.down().unwrap();
    let fwd = &reports[0];
    println!(
        "loss: sent {} received {} -> {:.3} % (emulator: {} lost of {})",
        r.sent,
        r.received,
        r.loss() * 100.0,
        fwd.link.lost_packets,
        fwd.link.tx_packets
    );
    assert_eq!(r.sent, 20_000);
    assert!(
        (r.loss() - 0.01).abs() < 0.003,
        "measured loss {}",
        r.loss()
    );
    assert_eq!(fwd.queue.dropped, 0);
    assert_eq!(fwd.kernel_drops, 0);
}

/// Gilbert-Elliott loss (the core's chain, run by the emulator): a 2 % mean
/// loss rate in bursts of 4 packets on average, over 40k packets.
#[test]
#[ignore = "needs root"]
fn gilbert_elliott_loss_matches_its_mean_rate() {
    let _g = root_test("ge_loss");
    let (rate, burst) = (0.02, 4.0);
    let (p, r) = pep_core::loss::GilbertElliott::params_from_rate_and_burst(rate, burst).unwrap();
    let d = DirParams {
        queue: pep_core::queue::QueueLimit::Packets(50_000),
        ..DirParams::new(Rate::mbps(100), Duration::from_millis(1), 0)
    }
    .with_loss(LossParams::GilbertElliott {
        p,
        r,
        loss_good: 0.0,
        loss_bad: 1.0,
    });
    let lab = Lab::up(&two_hosts("geloss", d), &LabOptions::default()).expect("lab up");
    let (a, b) = (lab.endpoint("a").unwrap(), lab.endpoint("b").unwrap());
    let spec = UdpProbeSpec {
        packets: 40_000,
        ip_size: 200,
        rate: Some(Rate::mbps(20)),
        port: 6003,
        linger: Duration::from_millis(300),
    };
    let got = udp_probe(&a, &b, &spec).unwrap();
    let reports = lab.down().unwrap();
    let fwd = &reports[0];
    println!(
        "gilbert-elliott: sent {} received {} -> {:.3} % (emulator: {} lost of {})",
        got.sent,
        got.received,
        got.loss() * 100.0,
        fwd.link.lost_packets,
        fwd.link.tx_packets
    );
    // Bursts make the count vary more than Bernoulli's: about 200 bursts
    // here, so the rate is within roughly 10 % (one sigma); allow 30 %.
    assert!(
        (got.loss() / rate - 1.0).abs() < 0.3,
        "measured loss {}",
        got.loss()
    );
    assert_eq!(
        got.sent - got.received,
        fwd.link.lost_packets,
        "only the model drops"
    );
}

/// Finite transfers, concurrently, with each congestion control the issue
/// names (set with TCP_CONGESTION, which fails for one the kernel lacks):
/// exactly the bytes asked for arrive, unchanged.
#[test]
#[ignore = "needs root"]
fn finite_transfers_with_each_cc_are_byte_exact() {
    let _g = root_test("finite_transfers");
    let d = DirParams::new(Rate::mbps(20), Duration::from_millis(10), 100);
    let lab = Lab::up(&two_hosts("finite", d), &LabOptions::default()).expect("lab up");
    let (a, b) = (lab.endpoint("a").unwrap(), lab.endpoint("b").unwrap());
    let flows: Vec<FlowSpec> = ["cubic", "reno", "bbr"]
        .iter()
        .enumerate()
        .map(|(i, cc)| {
            let mut f = FlowSpec::new(cc, a.clone(), b.clone(), Amount::Bytes(1_000_003));
            f.cc = cc.to_string();
            f.port = 5001 + i as u16;
            f.seed = i as u64;
            f
        })
        .collect();
    let opts = TrafficOptions {
        deadline: Duration::from_secs(20),
        ..TrafficOptions::default()
    };
    let r = traffic::run(&flows, &opts).unwrap();
    for f in &r.flows {
        let done = f.last_byte.map(|t| t - f.start);
        println!(
            "{}: {} bytes, byte-exact {}, done in {done:?}",
            f.cc,
            f.delivered_bytes,
            f.byte_exact()
        );
        assert!(f.byte_exact(), "{}: {:?}", f.cc, f.error);
        assert_eq!(f.delivered_bytes, 1_000_003);
    }
    lab.down().unwrap();
}
