//! Links that change over time in the emulator: a real cellular `mm-link`
//! trace (`../shared/traces`) drives a direction, and a saturating sender
//! gets exactly the trace's opportunities x 1500 B through. Needs root,
//! like `root.rs`; `#[ignore]`d unless `-- --include-ignored`.

use std::path::PathBuf;
use std::sync::Arc;

use pep_core::link::service::ServiceSpec;
use pep_core::link::trace::MmTrace;
use pep_core::{Duration, Rate};
use pep_lab::lab::{Lab, LabOptions};
use pep_lab::probe::{udp_probe, UdpProbeSpec};
use pep_lab::topology::{DirParams, LabTopology, Role};

/// `traces/<name>` of the shared test data: `../shared` beside the
/// checkout (CI's layout), or one level further up (a worktree's).
fn shared_trace(name: &str) -> PathBuf {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    ["../shared", "../../shared"]
        .iter()
        .map(|up| repo.join(up).join("traces").join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("test data traces/{name} not found in ../shared"))
}

/// The first 10 s of the Verizon LTE downlink trace, starting 3 s late:
/// the sender has built a backlog by the first opportunity, and keeps it
/// (it sends faster than the trace serves) to the end.
fn delayed_excerpt() -> MmTrace {
    let text = std::fs::read_to_string(shared_trace("mahimahi/Verizon-LTE-short.down")).unwrap();
    let lines: Vec<String> = text
        .lines()
        .map(|l| l.parse::<u64>().unwrap())
        .take_while(|&ms| ms < 10_000)
        .map(|ms| (ms + 3_000).to_string())
        .collect();
    MmTrace::parse(&lines.join("\n")).unwrap()
}

#[test]
#[ignore = "needs root"]
fn a_saturated_trace_link_carries_every_opportunity() {
    pep_lab::error::require_root_for_test("trace_link");
    let trace = delayed_excerpt();
    // The rate is the trace's; this one only sizes nothing.
    let fwd = DirParams::new(Rate::mbps(5), Duration::from_millis(5), 30_000);
    let rev = DirParams::new(Rate::mbps(100), Duration::from_millis(5), 1000);
    let mut t = LabTopology::new("mmtrace", 1);
    t.node("a", Role::Host);
    t.node("b", Role::Host);
    t.link("a", "b", fwd, rev);
    t.links[0].service = [Some(ServiceSpec::Trace(Arc::new(trace.clone()))), None];
    let lab = Lab::up(&t, &LabOptions::default()).expect("lab up");
    let (a, b) = (lab.endpoint("a").unwrap(), lab.endpoint("b").unwrap());
    // 1000 B datagrams (opportunities are shared) at 12 Mbit/s for 15 s:
    // past one whole repetition (12.999 s), never idle once served.
    let spec = UdpProbeSpec {
        packets: 22_500,
        ip_size: 1000,
        rate: Some(Rate::mbps(12)),
        port: 6010,
        linger: Duration::from_millis(100),
    };
    let r = udp_probe(&a, &b, &spec).unwrap();
    let reports = lab.down().unwrap();
    let fwd = &reports[0];
    let want = trace.opportunities_until(fwd.elapsed) * 1500;
    let got = fwd.link.tx_bytes;
    let err = got as f64 / want as f64 - 1.0;
    println!(
        "trace link: {got} B served in {:.3} s, the trace offers {want} B ({err:+.5}); \
         sent {} received {}, queue drops {}, kernel drops {}",
        fwd.elapsed.as_secs_f64(),
        r.sent,
        r.received,
        fwd.queue.dropped,
        fwd.kernel_drops
    );
    assert!(fwd.elapsed > trace.period(), "ran {:?}", fwd.elapsed);
    assert!(err.abs() < 0.005, "{got} B vs {want} B");
    // The backlog never ran dry: more was sent than served.
    assert!(r.sent * 1000 > got + 1_000_000);
}
