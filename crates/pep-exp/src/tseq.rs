//! TCP time-sequence data from a pcap file, tcptrace-style: for each
//! connection, the data segments sent (a retransmission is one that starts
//! below the highest sequence number sent so far), and the ACKs of the other
//! direction with the advertised window.
//!
//! Sequence numbers are relative to the first data byte (the SYN's + 1 when
//! the SYN was captured). The window is scaled by the shift the SYNs
//! announced; without a captured SYN the scale is unknown, and a field at
//! 65535 (which pepkit writes for any larger window without a handshake) is
//! left out rather than drawn wrong.

use std::net::IpAddr;
use std::path::Path;

use pep_plot::{AckSample, FlowTrace};
use pep_wire::{flags, parse_ip_packet, EthernetRepr, Parsed, PcapReader};

type Endpoint = (IpAddr, u16);

struct Conn {
    ends: [Endpoint; 2],
    /// The endpoint sending data.
    sender: Option<Endpoint>,
    base: Option<u32>,
    highest: f64,
    syn_seen: bool,
    snd_ws: Option<u8>,
    rcv_ws: Option<u8>,
    trace: FlowTrace,
}

/// One trace per TCP connection in the file, in order of first packet.
pub fn from_pcap(path: &Path) -> Result<Vec<FlowTrace>, String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let file = std::fs::File::open(path).map_err(|e| err(&e))?;
    let reader = PcapReader::new(std::io::BufReader::new(file)).map_err(|e| err(&e))?;
    let ethernet = reader.link_type() == 1;
    let mut conns: Vec<Conn> = Vec::new();
    let mut buf = Vec::new();
    for rec in reader {
        let rec = rec.map_err(|e| err(&e))?;
        // Captured payload is cut at the snaplen: restore the length with
        // zeros so the IP layer parses (the bytes are not looked at).
        buf.clear();
        buf.extend_from_slice(&rec.data);
        buf.resize((rec.orig_len as usize).max(rec.data.len()), 0);
        let ip = if ethernet {
            match EthernetRepr::parse(&buf) {
                Ok((_, ip)) => ip,
                Err(_) => continue,
            }
        } else {
            &buf[..]
        };
        let Ok(Parsed::Tcp(p)) = parse_ip_packet(ip) else {
            continue;
        };
        let t = rec.ts_ns as f64 / 1e9;
        let src = (p.ip.src(), p.tcp.src_port);
        let dst = (p.ip.dst(), p.tcp.dst_port);
        let idx = conns
            .iter()
            .position(|c| c.ends == [src, dst] || c.ends == [dst, src])
            .unwrap_or_else(|| {
                conns.push(Conn {
                    ends: [src, dst],
                    sender: None,
                    base: None,
                    highest: 0.0,
                    syn_seen: false,
                    snd_ws: None,
                    rcv_ws: None,
                    trace: FlowTrace::new(name(src, dst)),
                });
                conns.len() - 1
            });
        let c = &mut conns[idx];
        let tcp = &p.tcp;
        let syn = tcp.has(flags::SYN);
        if syn && !tcp.has(flags::ACK) {
            c.sender = Some(src);
            c.trace.name = name(src, dst);
            c.base = Some(tcp.seq.wrapping_add(1));
            c.syn_seen = true;
            c.snd_ws = tcp.options.wscale;
            continue;
        }
        if syn {
            c.rcv_ws = tcp.options.wscale;
            continue;
        }
        if tcp.payload_len > 0 && c.sender.is_none() {
            c.sender = Some(src);
            c.trace.name = name(src, dst);
        }
        let Some(sender) = c.sender else { continue };
        if src == sender && tcp.payload_len > 0 {
            let base = *c.base.get_or_insert(tcp.seq);
            let rel = f64::from(tcp.seq.wrapping_sub(base));
            if rel < c.highest {
                c.trace.retransmitted.push((t, rel));
            } else {
                c.trace.sent.push((t, rel));
            }
            c.highest = c.highest.max(rel + tcp.payload_len as f64);
        } else if src != sender && tcp.has(flags::ACK) {
            let Some(base) = c.base else { continue };
            let ack = f64::from(tcp.ack.wrapping_sub(base));
            let raw = f64::from(tcp.window);
            let window = match (c.syn_seen, c.snd_ws, c.rcv_ws) {
                (true, Some(_), Some(s)) => raw * f64::from(1u32 << s),
                (true, _, _) => raw,
                (false, _, _) if tcp.window == u16::MAX => f64::NAN,
                (false, _, _) => raw,
            };
            c.trace.acks.push(AckSample::new(t, ack, window));
        }
    }
    Ok(conns
        .into_iter()
        .filter(|c| !c.trace.sent.is_empty())
        .map(|c| c.trace)
        .collect())
}

fn name(src: Endpoint, dst: Endpoint) -> String {
    format!("{}:{} → {}:{}", src.0, src.1, dst.0, dst.1)
}
