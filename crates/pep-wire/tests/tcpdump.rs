//! Captures we write are read by tcpdump without complaint, and tcpdump
//! agrees with our checksums. `#[ignore = "needs tcpdump"]`: run them with
//! `-- --include-ignored` where tcpdump is installed (`.ci/run` does).

use crate::common;

use std::process::Command;

use common::{vectors::*, ALL_VECTORS};
use pep_wire::*;

/// Runs `tcpdump -r` on `pcap`; fails the test, saying why, if tcpdump is
/// absent.
fn tcpdump(name: &str, pcap: &[u8]) -> String {
    assert!(
        Command::new("tcpdump").arg("--version").output().is_ok(),
        "{name}: needs tcpdump on the PATH; without it leave out --include-ignored"
    );
    let path = std::env::temp_dir().join(format!("pep-wire-{}-{name}.pcap", std::process::id()));
    std::fs::write(&path, pcap).unwrap();
    let out = Command::new("tcpdump")
        .args(["-nn", "-vv", "--time-stamp-precision=nano", "-r"])
        .arg(&path)
        .output()
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "tcpdump failed: {stderr}");
    // tcpdump's only stderr line for a good file is its "reading from" banner.
    assert_eq!(stderr.lines().count(), 1, "tcpdump complained: {stderr}");
    stdout
}

fn sample_packets() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = ALL_VECTORS.iter().map(|p| p.to_vec()).collect();
    // And some we emit and rewrite.
    for mut p in ALL_VECTORS.iter().map(|p| p.to_vec()) {
        rewrite_tcp_ack(&mut p, 0x8000_0000).unwrap();
        rewrite_tcp_window(&mut p, 0xfffe).unwrap();
        rewrite_tcp_timestamps(&mut p, TimestampOption { val: 7, ecr: 9 }).unwrap();
        v.push(p);
    }
    let p = common::parse_tcp(&IPV6_SACK);
    let mut tcp = p.tcp;
    tcp.payload_len = 3;
    v.push(emit_packet_vec(&p.ip, &tcp, b"xyz").unwrap());
    v
}

#[test]
#[ignore = "needs tcpdump"]
fn raw_ip_capture_reads_clean() {
    let pkts = sample_packets();
    let mut w = PcapWriter::new(Vec::new(), LinkType::RawIp, DEFAULT_SNAPLEN).unwrap();
    for (i, p) in pkts.iter().enumerate() {
        w.write_packet(1_700_000_000_000_000_000 + i as u64 * 1_234_567, p)
            .unwrap();
    }
    let out = tcpdump("raw", &w.into_inner().unwrap());
    assert_eq!(out.matches("cksum").count(), pkts.len(), "{out}");
    assert_eq!(out.matches("(correct)").count(), pkts.len(), "{out}");
    assert!(!out.contains("incorrect") && !out.contains("bad"), "{out}");
    // Nanosecond timestamps survive: the second record is 1.234567 ms later.
    assert!(out.contains(".001234567"), "{out}");
}

#[test]
#[ignore = "needs tcpdump"]
fn ethernet_capture_with_header_only_records() {
    let mut w = PcapWriter::new(Vec::new(), LinkType::Ethernet, DEFAULT_SNAPLEN).unwrap();
    let (a, b) = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
    for p in sample_packets() {
        w.write_packet(0, &ethernet_frame(a, b, &p).unwrap())
            .unwrap();
    }
    // A simulated 1448-byte segment: headers recorded, payload only counted.
    let p = common::parse_tcp(&IPV4_SYN);
    let tcp = TcpRepr {
        flags: flags::ACK,
        payload_len: 1448,
        ..p.tcp
    };
    let mut hdrs = [0u8; 14 + 120];
    EthernetRepr {
        dst: b,
        src: a,
        ethertype: ETHERTYPE_IPV4,
    }
    .emit(&mut hdrs)
    .unwrap();
    let n = emit_headers(&p.ip, &tcp, &mut hdrs[14..]).unwrap();
    let orig = (14 + packet_len(&p.ip, &tcp)) as u32;
    w.write_record(5_000_000_000, &hdrs[..14 + n], orig)
        .unwrap();

    let out = tcpdump("ether", &w.into_inner().unwrap());
    assert!(!out.contains("[|"), "tcpdump saw a cut header: {out}");
    assert!(!out.contains("incorrect"), "{out}");
    assert!(out.contains("length 1448"), "{out}");
}
