//! The `tcp.profile` bundles: coherent TCP and sink defaults for a named
//! stack. A layer that writes `profile` first resets every field below to
//! the profile's value; that layer's explicit fields, and those of layers
//! above it, then override as usual. docs/tcp.md explains each value.

use pep_core::Duration;
use toml::{Table, Value};

use super::model::{AckSpec, CcKind, Profile, SinkSpec, TcpSpec};

/// Lays `p`'s bundle over `tcp`, `sink` and the layered `ack` table.
pub(super) fn apply(p: Profile, tcp: &mut TcpSpec, sink: &mut SinkSpec, ack: &mut Table) {
    tcp.profile = Some(p);
    let mut a = Table::new();
    match p {
        Profile::Ns2 => {
            // ns-2 2.35's Agent/TCP defaults (ns-default.tcl).
            tcp.mss = 1000; // packetSize_
            tcp.header = 40; // tcpip_base_hdr_size_, added on the wire
            tcp.init_cwnd = 2; // windowInit_
            tcp.min_rto = Duration::from_millis(200); // minrto_
            tcp.initial_rto = Duration::from_secs(3); // rtxcur_init_
            tcp.max_rto = Duration::from_secs(60); // maxrto_
            tcp.clock_granularity = Duration::from_millis(10); // tcpTick_
            tcp.handshake = true; // syn_
            tcp.max_burst = None; // maxburst_ 0
            tcp.rack = false; // ns-2 2.35 has no RACK-TLP
            sink.rwnd = 20 * 1000; // window_ 20 packets of packetSize_
            sink.sack = false;
            sink.ack = AckSpec::Every; // Agent/TCPSink
            a.insert("kind".into(), "every".into());
        }
        Profile::Linux => {
            tcp.cc = CcKind::Cubic;
            // 1500 B MTU with timestamps: 1448 B of payload, 52 B of headers.
            tcp.mss = 1448;
            tcp.header = 52;
            tcp.init_cwnd = 10; // TCP_INIT_CWND
            tcp.min_rto = Duration::from_millis(200); // TCP_RTO_MIN
            tcp.initial_rto = Duration::from_secs(1); // TCP_TIMEOUT_INIT
            tcp.max_rto = Duration::from_secs(120); // TCP_RTO_MAX
            tcp.clock_granularity = Duration::from_millis(1);
            tcp.handshake = true;
            tcp.max_burst = None;
            tcp.rack = true; // net.ipv4.tcp_recovery = 1 (RACK-TLP)
            sink.rwnd = 6 << 20; // tcp_rmem's default maximum, 6 MiB
            sink.sack = true;
            // TCP_DELACK_MIN, two segments per ACK.
            let timeout = Duration::from_millis(40);
            sink.ack = AckSpec::Delayed {
                count: 2,
                timeout,
                tick: None,
            };
            a.insert("kind".into(), "delayed".into());
            a.insert("count".into(), Value::Integer(2));
            a.insert("timeout".into(), "40ms".into());
        }
    }
    *ack = a;
}
