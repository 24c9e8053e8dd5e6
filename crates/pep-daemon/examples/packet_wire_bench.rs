//! The packet path on the wire: packets per second and the latency the
//! daemon adds, through its `AF_PACKET` sockets on veths, with SAD on.
//!
//! `sudo cargo run --release -p pep-daemon --example packet_wire_bench`
//! (root: it makes three namespaces, `pwb<pid>s`, `pwb<pid>b`, `pwb<pid>r`,
//! and deletes them on exit; nothing leaves them).
//!
//! ```text
//!  sender ns: snd0 ==veth== bump-a [bump ns: the daemon] bump-b ==veth== rcv0
//!  sender ns: snd1 ==veth========================================== rcv1 (direct)
//! ```
//!
//! A sender thread writes Ethernet frames on `snd0` (or `snd1`), a
//! receiver thread reads them on `rcv0` (or `rcv1`); both stamp `CLOCK_MONOTONIC`, which
//! every namespace shares, so the one-way time of each frame is known. The
//! direct pair is the baseline: what the two test threads and the kernel
//! cost without the bump. The difference is the daemon's share: two
//! `AF_PACKET` system calls, its poll loop and the engine (SAD into a
//! 10 Gbit/s egress queue, which drains at once).
//!
//! 64-byte frames are pure ACKs of 64 flows, 1500-byte frames data. Latency
//! is measured at 10,000 frames per second, paced; throughput by sending
//! 300,000 frames as fast as the sender can and counting what arrives.

mod common;

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant as WallInstant;

use pep_core::{Duration, Rate};
use pep_daemon::metrics::Metrics;
use pep_daemon::packet::PacketDaemon;
use pep_io::clock::{monotonic_ns, sleep_until_ns, tune_timing_thread, Histogram};
use pep_io::packet_socket::{PacketSocket, Recv};
use pep_lab::netns;
use pep_wire::{emit_packet_vec, ethernet_frame, IpRepr, Ipv4Repr, TcpRepr};
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;

const LATENCY_FRAMES: u32 = 20_000;
const LATENCY_GAP_NS: u64 = 100_000;
const BLAST_FRAMES: u32 = 300_000;

/// Frame `k` of the run: the index rides in the TCP sequence number (SAD
/// rewrites ACK fields only), ACK numbers grow per flow.
fn frame(k: u32, len: usize) -> Vec<u8> {
    let flow = (k % 64) as u16;
    let ip = IpRepr::V4(Ipv4Repr::new(
        Ipv4Addr::new(10, 9, 0, 1),
        Ipv4Addr::new(10, 9, 1, 1),
    ));
    let payload = if len <= 64 { 0 } else { len - 54 };
    let tcp = TcpRepr {
        src_port: 1024 + flow,
        dst_port: 5001,
        seq: k,
        ack: 1 + k / 64 * 1448,
        flags: pep_wire::flags::ACK,
        window: 1000,
        payload_len: payload,
        ..TcpRepr::default()
    };
    let pkt = emit_packet_vec(&ip, &tcp, &vec![0u8; payload]).expect("frame");
    let mut f = ethernet_frame([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], &pkt).expect("frame");
    f.resize(f.len().max(64), 0);
    f
}

/// The index a received frame carries (the TCP sequence number).
fn index_of(f: &[u8]) -> Option<u32> {
    let b = f.get(14 + 20 + 4..14 + 20 + 8)?;
    Some(u32::from_be_bytes(b.try_into().ok()?))
}

struct Lab {
    tag: String,
}

impl Lab {
    fn ns(&self, which: char) -> String {
        format!("{}{which}", self.tag)
    }

    fn up() -> Result<Lab, String> {
        let lab = Lab {
            tag: format!("pwb{}", std::process::id()),
        };
        let e = |e: pep_lab::LabError| e.to_string();
        for w in ['s', 'b', 'r'] {
            netns::add(&lab.ns(w)).map_err(e)?;
        }
        let (s, b, r) = (lab.ns('s'), lab.ns('b'), lab.ns('r'));
        let pairs = [
            ("snd0", &s, "bump-a", &b),
            ("bump-b", &b, "rcv0", &r),
            ("snd1", &s, "rcv1", &r),
        ];
        for (x, nx, y, ny) in pairs {
            netns::ip(&[
                "link", "add", "name", x, "netns", nx, "type", "veth", "peer", "name", y, "netns",
                ny,
            ])
            .map_err(e)?;
        }
        for (n, dev) in [
            (&s, "snd0"),
            (&s, "snd1"),
            (&b, "bump-a"),
            (&b, "bump-b"),
            (&r, "rcv0"),
            (&r, "rcv1"),
        ] {
            netns::ip(&["-n", n, "link", "set", dev, "up"]).map_err(e)?;
            netns::in_netns(n, || pep_lab::ethtool::disable_offloads(dev).map(|_| ()))
                .map_err(e)?;
        }
        Ok(lab)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for w in ['s', 'b', 'r'] {
            let _ = netns::delete(&self.ns(w));
        }
    }
}

/// What one run measured.
struct Measured {
    latency: Histogram,
    delivered: u32,
    seconds: f64,
}

/// Sends frames of `len` bytes on `tx_if` in the sender namespace and
/// receives them on `rx_if` in the receiver namespace: paced at
/// `LATENCY_GAP_NS` for latency, or as fast as possible.
fn run(lab: &Lab, tx_if: &str, rx_if: &str, len: usize, blast: bool) -> Result<Measured, String> {
    let n = if blast { BLAST_FRAMES } else { LATENCY_FRAMES };
    let frames: Vec<Vec<u8>> = (0..n).map(|k| frame(k, len)).collect();
    let sent_at: Arc<Vec<std::sync::atomic::AtomicU64>> =
        Arc::new((0..n).map(|_| Default::default()).collect());
    let done = Arc::new(AtomicBool::new(false));
    let (rns, rif) = (lab.ns('r'), rx_if.to_string());
    let (stamps, stop) = (sent_at.clone(), done.clone());
    let receiver = std::thread::spawn(move || -> Result<Measured, String> {
        netns::enter(&rns).map_err(|e| e.to_string())?;
        tune_timing_thread(false, 0);
        let rx = PacketSocket::receiver(&rif, 64 << 20).map_err(|e| e.to_string())?;
        let mut buf = vec![0u8; 2048];
        let mut latency = Histogram::default();
        let (mut delivered, mut first, mut last) = (0u32, 0u64, 0u64);
        let mut idle_since = None;
        loop {
            match rx.recv(&mut buf).map_err(|e| e.to_string())? {
                Recv::Frame(k) => {
                    let now = monotonic_ns();
                    idle_since = None;
                    let Some(i) = index_of(&buf[..k]).filter(|&i| i < n) else {
                        continue; // not ours (e.g. IPv6 neighbour discovery)
                    };
                    let t0 = stamps[i as usize].load(Relaxed);
                    if t0 != 0 {
                        latency.record(Duration(now.saturating_sub(t0)));
                    }
                    delivered += 1;
                    first = if first == 0 { now } else { first };
                    last = now;
                }
                Recv::Truncated(_) => {}
                Recv::Empty => {
                    let now = monotonic_ns();
                    if stop.load(Relaxed) {
                        // Everything sent; stragglers get 200 ms.
                        let since = *idle_since.get_or_insert(now);
                        if now - since > 200_000_000 {
                            break;
                        }
                    }
                    let mut pfd = libc::pollfd {
                        fd: rx.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    // SAFETY: one valid pollfd.
                    unsafe { libc::poll(&mut pfd, 1, 10) };
                }
            }
        }
        Ok(Measured {
            latency,
            delivered,
            seconds: (last.saturating_sub(first)) as f64 / 1e9,
        })
    });
    // Let the receiver open its socket before the first frame.
    std::thread::sleep(std::time::Duration::from_millis(100));
    let (sns, tif) = (lab.ns('s'), tx_if.to_string());
    let sender = std::thread::spawn(move || -> Result<(), String> {
        netns::enter(&sns).map_err(|e| e.to_string())?;
        tune_timing_thread(false, 0);
        let tx = PacketSocket::sender(&tif).map_err(|e| e.to_string())?;
        let start = monotonic_ns();
        for (k, f) in frames.iter().enumerate() {
            if !blast {
                sleep_until_ns(start + k as u64 * LATENCY_GAP_NS);
            }
            sent_at[k].store(monotonic_ns(), Relaxed);
            // A full send queue: wait for room rather than lose the frame.
            while let Err(e) = tx.send(f) {
                if e.kind() != std::io::ErrorKind::WouldBlock {
                    return Err(format!("send: {e}"));
                }
                std::thread::yield_now();
            }
        }
        Ok(())
    });
    let sent = sender.join().map_err(|_| "sender panicked")?;
    done.store(true, Relaxed);
    let got = receiver.join().map_err(|_| "receiver panicked")?;
    sent?;
    got
}

fn bench() -> Result<(), String> {
    let lab = Lab::up()?;
    let m = Arc::new(Metrics::default());
    let bump_ns = lab.ns('b');
    let daemon = std::thread::scope(|sc| {
        sc.spawn(|| {
            netns::enter(&bump_ns).map_err(|e| e.to_string())?;
            PacketDaemon::start(
                &common::sad_at("bump-a", "bump-b", Rate::mbps(10_000)),
                m.clone(),
            )
        })
        .join()
        .map_err(|_| "daemon start panicked".to_string())?
    })?;
    println!(
        "| frames | path | p50 one-way | p99 one-way | added p50 / p99 | max rate delivered |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    let t = WallInstant::now();
    for len in [64, 1500] {
        let direct = run(&lab, "snd1", "rcv1", len, false)?;
        let bump = run(&lab, "snd0", "rcv0", len, false)?;
        let direct_blast = run(&lab, "snd1", "rcv1", len, true)?;
        let bump_blast = run(&lab, "snd0", "rcv0", len, true)?;
        let us = |d: Duration| d.as_nanos() as f64 / 1e3;
        let added = format!(
            "{:.0} / {:.0} us",
            us(bump.latency.quantile(0.5)) - us(direct.latency.quantile(0.5)),
            us(bump.latency.quantile(0.99)) - us(direct.latency.quantile(0.99))
        );
        for (label, lat, blast, added) in [
            ("direct veth", &direct, &direct_blast, "-".to_string()),
            ("through the daemon", &bump, &bump_blast, added),
        ] {
            println!(
                "| {len} B | {label} | {:.0} us | {:.0} us | {added} | {:.0} kpps ({} of {} frames) |",
                us(lat.latency.quantile(0.5)),
                us(lat.latency.quantile(0.99)),
                blast.delivered as f64 / blast.seconds.max(1e-9) / 1e3,
                blast.delivered,
                BLAST_FRAMES,
            );
            if lat.delivered < LATENCY_FRAMES {
                eprintln!(
                    "warning: {label}, {len} B: {} of {LATENCY_FRAMES} paced frames arrived",
                    lat.delivered
                );
            }
        }
    }
    let (stats, io) = daemon.stop();
    println!(
        "\n(5 us histogram buckets; {:.1} s; daemon: {} frames received on a, \
         {} merged by SAD, {} dropped by its queue, {} lost in its socket buffers)",
        t.elapsed().as_secs_f64(),
        stats.received[0],
        stats.merged,
        stats.dropped,
        io.kernel_drops
    );
    Ok(())
}

fn main() -> ExitCode {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("packet_wire_bench: needs root (it makes network namespaces)");
        return ExitCode::from(2);
    }
    match bench() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("packet_wire_bench: {e}");
            ExitCode::FAILURE
        }
    }
}
