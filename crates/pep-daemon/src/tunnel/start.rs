//! split-start: keeps the tunnel to split-end up, and carries each
//! intercepted connection over a stream of it.

use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use quinn::{Connection, Endpoint};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tracing::{debug, info, warn};

use super::localq::FlowReads;
use super::{encode_header, relay_opening, reset_tcp};
use crate::client_rate::RateCap;
use crate::metrics::Metrics;

/// The tunnel as flows see it: the current connection, if any.
pub struct TunnelClient {
    conn: watch::Receiver<Option<Connection>>,
    metrics: Arc<Metrics>,
    /// With a local queue: where each flow's bytes read are counted.
    reads: Option<Arc<FlowReads>>,
}

/// With a local queue, the tunnel's unsent backlog is bounded: how many
/// bytes beyond its congestion window it may hold, and how often the
/// bound follows the window.
#[derive(Clone, Copy, Debug)]
pub struct BacklogBound {
    pub beyond_cwnd: u64,
    pub every: Duration,
}

/// Connects to `peer` and keeps reconnecting (backoff 100 ms to 2 s) for
/// as long as the runtime runs.
pub fn spawn(
    endpoint: Endpoint,
    peer: SocketAddr,
    config: quinn::ClientConfig,
    metrics: Arc<Metrics>,
    localq: Option<(Arc<FlowReads>, BacklogBound)>,
) -> Arc<TunnelClient> {
    let (tx, rx) = watch::channel(None);
    let m = metrics.clone();
    let (reads, bound) = match localq {
        Some((r, b)) => (Some(r), Some(b)),
        None => (None, None),
    };
    tokio::spawn(async move {
        let mut backoff = Duration::from_millis(100);
        loop {
            match connect(&endpoint, peer, &config).await {
                Ok(conn) => {
                    backoff = Duration::from_millis(100);
                    m.tunnel.connects.fetch_add(1, Relaxed);
                    m.tunnel.up.store(1, Relaxed);
                    info!(%peer, "tunnel up");
                    let _ = tx.send(Some(conn.clone()));
                    let sampler = tokio::spawn(sample(conn.clone(), m.clone()));
                    let bounder = bound.map(|b| tokio::spawn(bound_backlog(conn.clone(), b)));
                    let why = conn.closed().await;
                    sampler.abort();
                    if let Some(b) = bounder {
                        b.abort();
                    }
                    let _ = tx.send(None);
                    m.tunnel.up.store(0, Relaxed);
                    warn!(%peer, "tunnel down: {why}");
                }
                Err(e) => {
                    if is_auth_failure(&e) {
                        m.tunnel.auth_failures.fetch_add(1, Relaxed);
                        warn!(%peer, "tunnel refused: the peer failed authentication: {e}");
                    } else {
                        debug!(%peer, "tunnel connect: {e}");
                    }
                }
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(2));
        }
    });
    Arc::new(TunnelClient {
        conn: rx,
        metrics,
        reads,
    })
}

/// Holds the connection's send window (bytes written into streams and not
/// yet acknowledged) at twice its congestion window plus `beyond_cwnd`:
/// quinn then takes a flow's bytes only about as fast as it sends them, so
/// what the tunnel cannot carry stays in the TCP stack, where the local
/// queue's credit sees it, instead of in quinn's buffers (up to
/// `flow_window` per flow). Twice: a window in flight, and room for as much
/// again lost and awaiting the acknowledgement of its retransmission.
/// With one window, a loss recovery starved the tunnel of new data (89 %
/// busy at the scale against 97 % without the queue; one window
/// plus the bytes lost in the last two round trips: 91 %; two windows:
/// 98.5 %). The bound is state, not a running sum, so it cannot drift.
async fn bound_backlog(conn: Connection, b: BacklogBound) {
    loop {
        let cwnd = conn.stats().path.cwnd;
        conn.set_send_window(2 * cwnd + b.beyond_cwnd);
        tokio::time::sleep(b.every).await;
    }
}

async fn connect(
    endpoint: &Endpoint,
    peer: SocketAddr,
    config: &quinn::ClientConfig,
) -> Result<Connection, quinn::ConnectionError> {
    match endpoint.connect_with(config.clone(), peer, super::tls::SERVER_NAME) {
        Ok(c) => c.await,
        Err(e) => {
            warn!(%peer, "tunnel: {e}");
            Err(quinn::ConnectionError::LocallyClosed)
        }
    }
}

/// A TLS alert about certificates, from either side.
pub(crate) fn is_auth_failure(e: &quinn::ConnectionError) -> bool {
    let text = e.to_string();
    matches!(
        e,
        quinn::ConnectionError::TransportError(_) | quinn::ConnectionError::ConnectionClosed(_)
    ) && (text.contains("certificate") || text.contains("ApplicationVerificationFailure"))
}

/// Copies the connection's path statistics into the metrics each second.
pub(crate) async fn sample(conn: Connection, m: Arc<Metrics>) {
    loop {
        let s = conn.stats();
        m.tunnel
            .rtt_us
            .store(s.path.rtt.as_micros() as u64, Relaxed);
        m.tunnel.cwnd_bytes.store(s.path.cwnd, Relaxed);
        m.tunnel.lost_packets.store(s.path.lost_packets, Relaxed);
        m.tunnel.sent_packets.store(s.path.sent_packets, Relaxed);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

impl TunnelClient {
    /// Whether the tunnel is up within `within`.
    pub async fn wait_up(&self, within: Duration) -> bool {
        self.connection(within).await.is_some()
    }

    /// The connection, waiting up to `within` for one.
    async fn connection(&self, within: Duration) -> Option<Connection> {
        let mut rx = self.conn.clone();
        let got = tokio::time::timeout(within, async {
            rx.wait_for(|c| c.is_some())
                .await
                .ok()
                .and_then(|c| c.clone())
        })
        .await;
        got.ok().flatten()
    }

    /// Carries one intercepted connection (`client` from `peer`, bound for
    /// `dst`) to split-end. Every way it can fail ends in a RST to the
    /// client: no tunnel within `timeout`, a refused or unreachable
    /// destination, or the tunnel failing mid-flow. `cap`: the client's
    /// share of `proxy.client_rate`, both ways.
    pub async fn relay_flow(
        &self,
        client: TcpStream,
        peer: SocketAddr,
        dst: SocketAddr,
        timeout: Duration,
        cap: Option<RateCap>,
    ) {
        let t = &self.metrics.tunnel;
        t.flows_active.fetch_add(1, Relaxed);
        // Registered before anything is read, so the count is the flow's.
        let read = self.reads.as_ref().map(|r| r.register((peer, dst)));
        let how = self
            .flow(client, peer, dst, timeout, read.as_deref(), cap.as_ref())
            .await;
        if let Some(r) = &self.reads {
            r.deregister(&(peer, dst));
        }
        t.flows_active.fetch_sub(1, Relaxed);
        t.end(how);
        debug!(%peer, %dst, how, "tunnelled flow ended");
    }

    async fn flow(
        &self,
        client: TcpStream,
        peer: SocketAddr,
        dst: SocketAddr,
        timeout: Duration,
        read: Option<&std::sync::atomic::AtomicU64>,
        cap: Option<&RateCap>,
    ) -> &'static str {
        let fail = |client: TcpStream, how| {
            reset_tcp(&client);
            how
        };
        let Some(conn) = self.connection(timeout).await else {
            return fail(client, "no_tunnel");
        };
        // The header goes now and the client's bytes right behind it
        // (`relay_opening`): the flow opens in one round trip.
        let opened = tokio::time::timeout(timeout, async {
            let (mut send, recv) = conn.open_bi().await.ok()?;
            send.write_all(&encode_header(dst, peer)).await.ok()?;
            Some((send, recv))
        })
        .await;
        let Ok(Some((send, recv))) = opened else {
            return fail(client, "no_tunnel");
        };
        relay_opening(client, send, recv, timeout, &self.metrics.tunnel, read, cap).await
    }
}
