//! Per-client rate caps (`proxy.client_rate`): all connections of one
//! client address share one token bucket per direction, charged where the
//! relay reads, and share it fairly: [`pep_core::fair_share`] holds back
//! a connection that is more than the bucket's depth ahead of one the
//! bucket is holding back, so N backlogged connections get 1/N each and
//! one that asks for less leaves the rest to the others. A read the cap
//! cannot pay for waits, so the sender's window closes as for a slow
//! receiver: the cap holds back the sender, not the relay's memory.
//!
//! A read is granted at most the bytes the socket holds (`SIOCINQ`), so
//! the bucket is charged for what is really moved: a short read does not
//! waste credit. split-start's tunnel flows take the same caps
//! (`tunnel::start`), read first and paid for before they are forwarded.
//!
//! Both paths ask through [`RateCap::grant`], which counts into the
//! daemon's metrics: a read that got nothing
//! (`pep_client_rate_waits_total`) and one cut short to leave the credit
//! to a connection behind (`pep_client_rate_held_for_fairness_total`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, Weak};

use pep_core::fair_share::{FairShare, FairShareConfig, ShareId};
use pep_core::relay::Dir;
use pep_core::shaper::ShaperConfig;
use pep_core::{Duration, Instant, Rate};

use crate::metrics::Metrics;

/// Bytes granted at a time: 10 ms of the rate, within these bounds (a
/// bulk read is a few bucket steps, and the bucket loop stays short).
const QUANTUM: (u64, u64) = (1448, 16 << 10);
/// The bucket holds this long of the rate (at least 4 quanta): the burst
/// a client may send after idle.
const DEPTH: Duration = Duration::from_millis(50);
/// A held-back connection that has not asked again for this long (its
/// relay stopped reading: its destination is slow) no longer holds the
/// others back. Held-back connections ask again every quantum (10 ms).
const IDLE: Duration = Duration::from_millis(100);
/// The lowest cap `proxy.client_rate` takes, bits per second.
pub const MIN_RATE: u64 = 100_000;

/// The caps of every client, keyed by address. Buckets live as long as a
/// connection of their client does.
#[derive(Default)]
pub struct ClientRates {
    clients: Mutex<HashMap<IpAddr, Weak<Buckets>>>,
    /// Where every cap counts its waits.
    metrics: Arc<Metrics>,
}

/// One client's buckets, Up and Down.
struct Buckets {
    bps: u64,
    dirs: [Mutex<FairShare>; 2],
}

/// A connection's handle on its client's buckets: its share each way.
pub struct RateCap {
    buckets: Arc<Buckets>,
    ids: [ShareId; 2],
    epoch: std::time::Instant,
    metrics: Arc<Metrics>,
}

fn sharing(bps: u64) -> FairShare {
    let of = |d: Duration| (bps as u128 / 8 * d.as_nanos() as u128 / 1_000_000_000) as u64;
    let quantum = of(Duration::from_millis(10)).clamp(QUANTUM.0, QUANTUM.1);
    let depth = of(DEPTH).max(4 * quantum);
    FairShare::new(FairShareConfig {
        bucket: ShaperConfig {
            rate: Rate::bps(bps),
            depth,
            overhead: 0,
            quantum,
        },
        // A connection may run a bucket ahead of one held back: two
        // backlogged connections' bytes differ by at most two buckets
        // (the slack and one grant).
        slack: depth,
        idle: IDLE,
    })
}

fn lock(m: &Mutex<FairShare>) -> std::sync::MutexGuard<'_, FairShare> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl ClientRates {
    /// No client yet; the caps count into `metrics`.
    pub fn new(metrics: Arc<Metrics>) -> ClientRates {
        ClientRates {
            clients: Mutex::default(),
            metrics,
        }
    }

    /// The cap of `client` at `bps` bits per second each way. A reload
    /// that changes the rate gives new connections new buckets; the old
    /// ones keep theirs until they end.
    pub fn cap(&self, client: IpAddr, bps: u64, epoch: std::time::Instant) -> RateCap {
        let mut m = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        let live = m
            .get(&client)
            .and_then(Weak::upgrade)
            .filter(|b| b.bps == bps);
        let buckets = live.unwrap_or_else(|| {
            let b = Arc::new(Buckets {
                bps,
                dirs: [Mutex::new(sharing(bps)), Mutex::new(sharing(bps))],
            });
            if m.len() >= 1024 {
                m.retain(|_, w| w.strong_count() > 0);
            }
            m.insert(client, Arc::downgrade(&b));
            b
        });
        let ids = [0, 1].map(|d| lock(&buckets.dirs[d]).open());
        RateCap {
            buckets,
            ids,
            epoch,
            metrics: self.metrics.clone(),
        }
    }

    /// Clients with a live bucket (for tests).
    pub fn clients(&self) -> usize {
        let m = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        m.values().filter(|w| w.strong_count() > 0).count()
    }
}

impl RateCap {
    /// How many of `want` bytes `dir` may read now, and if fewer, when to
    /// ask again. The bucket is charged for what is granted; nothing
    /// granted counts as a wait, a grant cut short for a connection behind
    /// as held for fairness.
    pub fn grant(&self, dir: Dir, want: u64) -> (u64, Option<std::time::Instant>) {
        let mut s = lock(&self.buckets.dirs[dir as usize]);
        // Read under the lock: the connections sharing the bucket charge
        // it in time order, as the sharing requires.
        let now = Instant::from_nanos(self.epoch.elapsed().as_nanos() as u64);
        let id = self.ids[dir as usize];
        let held = s.held_for_fairness();
        let got = s.release(now, id, want);
        let m = &self.metrics;
        if s.held_for_fairness() > held {
            m.rate_held_for_fairness[dir as usize].fetch_add(1, Relaxed);
        }
        if got == 0 && want > 0 {
            m.rate_waits[dir as usize].fetch_add(1, Relaxed);
        }
        let again = (got < want)
            .then(|| s.poll_timeout(id))
            .flatten()
            .map(|t| self.epoch + std::time::Duration::from_nanos(t.as_nanos()));
        (got, again)
    }

    /// Waits until the cap grants some of `want` (> 0) bytes of `dir`, and
    /// returns how many: for pumps that read first and pay before they
    /// forward.
    pub async fn paid(&self, dir: Dir, want: u64) -> u64 {
        loop {
            match self.grant(dir, want) {
                (0, again) => {
                    // No time to ask again cannot come with nothing
                    // granted; a quantum's wait guards against a busy loop.
                    let t = again.unwrap_or_else(|| std::time::Instant::now() + NO_TIME);
                    tokio::time::sleep_until(tokio::time::Instant::from_std(t)).await;
                }
                (k, _) => return k,
            }
        }
    }
}

const NO_TIME: std::time::Duration = std::time::Duration::from_millis(10);

impl Drop for RateCap {
    fn drop(&mut self) {
        for d in [0, 1] {
            lock(&self.buckets.dirs[d]).close(self.ids[d]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_of_one_client_share_its_bucket_and_others_do_not() {
        let rates = ClientRates::default();
        let epoch = std::time::Instant::now();
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        // 8 Mbit/s: quanta of 10 ms (10 kB), a bucket of 50 ms (50 kB).
        let (a1, a2, b1) = (
            rates.cap(a, 8_000_000, epoch),
            rates.cap(a, 8_000_000, epoch),
            rates.cap(b, 8_000_000, epoch),
        );
        let (first, again) = a1.grant(Dir::Up, 1 << 20);
        assert_eq!(first, 50_000, "the bucket's depth at once");
        assert!(again.is_some());
        // The same client's second connection finds the bucket empty ...
        let (second, _) = a2.grant(Dir::Up, 1 << 20);
        assert!(second < 10_000, "{second}");
        // ... while the other direction and the other client are full.
        assert_eq!(a2.grant(Dir::Down, 1 << 20).0, 50_000);
        assert_eq!(b1.grant(Dir::Up, 1 << 20).0, 50_000);
        assert_eq!(rates.clients(), 2);
        // Each connection holds a share each way until it ends.
        let shares = |c: &RateCap| [0, 1].map(|d| lock(&c.buckets.dirs[d]).flows());
        assert_eq!(shares(&a1), [2, 2]);
        drop(a2);
        assert_eq!(shares(&a1), [1, 1]);
        let a2 = rates.cap(a, 8_000_000, epoch);
        drop((a1, a2));
        assert_eq!(rates.clients(), 1);
        // A new rate after a reload: a new bucket, 100 kB deep in whole
        // quanta of 16 KiB (the cap on 10 ms = 20 kB).
        let a3 = rates.cap(a, 16_000_000, epoch);
        assert_eq!(a3.grant(Dir::Up, 1 << 20).0, 6 * 16384);
    }

    /// A tunnel flow's pump waits in `paid`: counted as a split relay's
    /// held-back read is, in `grant` (both go through it).
    #[test]
    fn waits_of_split_reads_and_tunnel_pumps_are_counted() {
        let m = Arc::new(Metrics::default());
        let rates = ClientRates::new(m.clone());
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let cap = rates.cap(a, 8_000_000, std::time::Instant::now());
        assert_eq!(cap.grant(Dir::Down, 1 << 20).0, 50_000);
        assert_eq!(m.rate_waits[1].load(Relaxed), 0, "a grant is no wait");
        // A split relay's read of the emptied bucket.
        let (got, again) = cap.grant(Dir::Down, 1 << 20);
        assert_eq!((got, again.is_some()), (0, true));
        assert_eq!(m.rate_waits[1].load(Relaxed), 1);
        // A tunnel pump's: it waits for the next quantum and is paid.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let paid = rt.block_on(cap.paid(Dir::Down, 1 << 20));
        assert!((1448..=16384).contains(&paid), "{paid}");
        assert!(m.rate_waits[1].load(Relaxed) >= 2);
        assert_eq!(m.rate_waits[0].load(Relaxed), 0, "the other leg's");
        let t = m.render();
        assert!(
            t.contains("pep_client_rate_waits_total{leg=\"server\"} "),
            "{t}"
        );
    }

    /// A connection a bucket ahead of one the bucket holds back is cut to
    /// a quantum to leave the credit to it: `held_for_fairness` of
    /// `pep_core::fair_share`, exported per leg.
    #[test]
    fn grants_cut_short_for_fairness_are_counted() {
        let m = Arc::new(Metrics::default());
        let rates = ClientRates::new(m.clone());
        // 8 Mbit/s: quanta of 10 kB, a bucket (and the slack) of 50 kB. A
        // connection held back stops counting after 100 ms: a run whose
        // pause overshot that (a busy machine) is tried again.
        for attempt in 0..5u8 {
            let a = IpAddr::from([192, 0, 2, 10 + attempt]);
            let epoch = std::time::Instant::now();
            let (ahead, behind) = (
                rates.cap(a, 8_000_000, epoch),
                rates.cap(a, 8_000_000, epoch),
            );
            assert_eq!(ahead.grant(Dir::Up, 1 << 20).0, 50_000);
            // The bucket is empty: `behind` waits, 50 kB behind.
            let asked = std::time::Instant::now();
            assert_eq!(behind.grant(Dir::Up, 1 << 20).0, 0);
            assert_eq!(m.rate_held_for_fairness[0].load(Relaxed), 0);
            // Two quanta refill; `ahead` may take one, the rest is left.
            std::thread::sleep(std::time::Duration::from_millis(25));
            let got = ahead.grant(Dir::Up, 1 << 20).0;
            if asked.elapsed() >= std::time::Duration::from_millis(90) {
                continue;
            }
            assert_eq!(got, 10_000, "cut to one quantum");
            assert_eq!(m.rate_held_for_fairness[0].load(Relaxed), 1);
            assert_eq!(m.rate_held_for_fairness[1].load(Relaxed), 0);
            // ... which `behind` now takes, held back by nobody.
            assert!(behind.grant(Dir::Up, 1 << 20).0 >= 10_000);
            assert_eq!(m.rate_held_for_fairness[0].load(Relaxed), 1);
            let t = m.render();
            assert!(
                t.contains("pep_client_rate_held_for_fairness_total{leg=\"client\"} 1"),
                "{t}"
            );
            return;
        }
        panic!("every attempt paused past the 100 ms a wait counts");
    }
}
