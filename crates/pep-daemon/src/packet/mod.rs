//! Packet mode (`[packet]`): the daemon as a bump in the wire between two
//! interfaces, regulating the ACKs of TCP flows that cross it with the
//! core's state machines (the same code the simulator runs) on real
//! frames: the Smart ACK Dropper on its own rate-limited egress queue, ACK
//! thinning, ACK regeneration; and premature ACKs with a watermark on the
//! data path. See `docs/packet-mode.md`.
//!
//! * [`config`]: the `[packet]` section.
//! * [`engine`]: the packet path without sockets (frames and `now` in,
//!   frames out): what tests and the bench drive.
//! * [`io`]: [`PacketDaemon`], the thread bridging the two interfaces with
//!   `AF_PACKET` sockets and the real clock.
//! * [`metrics`]: `pep_packet_*` in the Prometheus exposition.
//! * [`watermark`]: the premature-ACK stage (`[packet.watermark]`).
//!
//! Frame parsing, flow ids, the incremental-checksum rewrite, the packet
//! sockets and the clock come from `pep-io` (`pep_io::frame`,
//! `pep_io::packet_socket`, `pep_io::clock`), shared with the lab's
//! emulator, which runs SAD on the same frames.

pub mod config;
pub mod engine;
pub mod io;
pub mod metrics;
pub mod watermark;

use std::sync::Arc;

pub use config::PacketSettings;
pub use engine::{Engine, PacketStats, Side};
pub use io::PacketDaemon;
pub use watermark::{WatermarkSettings, WatermarkStats};

use crate::metrics::Metrics;
use crate::Settings;

/// `pep proxy run` with `[packet]`: runs the packet path (and the metrics
/// endpoint, `proxy.metrics`) until SIGTERM or SIGINT.
pub fn run_foreground(settings: Settings) -> Result<(), String> {
    let Some(p) = &settings.packet else {
        return Err("no [packet] section".into());
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    let metrics = Arc::new(Metrics::default());
    let daemon = PacketDaemon::start(p, metrics.clone())?;
    let r: Result<(), String> = rt.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        if let Some(a) = settings.metrics {
            let l = tokio::net::TcpListener::bind(a)
                .await
                .map_err(|e| format!("proxy.metrics: bind {a}: {e}"))?;
            tokio::spawn(crate::metrics::serve(l, metrics.clone()));
        }
        let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
        let mut int = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
        let mut tick = tokio::time::interval(std::time::Duration::from_millis(500));
        loop {
            tokio::select! {
                _ = term.recv() => break,
                _ = int.recv() => break,
                _ = tick.tick() => if daemon.failed() { break },
            }
        }
        Ok(())
    });
    let (stats, io, failure) = daemon.stop_with_reason();
    tracing::info!(?stats, ?io, "packet path stopped");
    match failure {
        Some(f) => Err(f),
        None => r,
    }
}
