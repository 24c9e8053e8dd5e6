//! pcap export: a traced link gives a file that parses, has one record per
//! packet the link serialized, carries the simulator's own sequence numbers,
//! and that tcpdump reads without complaint (skipped if tcpdump is absent,
//! a failure under `PEP_REQUIRE_ALL`, as in CI).

use std::path::Path;
use std::process::Command;

use pep_sim::{Scenario, Simulation};
use pep_wire::{
    flags, parse_ip_packet, verify_checksums, EthernetRepr, Parsed, PcapReader, TcpPacket,
};

const SCENARIO: &str = r#"
[scenario]
name = "traced"
duration = "10s"
[defaults.tcp]
mss = "1000B"
init_cwnd = 2
handshake = true
[defaults.sink]
rwnd = "256KiB"
sack = true
[[node]]
name = "sender"
[[node]]
name = "r1"
kind = "router"
[[node]]
name = "receiver"
[[link]]
between = ["sender", "r1"]
rate = "10Mbps"
delay = "2ms"
[[link]]
between = ["r1", "receiver"]
rate = "1.5Mbps"
delay = "10ms"
queue = { limit = 25 }
loss = { kind = "drop", flow = "f1", segments = [20, 22, 24] }
[[flow]]
name = "f1"
from = "sender"
to = "receiver"
source = { kind = "finite", size = "100KB" }
[[trace]]
link = "sender-r1"
[[trace]]
link = "r1->receiver"
snaplen = "96B"
[output]
series = []
"#;

struct Rec {
    ts: u64,
    orig_len: u32,
    incl: usize,
    tcp: pep_wire::TcpRepr,
    src: std::net::IpAddr,
}

fn read(path: &Path) -> Vec<Rec> {
    let r = PcapReader::new(std::fs::File::open(path).unwrap()).unwrap();
    assert_eq!(r.link_type(), 1, "Ethernet");
    r.map(|rec| {
        let rec = rec.unwrap();
        // The payload is zeros, so a record cut at the snaplen can be
        // restored whole to parse it.
        let mut whole = rec.data.clone();
        whole.resize(rec.orig_len as usize, 0);
        let (_, ip) = EthernetRepr::parse(&whole).unwrap();
        let Parsed::Tcp(TcpPacket { ip: iph, tcp, .. }) = parse_ip_packet(ip).unwrap() else {
            panic!("not TCP")
        };
        verify_checksums(ip).expect("checksums verify");
        Rec {
            ts: rec.ts_ns,
            orig_len: rec.orig_len,
            incl: rec.data.len(),
            tcp,
            src: iph.src(),
        }
    })
    .collect()
}

fn run(dir: &Path) -> (Simulation, Vec<pep_sim::trace::TraceReport>) {
    let sc = Scenario::from_toml_str(SCENARIO, "traced.toml").unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Simulation::new(&sc);
    let files = sim.open_traces(&sc, dir).unwrap();
    assert_eq!(
        files,
        vec![dir.join("sender-r1.pcap"), dir.join("r1-to-receiver.pcap")]
    );
    sim.run();
    let reports = sim.finish_traces().unwrap();
    (sim, reports)
}

#[test]
fn traced_links_match_the_simulation() {
    let dir = tempfile::tempdir().unwrap();
    let (sim, reports) = run(dir.path());
    let access = read(&dir.path().join("sender-r1.pcap"));
    let sat = read(&dir.path().join("r1-to-receiver.pcap"));

    // One record per packet the link serialized (lost ones included).
    let fwd = sim.link("sender->r1").unwrap().stats.tx_packets;
    let rev = sim.link("r1->sender").unwrap().stats.tx_packets;
    let down = sim.link("r1->receiver").unwrap().stats;
    assert_eq!(access.len() as u64, fwd + rev);
    assert_eq!(sat.len() as u64, down.tx_packets);
    assert_eq!(down.lost_packets, 3);
    assert_eq!(reports[0].packets, fwd + rev);
    assert_eq!(reports[1].packets, down.tx_packets);
    assert!(access.windows(2).all(|w| w[0].ts <= w[1].ts), "time order");

    // The sender's segments on its access link, in order, are exactly what
    // the sender sent: SYN, then data (with the simulator's retransmissions
    // at the places it recorded them), then FIN.
    let sender = "10.0.0.1".parse::<std::net::IpAddr>().unwrap();
    let sent: Vec<&Rec> = access.iter().filter(|r| r.src == sender).collect();
    assert!(sent[0].tcp.has(flags::SYN) && !sent[0].tcp.has(flags::ACK));
    let syn_opts = sent[0].tcp.options;
    assert_eq!((syn_opts.mss, syn_opts.sack_permitted), (Some(1000), true));
    let isn = sent[0].tcp.seq;
    let mut highest = 0u32;
    let mut retx = Vec::new();
    let mut data_segments = 0;
    for r in &sent[1..] {
        let off = r.tcp.seq.wrapping_sub(isn + 1);
        if r.tcp.payload_len == 0 {
            continue;
        }
        data_segments += 1;
        assert_eq!(r.tcp.payload_len, 1000);
        if off < highest {
            retx.push(off);
        } else {
            assert_eq!(off, highest, "new data is sent in order");
            highest = off + 1000;
        }
    }
    assert_eq!(highest, 100_000);
    let want: Vec<u32> = sim.retransmissions(0).iter().map(|r| r.offset).collect();
    assert_eq!(retx, want);
    assert_eq!(want, vec![19_000, 21_000, 23_000]);
    // segments_sent counts data, SYN and FIN segments.
    let st = sim.sender(0).unwrap().stats();
    assert_eq!(data_segments + 2, st.segments_sent);
    assert_eq!(st.bytes_sent, data_segments * 1000);
    assert!(sent.last().unwrap().tcp.has(flags::FIN));

    // The receiver's ACKs carry SACK blocks while the holes are open, and
    // the SYN-ACK announces the window scale 256 KiB needs (shift 3).
    let acks: Vec<&Rec> = access.iter().filter(|r| r.src != sender).collect();
    let synack = acks[0];
    assert!(synack.tcp.has(flags::SYN | flags::ACK));
    assert_eq!(synack.tcp.options.wscale, Some(3));
    assert!(acks.iter().any(|a| !a.tcp.options.sack.is_empty()));
    assert!(acks[1..]
        .iter()
        .all(|a| u32::from(a.tcp.window) << 3 == 256 * 1024));

    // Snaplen 96: whole headers, payload cut; lengths still say 1054.
    let data = sat.iter().find(|r| r.tcp.payload_len == 1000).unwrap();
    assert_eq!((data.incl, data.orig_len), (96, 14 + 40 + 1000));

    tcpdump_reads(&dir.path().join("sender-r1.pcap"), access.len());
    tcpdump_reads(&dir.path().join("r1-to-receiver.pcap"), sat.len());
}

#[test]
fn traces_do_not_change_results() {
    let dir = tempfile::tempdir().unwrap();
    let (traced, _) = run(dir.path());
    let sc = Scenario::from_toml_str(SCENARIO, "traced.toml").unwrap();
    let mut plain = Simulation::new(&sc);
    plain.run();
    assert_eq!(traced.summary(), plain.summary());
}

#[test]
fn bad_traces_are_named() {
    let bad = SCENARIO.replace("link = \"r1->receiver\"", "link = \"r1->nowhere\"");
    let e = Scenario::from_toml_str(&bad, "t.toml")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(
            "t.toml:37:8: trace[1].link: unknown node \"nowhere\"; nodes are: sender, r1, receiver"
        ),
        "{e}"
    );
    let bad = SCENARIO.replace("snaplen = \"96B\"", "snaplen = \"20B\"");
    let e = Scenario::from_toml_str(&bad, "t.toml")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("trace[1].snaplen: snaplen must be within 54 B"),
        "{e}"
    );
    let bad = SCENARIO.replace("link = \"sender-r1\"", "link = \"sender-r1\"\ndir = \"up\"");
    let e = Scenario::from_toml_str(&bad, "t.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("trace[0].dir: expected \"forward\""), "{e}");
}

/// tcpdump reads the file, prints one line per packet and finds every
/// checksum it can check correct.
fn tcpdump_reads(path: &Path, packets: usize) {
    if Command::new("tcpdump").arg("--version").output().is_err() {
        // CI installs tcpdump and sets PEP_REQUIRE_ALL: a skip there is a failure.
        assert!(
            std::env::var_os("PEP_REQUIRE_ALL").is_none(),
            "tcpdump not installed, and PEP_REQUIRE_ALL asks for every check"
        );
        eprintln!("tcpdump not installed; skipping the read-back");
        return;
    }
    let out = Command::new("tcpdump")
        .args(["-nn", "-vv", "-r"])
        .arg(path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "tcpdump failed: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "tcpdump complained: {stderr}");
    let lines = stdout.lines().filter(|l| l.contains(" IP ")).count();
    assert_eq!(lines, packets, "{stdout}");
    assert!(!stdout.contains("incorrect"), "{stdout}");
    assert!(!stdout.contains("[|tcp]"), "a header was cut: {stdout}");
}

#[test]
fn a_cut_run_writes_the_same_captures_from_both_sides() {
    // Cut at the 10 ms link: the sender and r1 on one side, the receiver on
    // the other, which writes the capture of its own direction. One flow,
    // so no two events tie across the cut and the runs match exactly.
    let with_rev = format!("{SCENARIO}[[trace]]\nlink = \"receiver->r1\"\n");
    let cut = with_rev.replacen(
        "duration = \"10s\"\n",
        "duration = \"10s\"\ncut = \"r1-receiver\"\n",
        1,
    );
    let mut files = Vec::new();
    for text in [&with_rev, &cut] {
        let dir = tempfile::tempdir().unwrap();
        let sc = Scenario::from_toml_str(text, "traced.toml").unwrap_or_else(|e| panic!("{e}"));
        let mut sim = Simulation::new(&sc);
        assert_eq!(sim.is_cut(), text == &cut);
        sim.open_traces(&sc, dir.path()).unwrap();
        sim.run();
        let reports = sim.finish_traces().unwrap();
        assert_eq!(reports.len(), 3);
        assert!(reports.iter().all(|r| r.packets > 0), "{reports:?}");
        let bytes: Vec<Vec<u8>> = reports
            .iter()
            .map(|r| std::fs::read(&r.path).unwrap())
            .collect();
        let names: Vec<_> = reports
            .iter()
            .map(|r| r.path.file_name().unwrap().to_owned())
            .collect();
        files.push((names, bytes));
    }
    assert_eq!(files[0].0, files[1].0, "captures in the scenario's order");
    for (k, (a, b)) in files[0].1.iter().zip(&files[1].1).enumerate() {
        assert!(a == b, "capture {k} differs");
    }
}
