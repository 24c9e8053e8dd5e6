//! What the lab carries beyond rate, delay, DropTail and random loss, on
//! real Linux TCP (root, `-- --include-ignored`): the core's RED and
//! classful queues in the emulator, loss on data or ACKs only, and the
//! TCP settings Linux keeps per route (`initcwnd`, `initrwnd`,
//! `quickack`) or per namespace (`tcp_sack`). Each test fails without the
//! setting it checks: the quantity it measures is the one the setting
//! changes. `--nocapture` prints the numbers.

use std::sync::{Mutex, MutexGuard};

use pep_core::queue::{red, QueueLimit, RedParams};
use pep_core::{Duration, KindFilter, Rate};
use pep_lab::emu::DirReport;
use pep_lab::lab::{Lab, LabOptions};
use pep_lab::probe::{udp_probe, UdpProbeSpec};
use pep_lab::topology::{DirParams, Discipline, LabTopology, LossParams, Role, RouteTcp};
use pep_lab::traffic::{self, Amount, FlowResult, FlowSpec, TrafficOptions};

static SERIAL: Mutex<()> = Mutex::new(());

fn root_test(name: &str) -> MutexGuard<'static, ()> {
    pep_lab::error::require_root_for_test(name);
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Host `a` joined to each of `others` by its own link of `d` both ways.
fn star(name: &str, others: &[&str], d: DirParams) -> LabTopology {
    let mut t = LabTopology::new(name, 1);
    t.node("a", Role::Host);
    for o in others {
        t.node(o, Role::Host);
        t.link("a", o, d, d);
    }
    t
}

fn flow(lab: &Lab, to: &str, port: u16, amount: Amount) -> FlowSpec {
    let mut f = FlowSpec::new(
        &format!("a-{to}"),
        lab.endpoint("a").unwrap(),
        lab.endpoint(to).unwrap(),
        amount,
    );
    f.port = port;
    f
}

fn run(flows: &[FlowSpec], interval: Duration) -> Vec<FlowResult> {
    let opts = TrafficOptions {
        interval,
        sample: Duration::from_millis(100),
        deadline: Duration::from_secs(60),
    };
    let r = traffic::run(flows, &opts).expect("traffic");
    for f in &r.flows {
        assert!(f.byte_exact(), "{}: {:?}", f.name, f.error);
    }
    r.flows
}

/// RED (the core's, as the simulator runs it) drops at random once its
/// average passes `min_th`, before the hard limit: a 150 % UDP train into
/// a 100-packet RED queue never fills it (its slow average lets the queue
/// reach about 80 packets at the start). DropTail of the same limit
/// would fill it and drop only at the tail.
#[test]
#[ignore = "needs root"]
fn red_drops_early_before_the_queue_is_full() {
    let _g = root_test("red_early");
    let rate = Rate::mbps(10);
    let limit = 100;
    let params = RedParams {
        min_th: 5.0,
        max_th: 15.0,
        max_p: 0.1,
        q_w: 0.002,
        gentle: true,
        wait: true,
        bytes: false,
        mean_pktsize: red::NS2_MEAN_PKTSIZE,
        ptc: red::ns2_ptc(rate, red::NS2_MEAN_PKTSIZE),
        limit: QueueLimit::Packets(limit),
    };
    let train = UdpProbeSpec {
        packets: 3000,
        ip_size: 1000,
        rate: Some(Rate::mbps(15)),
        port: 6100,
        linger: Duration::from_millis(300),
    };
    let mut seen = vec![];
    for disc in [Discipline::Red(params), Discipline::DropTail] {
        let d = DirParams::new(rate, Duration::from_millis(5), limit).with_discipline(disc);
        let lab = Lab::up(&star("red", &["b"], d), &LabOptions::default()).expect("lab up");
        let (a, b) = (lab.endpoint("a").unwrap(), lab.endpoint("b").unwrap());
        let r = udp_probe(&a, &b, &train).unwrap();
        let fwd: DirReport = lab.down().unwrap().remove(0);
        let q = fwd.queue;
        println!(
            "{disc:?}: received {} of {}, max queue {} packets, drops: early {} forced {} overflow {}",
            r.received,
            train.packets,
            fwd.max_queue_packets,
            q.dropped_early,
            q.dropped_forced,
            q.dropped_overflow
        );
        seen.push((
            fwd.max_queue_packets,
            q.dropped_early + q.dropped_forced,
            q.dropped_overflow,
        ));
    }
    let (red_max, red_random, red_tail) = seen[0];
    assert!(red_random > 100, "RED's random drops: {red_random}");
    assert_eq!(red_tail, 0, "RED's queue overflowed");
    assert!(
        red_max < limit as u64,
        "RED's queue reached {red_max} of {limit} packets"
    );
    // The same train fills DropTail: the difference is RED's.
    let (dt_max, dt_random, dt_tail) = seen[1];
    assert!(
        dt_max >= limit as u64 && dt_random == 0 && dt_tail > 100,
        "{:?}",
        seen[1]
    );
}

/// The median smoothed RTT of `f` from 2 s on, ms.
fn median_rtt_ms(f: &FlowResult) -> f64 {
    let start = f.start + Duration::from_secs(2);
    let mut v: Vec<f64> = f
        .samples
        .iter()
        .filter(|s| s.t >= start && s.rtt_us > 0)
        .map(|s| s.rtt_us as f64 / 1000.0)
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Two-way traffic: a window-limited download `b` -> `a` and a saturating
/// upload `a` -> `b`, whose data fills the queue the download's ACKs
/// cross. DropTail puts those ACKs behind 100 data packets (120 ms at 10
/// Mbit/s); the two-class queue (the papers' CBQ sharing, weights 1:1)
/// and strict ACK priority serve them at once, so the download's RTT
/// stays near the 20 ms of propagation.
#[test]
#[ignore = "needs root"]
fn classful_queues_keep_acks_out_of_the_data_queue() {
    let _g = root_test("classful");
    let mut rtts = vec![];
    for disc in [
        Discipline::TwoClass {
            data_weight: 1,
            ack_weight: 1,
        },
        Discipline::Priority { acks_first: true },
        Discipline::DropTail,
    ] {
        let d =
            DirParams::new(Rate::mbps(10), Duration::from_millis(10), 100).with_discipline(disc);
        let mut t = LabTopology::new("classful", 1);
        t.node("a", Role::Host);
        t.node("b", Role::Host);
        t.link("a", "b", d, d);
        let lab = Lab::up(&t, &LabOptions::default()).expect("lab up");
        let (a, b) = (lab.endpoint("a").unwrap(), lab.endpoint("b").unwrap());
        let secs = Amount::For(Duration::from_secs(6));
        let mut down = FlowSpec::new("download", b.clone(), a.clone(), secs);
        down.port = 6201;
        // 10 segments in 20 ms: 5.8 Mbit/s, below the link's rate, so the
        // download's own data never queues.
        down.window_clamp = Some(14_480);
        let mut up = FlowSpec::new("upload", a, b, secs);
        up.port = 6202;
        let r = run(&[down, up], Duration::from_millis(100));
        lab.down().unwrap();
        let rtt = median_rtt_ms(&r[0]);
        println!("{disc:?}: the download's median RTT {rtt:.1} ms");
        rtts.push(rtt);
    }
    assert!(rtts[0] < 35.0, "two-class: {:.1} ms", rtts[0]);
    assert!(rtts[1] < 35.0, "ACKs first: {:.1} ms", rtts[1]);
    // Without a class for ACKs they wait behind the upload's data.
    assert!(rtts[2] > 70.0, "DropTail: {:.1} ms", rtts[2]);
}

/// Loss on one packet kind: 20 % on pure ACKs only loses ACKs (about one in
/// five on the ACK direction) and never a data segment; 2 % on data only
/// loses data segments and never an ACK.
#[test]
#[ignore = "needs root"]
fn loss_on_one_kind_spares_the_other() {
    let _g = root_test("kind_loss");
    for (only, p) in [(KindFilter::Acks, 0.2), (KindFilter::Data, 0.02)] {
        let d = DirParams::new(Rate::mbps(10), Duration::from_millis(5), 200)
            .with_loss_on(LossParams::Bernoulli { p }, only);
        let lab = Lab::up(&star("kindloss", &["b"], d), &LabOptions::default()).expect("lab up");
        let r = run(
            &[flow(&lab, "b", 6301, Amount::Bytes(3_000_000))],
            Duration::from_millis(100),
        );
        let links = lab.down().unwrap();
        let (data, acks) = (&links[0].link, &links[1].link);
        let retrans = r[0].samples.last().map_or(0, |s| s.total_retrans);
        let share = |l: &pep_core::link::LinkStats| l.lost_packets as f64 / l.tx_packets as f64;
        println!(
            "loss {p} on {only:?}: data direction lost {} of {}, ACK direction lost {} of {} ({:.3}), \
             retransmitted {retrans}",
            data.lost_packets,
            data.tx_packets,
            acks.lost_packets,
            acks.tx_packets,
            share(acks)
        );
        match only {
            KindFilter::Acks => {
                // The data direction carries one pure ACK (the handshake's).
                assert!(data.lost_packets <= 1, "data lost: {}", data.lost_packets);
                assert!(
                    (0.15..0.25).contains(&share(acks)),
                    "ACKs lost: {}",
                    share(acks)
                );
            }
            _ => {
                // The ACK direction carries one data-kind packet (SYN-ACK).
                assert!(acks.lost_packets <= 1, "ACKs lost: {}", acks.lost_packets);
                assert!(
                    (0.01..0.03).contains(&share(data)),
                    "data lost: {}",
                    share(data)
                );
                assert!(
                    retrans as u64 >= data.lost_packets / 2,
                    "retransmitted {retrans}"
                );
            }
        }
    }
}

/// Bytes the receiver read in the first burst: the first run of non-empty
/// goodput bins. On a 400 ms round trip with 50 ms bins, that is the
/// first flight, the initial window.
fn first_flight(f: &FlowResult) -> u64 {
    f.goodput
        .iter()
        .skip_while(|&&b| b == 0)
        .take_while(|&&b| b > 0)
        .sum()
}

/// Route `initcwnd` is the first flight: 2 and 20 segments against
/// Linux's 10 (with `initrwnd` 20 at the receiver, which `pep lab` sets
/// with any window above 10). 64 segments (92,672 B) stop at 65,535 B:
/// the window a SYN-ACK offers is never scaled (RFC 7323), which is why
/// `pep lab` refuses a first flight above 64 KiB.
#[test]
#[ignore = "needs root"]
fn route_initcwnd_is_the_first_flight() {
    let _g = root_test("initcwnd");
    let seg = 1448;
    for (initcwnd, initrwnd, expect) in [
        (None, None, 10 * seg),
        (Some(2), None, 2 * seg),
        (Some(20), Some(20), 20 * seg),
        (Some(64), Some(64), 65_535),
    ] {
        let d = DirParams::new(Rate::mbps(100), Duration::from_millis(200), 1000);
        let mut t = star("initcwnd", &["b"], d);
        t.route_tcp.push(RouteTcp {
            from: 0,
            to: 1,
            initcwnd,
            ..RouteTcp::default()
        });
        t.route_tcp.push(RouteTcp {
            from: 1,
            to: 0,
            initrwnd,
            ..RouteTcp::default()
        });
        let lab = Lab::up(&t, &LabOptions::default()).expect("lab up");
        let mut f = flow(&lab, "b", 6401, Amount::Bytes(600_000));
        // A receive buffer that never limits the first flights.
        f.window_clamp = Some(1 << 20);
        let r = run(&[f], Duration::from_millis(50));
        lab.down().unwrap();
        let got = first_flight(&r[0]);
        println!("initcwnd {initcwnd:?} initrwnd {initrwnd:?}: first flight {got} B");
        assert_eq!(got, expect, "initcwnd {initcwnd:?}, initrwnd {initrwnd:?}");
    }
}

/// Route `quickack` at the receiver ACKs every segment (about one ACK per
/// data packet) where Linux otherwise ACKs every second one; SACK off at
/// the receiver's namespace turns SACK off for the connection. Two
/// receivers side by side, only `b` with both settings.
#[test]
#[ignore = "needs root"]
fn quickack_and_sack_off_reach_the_connection() {
    let _g = root_test("quickack_sack");
    let d = DirParams::new(Rate::mbps(10), Duration::from_millis(10), 100);
    let mut t = star("quickack", &["b", "c"], d);
    t.route_tcp.push(RouteTcp {
        from: 1,
        to: 0,
        quickack: true,
        ..RouteTcp::default()
    });
    t.sack_off.push(1);
    let lab = Lab::up(&t, &LabOptions::default()).expect("lab up");
    let amount = Amount::Bytes(2_000_000);
    let r = run(
        &[flow(&lab, "b", 6501, amount), flow(&lab, "c", 6502, amount)],
        Duration::from_millis(100),
    );
    let links = lab.down().unwrap();
    let ratio =
        |l: usize| links[2 * l + 1].link.tx_packets as f64 / links[2 * l].link.tx_packets as f64;
    let sack = |f: &FlowResult| f.samples.iter().any(|s| s.sack);
    println!(
        "ACKs per data packet: quickack {:.3}, default {:.3}; SACK: b {}, c {}",
        ratio(0),
        ratio(1),
        sack(&r[0]),
        sack(&r[1])
    );
    assert!(ratio(0) > 0.95, "quickack: {:.3}", ratio(0));
    assert!(ratio(1) < 0.7, "delayed ACKs: {:.3}", ratio(1));
    assert!(!sack(&r[0]), "SACK negotiated with tcp_sack = 0 at b");
    assert!(sack(&r[1]), "SACK not negotiated at c");
}
