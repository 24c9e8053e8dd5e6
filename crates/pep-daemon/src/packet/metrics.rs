//! The packet path's counters in the Prometheus exposition
//! (`pep_packet_*`), published by the packet thread every 100 ms.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use prometheus_client::encoding::DescriptorEncoder;

use super::engine::PacketStats;
use crate::metrics::{counter, gauge};

/// What the socket side counts beside the engine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoStats {
    /// Frames longer than the receive buffer (lost: offloads still on).
    pub oversize: u64,
    /// Frames the outgoing interface refused.
    pub send_errors: u64,
    /// Frames the kernel dropped before the daemon read them.
    pub kernel_drops: u64,
}

/// The last published counters. Relaxed atomics; one writer.
#[derive(Default)]
pub struct PacketMetrics {
    pub up: AtomicU64,
    received: [AtomicU64; 2],
    passed: [AtomicU64; 2],
    dropped: AtomicU64,
    merged: AtomicU64,
    thinned: AtomicU64,
    rewritten: AtomicU64,
    rewrite_failures: AtomicU64,
    regenerated: AtomicU64,
    non_tcp: AtomicU64,
    malformed: AtomicU64,
    flows: AtomicU64,
    flows_evicted: AtomicU64,
    queued: AtomicU64,
    oversize: AtomicU64,
    send_errors: AtomicU64,
    kernel_drops: AtomicU64,
    wm_premature_acks: AtomicU64,
    wm_local_retransmits: AtomicU64,
    wm_dropped_acks: AtomicU64,
    wm_flows: AtomicU64,
    wm_stored_frames: AtomicU64,
    wm_stored_bytes: AtomicU64,
    wm_refused: AtomicU64,
    wm_corrupt: AtomicU64,
}

impl PacketMetrics {
    pub fn publish(&self, s: &PacketStats, io: &IoStats) {
        for i in 0..2 {
            self.received[i].store(s.received[i], Relaxed);
            self.passed[i].store(s.passed[i], Relaxed);
        }
        for (a, v) in [
            (&self.dropped, s.dropped),
            (&self.merged, s.merged),
            (&self.thinned, s.thinned),
            (&self.rewritten, s.rewritten),
            (&self.rewrite_failures, s.rewrite_failures),
            (&self.regenerated, s.regenerated),
            (&self.non_tcp, s.non_tcp),
            (&self.malformed, s.malformed),
            (&self.flows, s.flows),
            (&self.flows_evicted, s.flows_evicted),
            (&self.queued, s.queued),
            (&self.oversize, io.oversize),
            (&self.send_errors, io.send_errors),
            (&self.kernel_drops, io.kernel_drops),
            (&self.wm_premature_acks, s.watermark.premature_acks),
            (&self.wm_local_retransmits, s.watermark.local_retransmits),
            (&self.wm_dropped_acks, s.watermark.dropped_acks),
            (&self.wm_flows, s.watermark.flows),
            (&self.wm_stored_frames, s.watermark.stored_frames),
            (&self.wm_stored_bytes, s.watermark.stored_bytes),
            (&self.wm_refused, s.watermark.refused),
            (&self.wm_corrupt, s.watermark.corrupt),
        ] {
            a.store(v, Relaxed);
        }
    }

    /// Encodes the `pep_packet_*` families (a part of the daemon's
    /// collector).
    pub fn encode(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
        let l = |a: &AtomicU64| a.load(Relaxed);
        gauge(
            e,
            "pep_packet_up",
            "1 while the packet path runs.",
            &[(&[], l(&self.up))],
        )?;
        counter(
            e,
            "pep_packet_received",
            "Frames received, by interface.",
            &[
                (&[("iface", "a")], l(&self.received[0])),
                (&[("iface", "b")], l(&self.received[1])),
            ],
        )?;
        counter(
            e,
            "pep_packet_passed",
            "Frames sent on, by the interface they left on.",
            &[
                (&[("iface", "b")], l(&self.passed[0])),
                (&[("iface", "a")], l(&self.passed[1])),
            ],
        )?;
        for (name, kind, help, v) in [
            (
                "pep_packet_dropped_total",
                "counter",
                "Frames the egress queue dropped because it was full.",
                &self.dropped,
            ),
            (
                "pep_packet_merged_total",
                "counter",
                "Pure ACKs the Smart ACK Dropper merged into a queued ACK of their flow.",
                &self.merged,
            ),
            (
                "pep_packet_thinned_total",
                "counter",
                "Pure ACKs ACK thinning dropped.",
                &self.thinned,
            ),
            (
                "pep_packet_rewritten_total",
                "counter",
                "Frames whose ACK fields were rewritten (incremental checksum update).",
                &self.rewritten,
            ),
            (
                "pep_packet_rewrite_failures_total",
                "counter",
                "Frames a rewritten field did not fit into (sent as they were).",
                &self.rewrite_failures,
            ),
            (
                "pep_packet_regenerated_total",
                "counter",
                "ACKs created by ACK regeneration.",
                &self.regenerated,
            ),
            (
                "pep_packet_non_tcp_total",
                "counter",
                "Frames that are not TCP (passed untouched).",
                &self.non_tcp,
            ),
            (
                "pep_packet_malformed_total",
                "counter",
                "Frames whose headers do not parse (passed untouched).",
                &self.malformed,
            ),
            (
                "pep_packet_flows",
                "gauge",
                "TCP connections with state.",
                &self.flows,
            ),
            (
                "pep_packet_flows_evicted_total",
                "counter",
                "Per-flow state dropped to make room for new flows.",
                &self.flows_evicted,
            ),
            (
                "pep_packet_queue_packets",
                "gauge",
                "Packets waiting in the egress queue.",
                &self.queued,
            ),
            (
                "pep_packet_oversize_total",
                "counter",
                "Frames too long to receive whole (offloads on?), dropped.",
                &self.oversize,
            ),
            (
                "pep_packet_send_errors_total",
                "counter",
                "Frames the outgoing interface refused.",
                &self.send_errors,
            ),
            (
                "pep_packet_kernel_drops_total",
                "counter",
                "Frames the kernel dropped before the daemon read them.",
                &self.kernel_drops,
            ),
            (
                "pep_packet_watermark_premature_acks_total",
                "counter",
                "ACKs the watermark PEP sent senders on the receivers' behalf.",
                &self.wm_premature_acks,
            ),
            (
                "pep_packet_watermark_local_retransmits_total",
                "counter",
                "Held copies the watermark PEP sent receivers again.",
                &self.wm_local_retransmits,
            ),
            (
                "pep_packet_watermark_dropped_acks_total",
                "counter",
                "Receivers' ACKs the watermark PEP dropped (already premature-ACKed, or duplicates for a hole it repairs).",
                &self.wm_dropped_acks,
            ),
            (
                "pep_packet_watermark_flows",
                "gauge",
                "Connections with watermark state.",
                &self.wm_flows,
            ),
            (
                "pep_packet_watermark_stored_frames",
                "gauge",
                "Copies the watermark PEP holds.",
                &self.wm_stored_frames,
            ),
            (
                "pep_packet_watermark_stored_bytes",
                "gauge",
                "Bytes of the copies the watermark PEP holds.",
                &self.wm_stored_bytes,
            ),
            (
                "pep_packet_watermark_refused_total",
                "counter",
                "New connections left untracked: every slot held premature-ACKed data.",
                &self.wm_refused,
            ),
            (
                "pep_packet_watermark_corrupt_total",
                "counter",
                "TCP frames with a wrong checksum the watermark PEP passed without looking at them.",
                &self.wm_corrupt,
            ),
        ] {
            // The encoder appends a counter's `_total`.
            match (kind, name.strip_suffix("_total")) {
                ("counter", Some(base)) => counter(e, base, help, &[(&[], l(v))])?,
                _ => gauge(e, name, help, &[(&[], l(v))])?,
            }
        }
        Ok(())
    }
}
