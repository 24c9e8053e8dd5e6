//! The tunnel end to end on loopback, without root: split-end serving a
//! real QUIC endpoint, split-start's client, and TCP connections standing
//! in for intercepted ones (the TPROXY part is the lab tests' job).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::*;
use crate::config;
use crate::metrics::Metrics;

fn keys(dir: &Path) {
    keygen(dir, "start").unwrap();
    keygen(dir, "end").unwrap();
    keygen(dir, "stranger").unwrap();
}

fn settings(dir: &Path, role: &str, me: &str, peer: &str, extra: &str) -> config::Settings {
    let d = dir.display();
    let text = format!(
        "[proxy]\nconnect_timeout = \"2s\"\n\
         [intercept]\ninterfaces = [\"lo\"]\nsubnets = [\"127.0.0.0/8\"]\n\
         [tunnel]\nrole = \"{role}\"\npeer = \"127.0.0.1:1\"\nlisten = \"127.0.0.1:0\"\n\
         cert = \"{d}/{me}.pem\"\nkey = \"{d}/{me}.key\"\npeer_cert = \"{d}/{peer}.pem\"\n\
         keepalive = \"200ms\"\ndead_after = \"1s\"\nflow_window = \"256KiB\"\n{extra}"
    );
    config::parse(&text, "test.toml").unwrap()
}

struct Pair {
    client: Arc<start::TunnelClient>,
    start_metrics: Arc<Metrics>,
    end_metrics: Arc<Metrics>,
    /// Cleared to make the path between the nodes drop everything.
    path_up: Arc<std::sync::atomic::AtomicBool>,
}

/// A UDP path between split-start and split-end that can go silent (a
/// dead peer or a cut link, as opposed to a closed connection).
async fn cuttable_path(to: SocketAddr, up: Arc<std::sync::atomic::AtomicBool>) -> SocketAddr {
    let sock = Arc::new(
        tokio::net::UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .unwrap(),
    );
    let back = Arc::new(
        tokio::net::UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .unwrap(),
    );
    back.connect(to).await.unwrap();
    let addr = sock.local_addr().unwrap();
    let client = Arc::new(std::sync::Mutex::new(None::<SocketAddr>));
    {
        let (sock, back, up, client) = (sock.clone(), back.clone(), up.clone(), client.clone());
        tokio::spawn(async move {
            let mut buf = vec![0u8; 65536];
            while let Ok((n, from)) = sock.recv_from(&mut buf).await {
                *client.lock().unwrap() = Some(from);
                if up.load(Relaxed) {
                    let _ = back.send(&buf[..n]).await;
                }
            }
        });
    }
    tokio::spawn(async move {
        let mut buf = vec![0u8; 65536];
        while let Ok(n) = back.recv(&mut buf).await {
            let to = *client.lock().unwrap();
            if let (true, Some(to)) = (up.load(Relaxed), to) {
                let _ = sock.send_to(&buf[..n], to).await;
            }
        }
    });
    addr
}

/// split-end on an ephemeral UDP port, split-start connected to it over
/// a [`cuttable_path`]. `start_key` is the key split-start presents.
async fn pair(dir: &Path, start_key: &str, allow: &str) -> Pair {
    let extra = format!("allow = [\"{allow}\"]\n");
    let end = settings(dir, "split-end", "end", "start", &extra);
    let t = end.tunnel.clone().unwrap();
    let tls = load_tls(&t.tls, transport(&t, 1000, Default::default())).unwrap();
    let udp = udp_socket(t.listen.unwrap()).unwrap();
    let addr = udp.local_addr().unwrap();
    let ep = quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        Some(tls.server),
        udp,
        Arc::new(quinn::TokioRuntime),
    )
    .unwrap();
    let end_metrics = Arc::new(Metrics::default());
    tokio::spawn(end::serve(ep, Arc::new(end), end_metrics.clone()));
    let path_up = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let addr = cuttable_path(addr, path_up.clone()).await;

    let st = settings(dir, "split-start", start_key, "end", "");
    let t = st.tunnel.clone().unwrap();
    let tls = load_tls(&t.tls, transport(&t, 1000, Default::default())).unwrap();
    let udp = udp_socket((Ipv4Addr::LOCALHOST, 0).into()).unwrap();
    let ep = quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        None,
        udp,
        Arc::new(quinn::TokioRuntime),
    )
    .unwrap();
    let start_metrics = Arc::new(Metrics::default());
    let client = start::spawn(ep, addr, tls.client, start_metrics.clone(), None);
    Pair {
        client,
        start_metrics,
        end_metrics,
        path_up,
    }
}

/// A connection as split-start would have intercepted it: the test's end
/// (the "client") and the proxy's accepted socket, carried over the tunnel
/// to `dst` in the background.
async fn intercepted(p: &Pair, dst: SocketAddr) -> TcpStream {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
    let (accepted, peer) = l.accept().await.unwrap();
    let t = p.client.clone();
    tokio::spawn(async move {
        t.relay_flow(accepted, peer, dst, Duration::from_secs(2), None)
            .await;
    });
    c
}

/// Keys, a tunnel allowing loopback, and a server socket for the flows.
async fn setup() -> (tempfile::TempDir, Pair, TcpListener, SocketAddr) {
    let dir = tempfile::tempdir().unwrap();
    keys(dir.path());
    let p = pair(dir.path(), "start", "127.0.0.0/8").await;
    let server = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let dst = server.local_addr().unwrap();
    (dir, p, server, dst)
}

/// Every network wait here is bounded: a broken tunnel (a flow whose far
/// end never connects) fails its test instead of hanging the run.
async fn within<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    const NET_WAIT: Duration = Duration::from_secs(30);
    tokio::time::timeout(NET_WAIT, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: nothing after {NET_WAIT:?}"))
}

fn data(seed: u32, n: usize) -> Vec<u8> {
    (0..n as u32)
        .map(|i| (i.wrapping_mul(2654435761) ^ seed) as u8)
        .collect()
}

fn is_reset<T: std::fmt::Debug>(r: &std::io::Result<T>) -> bool {
    matches!(r, Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_flows_cross_byte_exact_with_half_close() {
    let (_dir, p, server, dst) = setup().await;
    // The server reads the request to its end, then answers with a reply
    // derived from it (so replies cannot cross flows unnoticed).
    tokio::spawn(async move {
        loop {
            let (mut s, _) = server.accept().await.unwrap();
            tokio::spawn(async move {
                let mut req = Vec::new();
                s.read_to_end(&mut req).await.unwrap();
                let seed = req.first().copied().unwrap_or(0) as u32;
                let reply = data(seed + 1000, req.len() * 3 + 1);
                s.write_all(&reply).await.unwrap();
                s.shutdown().await.unwrap();
            });
        }
    });
    let mut tasks = Vec::new();
    for k in 0..100u32 {
        let mut c = intercepted(&p, dst).await;
        tasks.push(tokio::spawn(async move {
            // 1 B to 1 MB, log-spaced by flow.
            let n = 10f64.powf(k as f64 * 6.0 / 99.0) as usize;
            let mut req = data(k, n);
            req[0] = k as u8;
            c.write_all(&req).await.unwrap();
            c.shutdown().await.unwrap();
            let mut reply = Vec::new();
            c.read_to_end(&mut reply).await.unwrap();
            assert!(
                reply == data(k + 1000, n * 3 + 1),
                "flow {k}: reply differs"
            );
        }));
    }
    for t in tasks {
        within("a flow's reply", t).await.unwrap();
    }
    // A flow is counted when both its directions have ended, which may be
    // just after its client read the reply's end: wait for the count.
    let ended = |m: &Metrics| m.tunnel.ended_count("clean");
    assert!(wait(|| ended(&p.start_metrics) == 100).await);
    assert!(wait(|| ended(&p.end_metrics) == 100).await);
    assert_eq!(
        p.start_metrics.tunnel.connects.load(Relaxed),
        1,
        "one tunnel for all"
    );
}

async fn wait(mut f: impl FnMut() -> bool) -> bool {
    for _ in 0..200 {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    f()
}

use std::sync::atomic::Ordering::Relaxed;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranger_key_gets_no_tunnel_and_no_flow() {
    let dir = tempfile::tempdir().unwrap();
    keys(dir.path());
    let p = pair(dir.path(), "stranger", "127.0.0.0/8").await;
    let server = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let dst = server.local_addr().unwrap();
    let mut c = intercepted(&p, dst).await;
    let mut b = [0u8; 1];
    let r = within("the client's reset", c.read(&mut b)).await;
    assert!(is_reset(&r), "the client is reset");
    assert!(p.end_metrics.tunnel.auth_failures.load(Relaxed) >= 1);
    assert_eq!(p.end_metrics.tunnel.connects.load(Relaxed), 0);
    // Counted as the flow task ends, just after it resets the client.
    assert!(wait(|| p.start_metrics.tunnel.ended_count("no_tunnel") == 1).await);
    // Nothing reached the server.
    let accepted = tokio::time::timeout(Duration::from_millis(300), server.accept()).await;
    assert!(accepted.is_err(), "no connection reached the server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn destinations_outside_the_policy_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    keys(dir.path());
    let p = pair(dir.path(), "start", "10.0.0.0/8").await;
    let server = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let mut c = intercepted(&p, server.local_addr().unwrap()).await;
    // The client's first bytes travel with the open request (before the
    // answer): they change neither the outcome nor what it is counted as.
    // On loopback the answer may beat them: the write then sees the reset.
    let wrote = c.write_all(&data(7, 2_000)).await;
    let mut b = [0u8; 1];
    assert!(is_reset(&wrote) || is_reset(&within("the reset", c.read(&mut b)).await));
    // Counted as the flow task ends, just after it resets the client (a
    // CI run read it before).
    assert!(wait(|| p.start_metrics.tunnel.ended_count("refused_by_policy") == 1).await);
    assert!(wait(|| p.end_metrics.tunnel.ended_count("refused_by_policy") == 1).await);
    // An unreachable destination inside the policy: reset too.
    let closed = {
        let l = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        l.local_addr().unwrap()
    };
    let p2 = pair(dir.path(), "start", "127.0.0.0/8").await;
    let mut c = intercepted(&p2, closed).await;
    let wrote = c.write_all(b"hello").await;
    assert!(is_reset(&wrote) || is_reset(&within("the reset", c.read(&mut b)).await));
    assert!(wait(|| p2.start_metrics.tunnel.ended_count("unreachable") == 1).await);
    // Nothing reached the refused destination's listener.
    let accepted = tokio::time::timeout(Duration::from_millis(300), server.accept()).await;
    assert!(
        accepted.is_err(),
        "no connection reached the refused server"
    );
}

/// Per-flow credit: a client that stops reading holds at most its flow's
/// window (plus socket buffers) in the tunnel, and another flow still
/// moves its whole transfer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_reader_stalls_only_its_own_flow() {
    let (_dir, p, server, dst) = setup().await;
    let written = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let w = written.clone();
    // Every connection gets 64 MB pushed at it, as fast as it will take.
    tokio::spawn(async move {
        loop {
            let (mut s, _) = server.accept().await.unwrap();
            let w = w.clone();
            tokio::spawn(async move {
                let chunk = vec![7u8; 64 << 10];
                for _ in 0..1024 {
                    if s.write_all(&chunk).await.is_err() {
                        return;
                    }
                    w.fetch_add(chunk.len() as u64, Relaxed);
                }
            });
        }
    });
    let stalled = intercepted(&p, dst).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let held = written.load(Relaxed);
    // 256 KiB of credit, plus what the kernel buffers on loopback at both
    // TCP legs (a few MB at most).
    assert!(held < 16 << 20, "the stalled flow took {held} bytes");
    let mut c = intercepted(&p, dst).await;
    let mut n = 0u64;
    let mut buf = vec![0u8; 1 << 16];
    let t0 = std::time::Instant::now();
    while n < 64 << 20 {
        let k = within("the second flow", c.read(&mut buf)).await.unwrap();
        assert!(k > 0, "the second flow ended early at {n} bytes");
        n += k as u64;
    }
    println!(
        "second flow: 64 MiB in {:?} beside a stalled one",
        t0.elapsed()
    );
    drop(stalled);
}

/// split-end going silent mid-transfer (killed, or the link cut): the
/// client is reset once the tunnel is declared dead (dead_after = 1 s), not
/// left hanging; when the path returns, so does the tunnel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_peer_resets_its_flows() {
    let (_dir, p, server, dst) = setup().await;
    tokio::spawn(async move {
        let (mut s, _) = server.accept().await.unwrap();
        let chunk = vec![1u8; 1 << 16];
        loop {
            if s.write_all(&chunk).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    let mut c = intercepted(&p, dst).await;
    let mut buf = vec![0u8; 1 << 16];
    let n = within("the first data", c.read(&mut buf)).await.unwrap();
    assert!(n > 0, "data flows first");
    p.path_up.store(false, Relaxed);
    let t0 = std::time::Instant::now();
    let r = loop {
        match tokio::time::timeout(Duration::from_secs(5), c.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => continue,
            Ok(r) => break r,
            Err(_) => panic!("the client was left hanging"),
        }
    };
    println!("reset after {:?}", t0.elapsed());
    assert!(is_reset(&r), "{r:?}");
    assert!(t0.elapsed() < Duration::from_secs(4));
    assert!(wait(|| p.start_metrics.tunnel.ended_count("reset_by_tunnel") == 1).await);
    // The flow may see the loss a moment before the tunnel's manager does.
    assert!(wait(|| p.start_metrics.tunnel.up.load(Relaxed) == 0).await);
    // The path comes back: split-start reconnects (backoff at most 2 s).
    p.path_up.store(true, Relaxed);
    assert!(
        wait(|| p.start_metrics.tunnel.connects.load(Relaxed) == 2).await,
        "reconnected"
    );
}

/// A reset on either side reaches the other side as a reset, not an end of
/// stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resets_cross_the_tunnel_both_ways() {
    let (_dir, p, server, dst) = setup().await;
    for client_resets in [true, false] {
        let mut c = intercepted(&p, dst).await;
        let (mut s, _) = within("the far end's connect", server.accept())
            .await
            .unwrap();
        c.write_all(b"x").await.unwrap();
        let mut b = [0u8; 1];
        within("the first byte", s.read_exact(&mut b))
            .await
            .unwrap();
        let (gone, mut other) = if client_resets { (c, s) } else { (s, c) };
        reset_tcp(&gone);
        drop(gone);
        let r = tokio::time::timeout(Duration::from_secs(5), other.read(&mut b))
            .await
            .expect("the reset arrives");
        assert!(is_reset(&r), "client_resets={client_resets}: {r:?}");
    }
    assert!(wait(|| p.start_metrics.tunnel.ended_count("reset_by_tcp") == 1).await);
    assert!(wait(|| p.start_metrics.tunnel.ended_count("reset_by_tunnel") == 1).await);
}
