//! split-end: accepts the tunnel, and for each stream connects to the
//! destination its header names, if the policy allows it.

use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use quinn::{Connection, Endpoint, RecvStream, SendStream};
use tokio::net::{TcpSocket, TcpStream};
use tracing::{debug, info, warn};

use super::{allowed, read_header, relay, Status};
use crate::config::Settings;
use crate::metrics::Metrics;
use crate::net;

/// Serves tunnels arriving at `endpoint` until the task is dropped.
pub async fn serve(endpoint: Endpoint, settings: Arc<Settings>, metrics: Arc<Metrics>) {
    while let Some(incoming) = endpoint.accept().await {
        let (s, m) = (settings.clone(), metrics.clone());
        tokio::spawn(async move {
            let from = incoming.remote_address();
            match incoming.await {
                Ok(conn) => {
                    m.tunnel.connects.fetch_add(1, Relaxed);
                    m.tunnel.up.fetch_add(1, Relaxed);
                    info!(%from, "tunnel up");
                    let why = serve_connection(conn, s, m.clone()).await;
                    m.tunnel.up.fetch_sub(1, Relaxed);
                    warn!(%from, "tunnel down: {why}");
                }
                Err(e) => {
                    if super::start::is_auth_failure(&e) {
                        m.tunnel.auth_failures.fetch_add(1, Relaxed);
                        warn!(%from, "tunnel refused: the peer failed authentication: {e}");
                    } else {
                        debug!(%from, "tunnel handshake: {e}");
                    }
                }
            }
        });
    }
}

async fn serve_connection(
    conn: Connection,
    s: Arc<Settings>,
    m: Arc<Metrics>,
) -> quinn::ConnectionError {
    let sampler = tokio::spawn(super::start::sample(conn.clone(), m.clone()));
    let why = loop {
        match conn.accept_bi().await {
            Ok((send, recv)) => {
                let (s, m) = (s.clone(), m.clone());
                tokio::spawn(async move {
                    m.tunnel.flows_active.fetch_add(1, Relaxed);
                    let how = flow(send, recv, &s, &m).await;
                    m.tunnel.flows_active.fetch_sub(1, Relaxed);
                    m.tunnel.end(how);
                });
            }
            Err(e) => break e,
        }
    };
    sampler.abort();
    why
}

async fn flow(
    mut send: SendStream,
    mut recv: RecvStream,
    s: &Settings,
    m: &Metrics,
) -> &'static str {
    let header = tokio::time::timeout(s.connect_timeout, read_header(&mut recv)).await;
    let (dst, client) = match header {
        Ok(Ok(h)) => h,
        Ok(Err(e)) => {
            warn!("tunnel: bad flow header: {e}");
            let _ = send.reset(super::CODE_RESET);
            return "reset_by_tunnel";
        }
        Err(_) => {
            let _ = send.reset(super::CODE_RESET);
            return "reset_by_tunnel";
        }
    };
    let policy = s.tunnel.as_ref().map_or(&[][..], |t| &t.allow[..]);
    // The client's first bytes may already be queued behind the header:
    // they stay unread until the destination is allowed and connected, and
    // are discarded (the stream stopped) otherwise.
    let decline = |mut send: SendStream, mut recv: RecvStream, st: Status| async move {
        let _ = send.write_all(&[st as u8]).await;
        let _ = send.finish();
        let _ = recv.stop(super::CODE_RESET);
    };
    if !allowed(policy, dst.ip()) {
        warn!(%client, %dst, "tunnel: destination not allowed by tunnel.allow");
        decline(send, recv, Status::Refused).await;
        return "refused_by_policy";
    }
    let tcp = match connect(dst, s).await {
        Ok(t) => t,
        Err(e) => {
            debug!(%client, %dst, "tunnel: connect failed: {e}");
            decline(send, recv, Status::Unreachable).await;
            return "unreachable";
        }
    };
    if send.write_all(&[Status::Connected as u8]).await.is_err() {
        super::reset_tcp(&tcp);
        return "reset_by_tunnel";
    }
    relay(tcp, send, recv, &m.tunnel, None).await.how()
}

/// The destination leg: the server-leg options of `dst`, with a timeout.
async fn connect(dst: SocketAddr, s: &Settings) -> std::io::Result<TcpStream> {
    let (_, opts) = s.legs_for(dst.ip());
    // Mark 0: split-end intercepts nothing, so needs no mark (nor the
    // privilege to set one).
    let sock = net::server_socket(dst, 0, None, &opts)?;
    let sock = TcpSocket::from_std_stream(std::net::TcpStream::from(sock));
    match tokio::time::timeout(s.connect_timeout, sock.connect(dst)).await {
        Ok(r) => r,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "connect timed out",
        )),
    }
}
