//! A lab run's results in the simulator's shapes: `goodput.csv` and
//! `cwnd.csv` with the same columns, `summary.json` with the same field
//! names wherever the lab measures the same thing, plus `tcpinfo.csv` with
//! what only a real kernel reports.
//!
//! Differences from `pep sim`: `fast_retransmits` is `null` (Linux does not
//! count them apart), `local_drops` is absent (the lab's hosts have no
//! queue of their own in front of the emulated link), the links carry
//! only totals (no `links.csv`/`queues.csv` series yet), and every time is
//! wall-clock time, so two runs never give identical files.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::Path;

use pep_core::{Duration, Instant};
use serde::Serialize;

use crate::emu::DirReport;
use crate::traffic::{FlowResult, TrafficReport};

/// Per-flow results; the first fields are the simulator's.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FlowSummary {
    pub name: String,
    pub from: String,
    pub to: String,
    pub delivered_bytes: u64,
    /// Delivered bytes over start to last byte, in Mbit/s.
    pub goodput_mbps: f64,
    pub segments_sent: u64,
    pub retransmitted_segments: u64,
    /// Not reported by Linux: always `null`.
    pub fast_retransmits: Option<u64>,
    /// Retransmission timeouts, where the kernel reports them.
    pub timeouts: Option<u64>,
    /// Seconds from start to the last byte read (finite flows).
    pub completion_s: Option<f64>,
    pub cc: String,
    pub sent_bytes: u64,
    /// Every byte sent arrived, in order and unchanged.
    pub byte_exact: bool,
    pub first_mismatch: Option<u64>,
    pub min_rtt_ms: Option<f64>,
    /// Mean of the sampled smoothed RTT.
    pub mean_srtt_ms: Option<f64>,
    pub error: Option<String>,
}

/// Per-link-direction results; the first fields are the simulator's.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LinkSummary {
    pub name: String,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub utilisation: f64,
    pub queue_drops: u64,
    pub lost_packets: u64,
    pub max_queue_packets: u64,
    /// Frames the kernel dropped before the emulator read them (should be 0).
    pub kernel_drops: u64,
    /// Over-long frames dropped: an offload left on (should be 0).
    pub truncated: u64,
    pub send_errors: u64,
    /// How late the emulator handled its deadlines.
    pub timer_late_p50_us: f64,
    pub timer_late_p99_us: f64,
    pub timer_late_max_us: f64,
    /// The emulator threads ran under `SCHED_FIFO`.
    pub realtime: bool,
    /// Idle CPUs were kept polling (`--no-poll-idle` not given, and root).
    pub idle_polling: bool,
    /// The packets' queueing delay, median and 95th percentile, in ms, as
    /// the simulator's summary has them (FIFO queues only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p50_queue_delay_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p95_queue_delay_ms: Option<f64>,
}

/// `summary.json`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Summary {
    pub scenario: String,
    pub seed: u64,
    pub duration_s: f64,
    pub flows: Vec<FlowSummary>,
    pub total_delivered_bytes: u64,
    pub total_goodput_mbps: f64,
    pub total_retransmitted_segments: u64,
    pub links: Vec<LinkSummary>,
    /// `uname -r` of the machine that ran it.
    pub kernel: String,
}

pub use pep_core::time::fmt_out::{mbps, round6, secs};

fn flow_summary(f: &FlowResult, run_end: Instant) -> FlowSummary {
    let end = f.last_byte.unwrap_or(run_end);
    let last = f.last_sample();
    let srtts: Vec<f64> = f
        .samples
        .iter()
        .filter(|s| s.rtt_us > 0)
        .map(|s| s.rtt_us as f64 / 1e3)
        .collect();
    FlowSummary {
        name: f.name.clone(),
        from: f.from.clone(),
        to: f.to.clone(),
        delivered_bytes: f.delivered_bytes,
        goodput_mbps: mbps(f.delivered_bytes, end.saturating_since(f.start)),
        segments_sent: last.map_or(0, |s| s.data_segs_out as u64),
        retransmitted_segments: last.map_or(0, |s| s.total_retrans as u64),
        fast_retransmits: None,
        timeouts: last.and_then(|s| s.total_rto).map(u64::from),
        completion_s: f
            .finite
            .then(|| f.last_byte.map(|t| round6((t - f.start).as_secs_f64())))
            .flatten(),
        cc: f.cc.clone(),
        sent_bytes: f.sent_bytes,
        byte_exact: f.byte_exact(),
        first_mismatch: f.first_mismatch,
        min_rtt_ms: last
            .filter(|s| s.min_rtt_us > 0)
            .map(|s| round6(s.min_rtt_us as f64 / 1e3)),
        mean_srtt_ms: (!srtts.is_empty())
            .then(|| round6(srtts.iter().sum::<f64>() / srtts.len() as f64)),
        error: f.error.clone(),
    }
}

/// The summary of one link direction's counters.
pub fn link_summary(d: &DirReport) -> LinkSummary {
    let us = |x: Duration| round6(x.as_nanos() as f64 / 1e3);
    let elapsed = d.elapsed.as_nanos();
    LinkSummary {
        name: d.name.clone(),
        tx_packets: d.link.tx_packets,
        tx_bytes: d.link.tx_bytes,
        utilisation: if elapsed == 0 {
            0.0
        } else {
            round6(d.link.busy_ns.min(elapsed) as f64 / elapsed as f64)
        },
        queue_drops: d.queue.dropped,
        lost_packets: d.link.lost_packets,
        max_queue_packets: d.max_queue_packets,
        kernel_drops: d.kernel_drops,
        truncated: d.truncated,
        send_errors: d.send_errors,
        timer_late_p50_us: us(d.lateness.quantile(0.5)),
        timer_late_p99_us: us(d.lateness.quantile(0.99)),
        timer_late_max_us: us(d.lateness.max()),
        realtime: d.realtime,
        idle_polling: d.idle_polling,
        p50_queue_delay_ms: delay_ms(d, 50.0),
        p95_queue_delay_ms: delay_ms(d, 95.0),
    }
}

/// The `p`-th percentile of a direction's queueing delays, in ms.
fn delay_ms(d: &DirReport, p: f64) -> Option<f64> {
    let q = d.queue_delay.as_ref()?.percentile(p)?;
    Some(round6(q.as_millis_f64()))
}

/// The summary of a run of `traffic` over links with final counters
/// `links`.
pub fn summary(scenario: &str, seed: u64, traffic: &TrafficReport, links: &[DirReport]) -> Summary {
    let end = Instant::ZERO + traffic.duration;
    let flows: Vec<FlowSummary> = traffic.flows.iter().map(|f| flow_summary(f, end)).collect();
    let total: u64 = flows.iter().map(|f| f.delivered_bytes).sum();
    Summary {
        scenario: scenario.to_string(),
        seed,
        duration_s: round6(traffic.duration.as_secs_f64()),
        total_delivered_bytes: total,
        total_goodput_mbps: mbps(total, traffic.duration),
        total_retransmitted_segments: flows.iter().map(|f| f.retransmitted_segments).sum(),
        flows,
        links: links.iter().map(link_summary).collect(),
        kernel: kernel_release(),
    }
}

fn kernel_release() -> String {
    fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// `goodput.csv`: one row per bin and flow, time at the bin's end.
pub fn goodput_csv(traffic: &TrafficReport) -> String {
    let mut s = String::from("time_s,flow,bytes,goodput_mbps\n");
    let bins = traffic
        .flows
        .iter()
        .map(|f| f.goodput.len())
        .max()
        .unwrap_or(0);
    let w = traffic.interval;
    for k in 0..bins {
        let t = Instant(w.as_nanos() * (k as u64 + 1));
        for f in &traffic.flows {
            let b = f.goodput.get(k).copied().unwrap_or(0);
            let _ = writeln!(s, "{},{},{},{}", secs(t), f.name, b, mbps(b, w));
        }
    }
    s
}

/// `cwnd.csv`: the simulator's columns, from the sender's `TCP_INFO`.
pub fn cwnd_csv(traffic: &TrafficReport) -> String {
    let mut s = String::from("time_s,flow,cwnd_bytes,ssthresh_bytes\n");
    for f in &traffic.flows {
        for x in &f.samples {
            let ss = x
                .ssthresh_bytes()
                .map(|v| v.to_string())
                .unwrap_or_default();
            let _ = writeln!(s, "{},{},{},{}", secs(x.t), f.name, x.cwnd_bytes(), ss);
        }
    }
    s
}

/// `tcpinfo.csv`: more of `TCP_INFO`, per sample.
pub fn tcpinfo_csv(traffic: &TrafficReport) -> String {
    let mut s = String::from(
        "time_s,flow,ca_state,cwnd_segments,ssthresh_segments,snd_mss,srtt_ms,rttvar_ms,\
         min_rtt_ms,unacked,total_retrans,snd_wnd,delivery_rate_mbps,pacing_rate_mbps\n",
    );
    let opt = |v: Option<u32>| v.map(|x| x.to_string()).unwrap_or_default();
    for f in &traffic.flows {
        for x in &f.samples {
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                secs(x.t),
                f.name,
                x.ca_state,
                x.cwnd,
                opt(x.ssthresh),
                x.snd_mss,
                x.rtt_us as f64 / 1e3,
                x.rttvar_us as f64 / 1e3,
                x.min_rtt_us as f64 / 1e3,
                x.unacked,
                x.total_retrans,
                opt(x.snd_wnd),
                round6(x.delivery_rate as f64 * 8.0 / 1e6),
                round6(x.pacing_rate as f64 * 8.0 / 1e6),
            );
        }
    }
    s
}

/// Writes `goodput.csv`, `cwnd.csv`, `tcpinfo.csv` and `summary.json`
/// into `dir` (created if missing); returns the file names.
pub fn write_outputs(
    dir: &Path,
    traffic: &TrafficReport,
    summary: &Summary,
) -> io::Result<Vec<String>> {
    fs::create_dir_all(dir)?;
    let json = serde_json::to_string_pretty(summary).map_err(io::Error::other)? + "\n";
    let files = [
        ("goodput.csv", goodput_csv(traffic)),
        ("cwnd.csv", cwnd_csv(traffic)),
        ("tcpinfo.csv", tcpinfo_csv(traffic)),
        ("summary.json", json),
    ];
    let mut written = vec![];
    for (name, body) in files {
        fs::write(dir.join(name), body)?;
        written.push(name.to_string());
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcpinfo::TcpSample;

    fn report() -> TrafficReport {
        let sample = TcpSample {
            t: Instant(150_000_000),
            snd_mss: 1448,
            cwnd: 10,
            ssthresh: None,
            rtt_us: 200_500,
            min_rtt_us: 200_100,
            total_retrans: 3,
            data_segs_out: 100,
            ..TcpSample::default()
        };
        TrafficReport {
            interval: Duration::from_millis(100),
            sample: Duration::from_millis(100),
            duration: Duration::from_millis(300),
            flows: vec![FlowResult {
                name: "f".into(),
                from: "a".into(),
                to: "b".into(),
                cc: "cubic".into(),
                start: Instant::ZERO,
                sent_bytes: 250_000,
                delivered_bytes: 250_000,
                last_byte: Some(Instant(200_000_000)),
                finite: true,
                goodput: vec![125_000, 125_000],
                samples: vec![sample],
                ..FlowResult::default()
            }],
        }
    }

    #[test]
    fn csv_shapes_match_the_simulator() {
        let r = report();
        assert_eq!(
            goodput_csv(&r),
            "time_s,flow,bytes,goodput_mbps\n0.1,f,125000,10\n0.2,f,125000,10\n"
        );
        assert_eq!(
            cwnd_csv(&r),
            "time_s,flow,cwnd_bytes,ssthresh_bytes\n0.15,f,14480,\n"
        );
        assert!(tcpinfo_csv(&r)
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("0.15,f,0,10,,1448,200.5,"));
    }

    #[test]
    fn summary_fields() {
        let s = summary("x", 7, &report(), &[]);
        let f = &s.flows[0];
        assert_eq!(f.goodput_mbps, 10.0);
        assert_eq!(f.completion_s, Some(0.2));
        assert_eq!(f.retransmitted_segments, 3);
        assert_eq!(f.min_rtt_ms, Some(200.1));
        assert!(f.byte_exact);
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains("\"fast_retransmits\":null"), "{json}");
        assert_eq!(s.total_delivered_bytes, 250_000);
    }
}
