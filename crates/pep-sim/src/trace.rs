//! pcap export: the packets a link direction serialized, as real
//! Ethernet/IPv4/TCP headers that tcpdump, Wireshark and tcptrace read.
//!
//! Packets are recorded when their last bit leaves the transmitter (so a
//! packet the loss model then drops is in the capture, as on a sender-side
//! tap), one record per packet, in time order; a trace of both directions
//! merges them in time order, forward first at equal instants.
//!
//! Mapping (documented in docs/scenario-format.md, `[[trace]]`):
//! * node `i` is IPv4 `10.0.0.0 + (i + 1)` (node 0 is 10.0.0.1) and MAC
//!   `02:00:00` followed by the same 24-bit number;
//! * flow `i`: sender port `10000 + i % 55000`, receiver port `5001`;
//! * seq, ack, flags, SACK blocks, timestamps and payload length straight
//!   from the segment; the payload is zeros, cut at the snaplen;
//! * window: with a handshake, SYNs carry the window-scale shift that fits
//!   the endpoint's largest window into 16 bits and later segments carry
//!   `wnd >> shift`; without one there is no SYN to announce a scale, so the
//!   field is `min(wnd, 65535)`.

use std::fs::File;
use std::io::{self, BufWriter};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use pep_core::link::Tapped;
use pep_wire::{
    emit_headers, EthernetRepr, IpRepr, Ipv4Repr, LinkType, PcapWriter, TcpOptions, TcpRepr,
    TimestampOption, ETHERTYPE_IPV4,
};

use crate::scenario::{Dir, Scenario};
use crate::sim::Simulation;

/// Receiver port of every flow (iperf's).
pub const SINK_PORT: u16 = 5001;

/// The IPv4 address of node `i`.
pub fn node_addr(i: usize) -> Ipv4Addr {
    let v = i as u32 + 1;
    Ipv4Addr::new(10, (v >> 16) as u8, (v >> 8) as u8, v as u8)
}

fn node_mac(i: usize) -> [u8; 6] {
    let v = i as u32 + 1;
    [2, 0, 0, (v >> 16) as u8, (v >> 8) as u8, v as u8]
}

/// The sender's port of flow `i`.
pub fn flow_port(i: usize) -> u16 {
    10_000 + (i % 55_000) as u16
}

/// Smallest shift that brings `wnd` under 2^16 (RFC 7323 caps it at 14).
fn wscale_for(wnd: u32) -> u8 {
    let mut s = 0;
    while s < 14 && (wnd >> s) > 0xffff {
        s += 1;
    }
    s
}

/// What a trace needs to know about a flow to write its headers.
#[derive(Clone, Debug)]
struct FlowWire {
    src: usize,
    dst: usize,
    mss: u16,
    handshake: bool,
    sack_ok: bool,
    /// Window-scale shifts of the sender and the receiver.
    snd_shift: u8,
    rcv_shift: u8,
}

/// One open capture.
pub(crate) struct Trace {
    /// Its place in the scenario's `[[trace]]` list.
    pub(crate) index: usize,
    pub(crate) ports: Vec<usize>,
    /// Node each port sends from.
    from: Vec<usize>,
    to: Vec<usize>,
    path: PathBuf,
    out: Option<PcapWriter<BufWriter<File>>>,
    error: Option<io::Error>,
    packets: u64,
    flows: Vec<FlowWire>,
    snaplen: u32,
    scratch: [Vec<Tapped>; 2],
    frame: Vec<u8>,
}

/// A finished capture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceReport {
    pub path: PathBuf,
    pub packets: u64,
}

impl Simulation {
    /// Opens the scenario's `[[trace]]` captures as files in `dir` (created
    /// if missing). `sc` must be the scenario this simulation was built from.
    /// Call before running; [`Simulation::finish_traces`] after.
    pub fn open_traces(&mut self, sc: &Scenario, dir: &Path) -> io::Result<Vec<PathBuf>> {
        if sc.traces.is_empty() {
            return Ok(Vec::new());
        }
        std::fs::create_dir_all(dir)?;
        let flows: Vec<FlowWire> = sc
            .flows
            .iter()
            .map(|f| FlowWire {
                src: f.src,
                dst: f.dst,
                mss: f.tcp.mss.min(0xffff) as u16,
                handshake: f.tcp.handshake,
                sack_ok: f.sink.sack,
                // Senders advertise a constant window (they receive no data).
                snd_shift: wscale_for(crate::tcp::SENDER_RWND),
                rcv_shift: wscale_for(f.sink.rwnd),
            })
            .collect();
        let mut paths = Vec::new();
        for (index, t) in sc.traces.iter().enumerate() {
            let l = &sc.links[t.link];
            let ports: Vec<usize> = t
                .dirs
                .iter()
                .map(|&d| t.link * 2 + usize::from(d == Dir::Reverse))
                .collect();
            // In a cut run, the side that sends on the traced direction
            // writes it (validation keeps both directions of the cut link
            // out of one trace).
            let sim = match &mut self.cut {
                Some(c) if c.is_far(self.ports[ports[0] ^ 1].to) => c.far_mut(),
                _ => &mut *self,
            };
            for &p in &ports {
                sim.ports[p].link.enable_tap();
            }
            let path = dir.join(&t.file);
            let w = PcapWriter::new(
                BufWriter::new(File::create(&path)?),
                LinkType::Ethernet,
                t.snaplen,
            )?;
            sim.traces.push(Trace {
                index,
                from: t.dirs.iter().map(|&d| l.from_node(d)).collect(),
                to: t.dirs.iter().map(|&d| l.to_node(d)).collect(),
                ports,
                path: path.clone(),
                out: Some(w),
                error: None,
                packets: 0,
                flows: flows.clone(),
                snaplen: t.snaplen,
                scratch: [Vec::new(), Vec::new()],
                frame: Vec::new(),
            });
            paths.push(path);
        }
        Ok(paths)
    }

    /// Writes what the traced links serialized up to now. Called by the
    /// event loop every few thousand events and at the end of the run.
    pub(crate) fn flush_traces(&mut self) {
        for ti in 0..self.traces.len() {
            let mut scratch = std::mem::take(&mut self.traces[ti].scratch);
            let ports = self.traces[ti].ports.clone();
            for (&p, buf) in ports.iter().zip(scratch.iter_mut()) {
                // Bringing the link up to now records everything serialized
                // by now, so batches from both directions merge in order.
                self.catch_up_port(p);
                self.ports[p].link.drain_tap(buf);
            }
            let t = &mut self.traces[ti];
            let (a, b) = scratch.split_at_mut(1);
            let (fwd, rev) = (&a[0], &b[0]);
            let (mut i, mut j) = (0, 0);
            while i < fwd.len() || j < rev.len() {
                let take_fwd = j >= rev.len() || (i < fwd.len() && fwd[i].at <= rev[j].at);
                let (k, rec) = if take_fwd {
                    i += 1;
                    (0, &fwd[i - 1])
                } else {
                    j += 1;
                    (1, &rev[j - 1])
                };
                // Data and ACKs of one flow never share a directed link on
                // shortest-path routes: the port is on the data path or not.
                // An agent's private connection: not in the capture.
                let Some(f) = t.flows.get(rec.seg.flow.0 as usize) else {
                    continue;
                };
                let dst = f.dst;
                let from = t.from[k];
                let is_data = from != dst && self.hops.hop(from, dst) == t.ports[k] as u32;
                t.write(k, rec, is_data);
            }
            for s in &mut scratch {
                s.clear();
            }
            t.scratch = scratch;
        }
    }

    /// Flushes and closes every capture; returns each file and its packet
    /// count, or the first write error.
    pub fn finish_traces(&mut self) -> io::Result<Vec<TraceReport>> {
        self.flush_traces();
        let mut out = Vec::new();
        for mut t in std::mem::take(&mut self.traces) {
            if let Some(e) = t.error.take() {
                return Err(io::Error::new(
                    e.kind(),
                    format!("{}: {e}", t.path.display()),
                ));
            }
            if let Some(w) = t.out.take() {
                w.into_inner()?;
            }
            out.push(TraceReport {
                path: t.path,
                packets: t.packets,
            });
        }
        Ok(out)
    }
}

impl Trace {
    fn write(&mut self, k: usize, rec: &Tapped, is_data: bool) {
        let Some(out) = self.out.as_mut() else {
            return;
        };
        let f = &self.flows[rec.seg.flow.0 as usize];
        let fi = rec.seg.flow.0 as usize;
        let (src, dst, sport, dport, shift) = if is_data {
            (f.src, f.dst, flow_port(fi), SINK_PORT, f.snd_shift)
        } else {
            (f.dst, f.src, SINK_PORT, flow_port(fi), f.rcv_shift)
        };
        let seg = &rec.seg;
        let syn = seg.flags.contains(pep_core::Flags::SYN);
        let mut options = TcpOptions {
            sack: pep_wire::SackOption::from_slice(&[]),
            ..TcpOptions::default()
        };
        for &(l, r) in seg.sack.as_slice() {
            options.sack.push(l.0, r.0);
        }
        options.timestamps = seg.ts.map(|t| TimestampOption {
            val: t.val,
            ecr: t.ecr,
        });
        let window = if syn {
            options.mss = Some(f.mss);
            options.wscale = Some(shift);
            options.sack_permitted = f.sack_ok;
            seg.wnd.min(0xffff) as u16
        } else if f.handshake {
            (seg.wnd >> shift).min(0xffff) as u16
        } else {
            seg.wnd.min(0xffff) as u16
        };
        let ip = IpRepr::V4(Ipv4Repr::new(node_addr(src), node_addr(dst)));
        let tcp = TcpRepr {
            src_port: sport,
            dst_port: dport,
            seq: seg.seq.0,
            ack: seg.ack.0,
            flags: seg.flags.0,
            window,
            urgent: 0,
            options,
            payload_len: seg.len as usize,
        };
        let eth = EthernetRepr {
            dst: node_mac(self.to[k]),
            src: node_mac(self.from[k]),
            ethertype: ETHERTYPE_IPV4,
        };
        let hdr = EthernetRepr::HEADER_LEN;
        let full = hdr + pep_wire::packet_len(&ip, &tcp);
        // Zeroed each time: emit_headers writes only the headers, and the
        // payload after them must read as zeros for the checksum to hold.
        self.frame.clear();
        self.frame.resize(full, 0);
        let res = eth
            .emit(&mut self.frame)
            .and_then(|_| emit_headers(&ip, &tcp, &mut self.frame[hdr..]))
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
            .and_then(|_| {
                let keep = full.min(self.snaplen as usize);
                out.write_record(rec.at.as_nanos(), &self.frame[..keep], full as u32)
            });
        match res {
            Ok(()) => self.packets += 1,
            Err(e) => {
                self.error.get_or_insert(e);
                self.out = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_ports_and_scales() {
        assert_eq!(node_addr(0), Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(node_addr(255), Ipv4Addr::new(10, 0, 1, 0));
        assert_eq!(node_mac(1), [2, 0, 0, 0, 0, 2]);
        assert_eq!((flow_port(0), flow_port(55_000)), (10_000, 10_000));
        assert_eq!(wscale_for(65_535), 0);
        assert_eq!(wscale_for(65_536), 1);
        assert_eq!(wscale_for(1 << 20), 5);
        assert_eq!(wscale_for(u32::MAX), 14);
    }
}
