//! The watermark stage: premature ACKs bounded by a watermark (Osada et
//! al., 2005) on real frames, one [`pep_core::watermark::Watermark`] per
//! connection, the same core the simulator's `watermark` agent drives.
//!
//! Data senders are on `b` (the S-Net side), data receivers on `a` (the
//! D-Net side), as for the other stages. The core sees segments; this
//! stage turns its actions into frames:
//!
//! * `Forward`: the data frame as it arrived, to `a`;
//! * `Retransmit`: the stored copy of that segment's frame to `a`, byte
//!   for byte but for a TSval older than the sender's newest, which is
//!   raised to it (the receiver's PAWS check would discard the copy
//!   forever); a copy is kept exactly as long as the core holds the
//!   segment, so at most `buffer` frames per connection;
//! * `PrematureAck`: a new ACK to `b`, made from the connection's latest
//!   pure ACK from the receiver (its Ethernet and IP headers, its options)
//!   with the sequence, ACK number, window and timestamps the core gives
//!   and its SACK blocks blanked to NOPs; before the receiver's first pure
//!   ACK, made from the data frame with addresses and ports swapped;
//! * `PassAck`: the receiver's frame as it arrived, to `b`; `DropAck`:
//!   nothing.
//!
//! A connection gets state only when its SYN from `b` is seen: the
//! handshake gives the receiver's window scale (the core works in bytes,
//! as in the simulator; premature ACKs carry `bytes >> scale`) and a TSval
//! for premature ACKs that the sender's PAWS check accepts. Connections already open when the daemon started pass
//! untouched. RST in either direction ends a connection's state, and so
//! does a new SYN on its 4-tuple.
//!
//! ## Bounded state and eviction
//! At most `flows` connections have state. A new one takes the place of
//! the least recently active connection that holds no premature-ACKed
//! copy: dropping one that does would lose bytes the sender was told were
//! delivered, so those are never evicted. If every connection holds such
//! copies, the new one is not tracked (plain TCP, counted as `refused`).

use std::collections::{HashMap, VecDeque};

use pep_core::link::LinkItem;
use pep_core::watermark::{Action, Mark, Stats, Watermark, WatermarkConfig};
use pep_core::{Flags, FlowId, Instant, Segment, Seq};
use pep_io::frame::Frame;
use pep_wire::{
    emit_packet_vec, ethernet_frame, parse_ip_packet, rewrite_tcp_ack, rewrite_tcp_sack,
    rewrite_tcp_seq, rewrite_tcp_timestamps, rewrite_tcp_window, verify_checksums, EthernetRepr,
    IpRepr, Ipv4Repr, Ipv6Repr, Parsed, TcpOptions, TcpRepr,
};

use super::engine::Side;

/// `[packet.watermark]`, validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatermarkSettings {
    /// `N`, `W`, timer and duplicate-ACK threshold. `window` is always
    /// `None`: premature ACKs carry the receiver's own window.
    pub core: WatermarkConfig,
    /// Connections with state at most.
    pub flows: usize,
}

/// Counters of the stage (live connections plus those already gone).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WatermarkStats {
    /// Premature ACKs sent to senders.
    pub premature_acks: u64,
    /// Copies sent again toward receivers (timeouts and duplicate ACKs).
    pub local_retransmits: u64,
    /// Receivers' ACKs dropped (covered by a premature ACK, or duplicate
    /// ACKs for a hole the PEP is repairing).
    pub dropped_acks: u64,
    /// Premature ACKs built from the data frame (no pure ACK from the
    /// receiver seen yet, or its frame could not carry the fields).
    pub synthesized_acks: u64,
    /// Connections with state now.
    pub flows: u64,
    /// Copies held now, and their bytes (Ethernet frames).
    pub stored_frames: u64,
    pub stored_bytes: u64,
    /// Connections whose state made room for a new one.
    pub evicted: u64,
    /// New connections left untracked: every slot held premature-ACKed
    /// data.
    pub refused: u64,
    /// TCP frames with a wrong IP or TCP checksum, passed untouched.
    pub corrupt: u64,
}

struct Conn {
    core: Watermark,
    /// The frames of the copies the core holds, in sequence order.
    copies: VecDeque<(Seq, Vec<u8>)>,
    stored_bytes: usize,
    /// The receiver's latest pure ACK (flags exactly ACK): the shape of
    /// premature ACKs.
    ack_frame: Option<Vec<u8>>,
    /// The receiver's window scale (from its SYN-ACK): the core works in
    /// bytes, the frames carry `bytes >> wscale`.
    wscale: u32,
    /// The newest TSval seen from the sender: what a retransmitted copy
    /// carries (see [`Conn::resend`]).
    ts_latest: Option<u32>,
    last_active: Instant,
}

impl Conn {
    fn holds_p_acked(&self) -> bool {
        self.core.held().any(|(_, _, m)| m == Mark::PAcked)
    }

    /// Drops the copies the core no longer holds (the receiver acknowledged
    /// them; the core only ever removes from the front).
    fn prune(&mut self) {
        let front = self.core.held().next().map(|h| h.0);
        while let Some((seq, bytes)) = self.copies.front() {
            if front.is_some_and(|f| !Seq::lt(*seq, f)) {
                break;
            }
            self.stored_bytes -= bytes.len();
            self.copies.pop_front();
        }
    }

    fn copy_of(&self, seq: Seq) -> Option<&Vec<u8>> {
        self.copies.iter().find(|c| c.0 == seq).map(|c| &c.1)
    }

    /// The copy of `s` to send again: its bytes, except an older TSval,
    /// which becomes the sender's newest. The receiver's PAWS check (RFC
    /// 7323) discards a segment whose TSval is older than the one it last
    /// recorded, and a later segment of the sender (a retransmission of
    /// its own, filling an earlier hole) can have raised that after the
    /// copy was stored: resent as it was, the copy would be discarded
    /// forever and the connection would hang on bytes the sender was told
    /// had arrived (seen in the lab at W = 50 with 1 % loss).
    fn resend(&self, s: &Segment) -> Option<Vec<u8>> {
        let mut b = self.copy_of(s.seq)?.clone();
        if let (Some(ts), Some(latest)) = (s.ts, self.ts_latest) {
            if Seq(ts.val).lt(Seq(latest)) {
                let ip = b.get_mut(EthernetRepr::HEADER_LEN..)?;
                let new = pep_wire::TimestampOption {
                    val: latest,
                    ecr: ts.ecr,
                };
                // The copy parsed with this option when stored.
                let _ = rewrite_tcp_timestamps(ip, new);
            }
        }
        Some(b)
    }
}

/// The stage: connection table and counters.
pub struct WatermarkStage {
    cfg: WatermarkSettings,
    conns: HashMap<FlowId, Conn>,
    /// Core counters of connections whose state is gone.
    retired: Stats,
    synthesized: u64,
    evicted: u64,
    refused: u64,
    corrupt: u64,
    /// No connection's timer is due before this (a lower bound, exact
    /// after each scan): frames cost no walk over every connection.
    due: Option<Instant>,
}

/// Frames to send, and where.
pub type Out = Vec<(Side, Vec<u8>)>;

impl WatermarkStage {
    pub fn new(cfg: WatermarkSettings) -> Self {
        WatermarkStage {
            cfg,
            conns: HashMap::new(),
            retired: Stats::default(),
            synthesized: 0,
            evicted: 0,
            refused: 0,
            corrupt: 0,
            due: None,
        }
    }

    /// A frame from `b` (the sender side).
    pub fn from_sender(&mut self, now: Instant, mut f: Frame, out: &mut Out) {
        let tcp = f.segment_mut().is_some();
        let seg = f.seg;
        if !tcp || !self.intact(&f.bytes) {
            out.push((Side::A, f.bytes));
            return;
        }
        let syn = seg.flags.contains(Flags::SYN) && !seg.has_ack();
        if syn {
            // A new connection on a 4-tuple whose old one left state
            // behind (closed with FIN): its numbers mean nothing now.
            self.retire(seg.flow);
        }
        if !self.conns.contains_key(&seg.flow) && (!syn || !self.admit(now, seg.flow)) {
            out.push((Side::A, f.bytes));
            return;
        }
        let c = self.conns.get_mut(&seg.flow).expect("admitted");
        c.last_active = now;
        if let Some(ts) = seg.ts {
            // TSvals only grow (modulo 2^32) at the sender.
            if c.ts_latest.is_none_or(|l| Seq(l).lt(Seq(ts.val))) {
                c.ts_latest = Some(ts.val);
            }
        }
        let before = c.core.occupancy();
        c.core.handle_from_sender(now, seg);
        if c.core.occupancy() > before {
            // The core keeps this segment: keep its frame for retransmission.
            let at = c.copies.partition_point(|x| x.0.lt(seg.seq));
            c.stored_bytes += f.bytes.len();
            c.copies.insert(at, (seg.seq, f.bytes.clone()));
        }
        // Premature ACKs are built from the receiver's pure ACK; before
        // there is one, from this frame.
        let data = c.ack_frame.is_none().then(|| f.bytes.clone());
        self.drain(seg.flow, data.as_deref(), &mut Some(f.bytes), out);
        if seg.flags.contains(Flags::RST) {
            self.retire(seg.flow);
        }
    }

    /// A frame from `a` (the receiver side).
    pub fn from_dest(&mut self, now: Instant, mut f: Frame, out: &mut Out) {
        let tcp = f.segment_mut().is_some();
        let mut seg = f.seg;
        if !tcp || !self.conns.contains_key(&seg.flow) || !self.intact(&f.bytes) {
            out.push((Side::B, f.bytes));
            return;
        }
        let c = self.conns.get_mut(&seg.flow).expect("checked");
        c.last_active = now;
        if seg.flags.contains(Flags::SYN) {
            // The SYN-ACK's window is in bytes and announces the scale of
            // every later one (it carries the option only if the SYN did,
            // so scaling is on exactly when it is there).
            c.wscale = syn_wscale(&f.bytes);
        } else {
            seg.wnd = seg.wnd.checked_shl(c.wscale).unwrap_or(u32::MAX);
        }
        if seg.flags == Flags::ACK && seg.len == 0 {
            match &mut c.ack_frame {
                Some(t) => {
                    t.clear();
                    t.extend_from_slice(&f.bytes);
                }
                None => c.ack_frame = Some(f.bytes.clone()),
            }
        }
        c.core.handle_from_dest(now, seg);
        self.drain(seg.flow, None, &mut Some(f.bytes), out);
        if seg.flags.contains(Flags::RST) {
            self.retire(seg.flow);
        }
    }

    /// Whether the frame's IP and TCP checksums hold. A corrupted segment
    /// passes untouched and the core never sees it, as its receiver will
    /// drop it: premature-ACKing corrupted data would tell the sender that
    /// bytes arrived which the PEP can only resend corrupted, and a
    /// corrupted ACK number would make it drop copies not yet delivered.
    fn intact(&mut self, frame: &[u8]) -> bool {
        let ok = frame
            .get(EthernetRepr::HEADER_LEN..)
            .is_some_and(|ip| verify_checksums(ip).is_ok());
        if !ok {
            self.corrupt += 1;
        }
        ok
    }

    /// Runs the connections' timers due at `now`.
    pub fn handle_timeout(&mut self, now: Instant, out: &mut Out) {
        if self.due.is_none_or(|d| d > now) {
            return;
        }
        let mut due: Vec<FlowId> = self
            .conns
            .iter()
            .filter(|(_, c)| c.core.poll_timeout().is_some_and(|t| t <= now))
            .map(|(&k, _)| k)
            .collect();
        // In flow order, not the map's (seeded per process): connections
        // due at one instant send in the same order on every run, as the
        // simulator's agent sends them.
        due.sort_unstable();
        for k in due {
            if let Some(c) = self.conns.get_mut(&k) {
                c.core.handle_timeout(now);
            }
            self.drain(k, None, &mut None, out);
        }
        self.due = self
            .conns
            .values()
            .filter_map(|c| c.core.poll_timeout())
            .min();
    }

    /// When [`Self::handle_timeout`] is next due (possibly early).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.due
    }

    /// Turns the core's actions into frames. `arrived` is the frame being
    /// handled (what `Forward` and `PassAck` send); `data` the sender's
    /// data frame premature ACKs may be built from.
    fn drain(
        &mut self,
        flow: FlowId,
        data: Option<&[u8]>,
        arrived: &mut Option<Vec<u8>>,
        out: &mut Out,
    ) {
        let Some(c) = self.conns.get_mut(&flow) else {
            return;
        };
        let mut synthesized = 0;
        while let Some(a) = c.core.poll_action() {
            match a {
                Action::Forward(_) => {
                    if let Some(b) = arrived.take() {
                        out.push((Side::A, b));
                    }
                }
                Action::PassAck(_) => {
                    if let Some(b) = arrived.take() {
                        out.push((Side::B, b));
                    }
                }
                Action::DropAck(_) => {
                    arrived.take();
                }
                Action::Retransmit(s) => {
                    if let Some(b) = c.resend(&s) {
                        out.push((Side::A, b));
                    }
                }
                Action::PrematureAck(s) => {
                    let wnd = (s.wnd >> c.wscale).min(u16::MAX as u32) as u16;
                    let from_template = c.ack_frame.as_deref().and_then(|t| ack_from(t, &s, wnd));
                    let frame = from_template.or_else(|| {
                        // Any frame of the connection gives the addresses.
                        let d = data.or_else(|| c.copies.front().map(|x| x.1.as_slice()))?;
                        synthesized += 1;
                        ack_reversing(d, &s, wnd)
                    });
                    if let Some(b) = frame {
                        out.push((Side::B, b));
                    }
                }
            }
        }
        c.prune();
        let timer = c.core.poll_timeout();
        self.synthesized += synthesized;
        if let Some(t) = timer {
            self.due = Some(self.due.map_or(t, |d| d.min(t)));
        }
    }

    /// Makes room for `flow`; false if there is none.
    fn admit(&mut self, now: Instant, flow: FlowId) -> bool {
        if self.conns.len() >= self.cfg.flows {
            let victim = self
                .conns
                .iter()
                .filter(|(_, c)| !c.holds_p_acked())
                .min_by_key(|(_, c)| c.last_active)
                .map(|(&k, _)| k);
            let Some(v) = victim else {
                self.refused += 1;
                return false;
            };
            self.retire(v);
            self.evicted += 1;
        }
        self.conns.insert(
            flow,
            Conn {
                core: Watermark::new(self.cfg.core),
                copies: VecDeque::new(),
                stored_bytes: 0,
                ack_frame: None,
                wscale: 0,
                ts_latest: None,
                last_active: now,
            },
        );
        true
    }

    fn retire(&mut self, flow: FlowId) {
        if let Some(c) = self.conns.remove(&flow) {
            add(&mut self.retired, &c.core.stats());
        }
    }

    pub fn stats(&self) -> WatermarkStats {
        let mut t = self.retired;
        let (mut frames, mut bytes) = (0, 0);
        for c in self.conns.values() {
            add(&mut t, &c.core.stats());
            frames += c.copies.len() as u64;
            bytes += c.stored_bytes as u64;
        }
        WatermarkStats {
            premature_acks: t.premature_acks,
            local_retransmits: t.local_retransmits,
            dropped_acks: t.dropped_acks,
            synthesized_acks: self.synthesized,
            flows: self.conns.len() as u64,
            stored_frames: frames,
            stored_bytes: bytes,
            evicted: self.evicted,
            refused: self.refused,
            corrupt: self.corrupt,
        }
    }

    pub fn tracked_flows(&self) -> usize {
        self.conns.len()
    }
}

fn add(t: &mut Stats, s: &Stats) {
    t.premature_acks += s.premature_acks;
    t.local_retransmits += s.local_retransmits;
    t.dropped_acks += s.dropped_acks;
}

/// The window scale the SYN-ACK `frame` announces (0 without the option).
fn syn_wscale(frame: &[u8]) -> u32 {
    let Ok((_, ip)) = EthernetRepr::parse(frame) else {
        return 0;
    };
    match parse_ip_packet(ip) {
        Ok(Parsed::Tcp(p)) => p.tcp.options.wscale.unwrap_or(0).min(14) as u32,
        _ => 0,
    }
}

/// `s` written into a copy of the receiver's pure ACK `template`
/// (incremental checksum updates); `None` if a field does not fit.
fn ack_from(template: &[u8], s: &Segment, wnd: u16) -> Option<Vec<u8>> {
    let mut b = template.to_vec();
    let ip = b.get_mut(EthernetRepr::HEADER_LEN..)?;
    rewrite_tcp_seq(ip, s.seq.0).ok()?;
    rewrite_tcp_ack(ip, s.ack.0).ok()?;
    rewrite_tcp_window(ip, wnd).ok()?;
    if let Some(ts) = s.ts {
        let ts = pep_wire::TimestampOption {
            val: ts.val,
            ecr: ts.ecr,
        };
        if rewrite_tcp_timestamps(ip, ts) != Ok(true) {
            return None;
        }
    }
    // Stale SACK blocks would report holes that are not there.
    rewrite_tcp_sack(ip, &[]).ok()?;
    Some(b)
}

/// An ACK carrying `s`, addressed back to where the data frame `data`
/// came from (Ethernet, IP and ports swapped; full checksums).
fn ack_reversing(data: &[u8], s: &Segment, wnd: u16) -> Option<Vec<u8>> {
    let (eth, ip) = EthernetRepr::parse(data).ok()?;
    let Ok(Parsed::Tcp(p)) = parse_ip_packet(ip) else {
        return None;
    };
    let ip = match p.ip {
        IpRepr::V4(v) => IpRepr::V4(Ipv4Repr {
            // DSCP kept; an ACK is not ECN-capable.
            tos: v.tos & !3,
            ..Ipv4Repr::new(v.dst, v.src)
        }),
        IpRepr::V6(v) => IpRepr::V6(Ipv6Repr {
            traffic_class: v.traffic_class & !3,
            ..Ipv6Repr::new(v.dst, v.src)
        }),
    };
    let tcp = TcpRepr {
        src_port: p.tcp.dst_port,
        dst_port: p.tcp.src_port,
        seq: s.seq.0,
        ack: s.ack.0,
        flags: pep_wire::flags::ACK,
        window: wnd,
        options: TcpOptions {
            timestamps: s.ts.map(|t| pep_wire::TimestampOption {
                val: t.val,
                ecr: t.ecr,
            }),
            ..TcpOptions::default()
        },
        payload_len: 0,
        ..TcpRepr::default()
    };
    let pkt = emit_packet_vec(&ip, &tcp, &[]).ok()?;
    ethernet_frame(eth.dst, eth.src, &pkt).ok()
}

#[cfg(test)]
#[path = "watermark_tests.rs"]
mod tests;
