//! One tunnel BBR in both worlds: the simulator's split-pair tunnel (TCP,
//! [`Growth::TunnelBbr`] under [`Congestion`]) and the daemon's (quinn,
//! [`QuicBbr`]) keep the same window for the same path, and the pacing
//! rate is quinn's.

use alloc::collections::VecDeque;

use super::{CcConfig, Congestion, Growth, QuicBbr, RateAck, Recovery};
use crate::seq::Seq;
use crate::time::{Duration, Instant};

const MSS: u64 = 1200;

/// A backlogged sender on a loss-free bottleneck of `rate` bytes per
/// second and `rtt` propagation, driving both controllers with each ACK;
/// returns the windows they kept after every ACK.
fn windows(rate: u64, rtt: Duration, secs: u64) -> alloc::vec::Vec<(u64, u64)> {
    let mut cfg = CcConfig::new(MSS as u32);
    cfg.growth = Growth::TunnelBbr;
    cfg.recovery = Recovery::Sack;
    cfg.initial_window = 12_000;
    let isn = Seq(1);
    let mut tcp = Congestion::new(&cfg, isn);
    tcp.seed_model(5);
    let mut quic = QuicBbr::new(MSS as u16, 12_000, 5);
    let tx = Duration::from_nanos(MSS * 1_000_000_000 / rate);
    // (ACK arrival, send time, end sequence) in arrival order.
    let mut acks: VecDeque<(Instant, Instant, Seq)> = VecDeque::new();
    let (mut nxt, mut una) = (isn, isn);
    let mut link_free = Instant::ZERO;
    let mut now = Instant::ZERO;
    let end = Instant::ZERO + Duration::from_secs(secs);
    let mut out = alloc::vec::Vec::new();
    while now < end {
        let window = quic.window();
        while nxt.bytes_since(una) as u64 + MSS <= window {
            let seq = nxt;
            nxt += MSS as u32;
            tcp.rate_on_sent(now, seq, nxt, false, false);
            quic.on_sent(now, MSS);
            link_free = link_free.max(now) + tx;
            acks.push_back((link_free + rtt, now, nxt));
        }
        let Some((t, sent, ack)) = acks.pop_front() else {
            break;
        };
        now = t;
        let prior = nxt.bytes_since(una) as u64;
        una = ack;
        let inflight = nxt.bytes_since(una) as u64;
        let sample = now - sent;
        tcp.on_rtt_sample(sample, sample);
        tcp.on_new_ack(now, una, MSS as u32);
        tcp.rate_on_ack(RateAck {
            now,
            una,
            blocks: &[],
            prior_in_flight: prior,
            inflight,
            next_send: now,
        });
        quic.on_ack(now, sent, MSS, sample);
        quic.on_end_acks(now, inflight, false);
        out.push((tcp.cwnd(), quic.window()));
    }
    out
}

#[test]
fn the_simulators_tunnel_window_is_quic_bbrs() {
    // 20 Mbit/s, 600 ms: STARTUP, DRAIN and 20 s of PROBE_BW's cycle.
    let w = windows(20_000_000 / 8, Duration::from_millis(600), 25);
    assert!(w.len() > 20_000, "{} ACKs", w.len());
    for (i, (tcp, quic)) in w.iter().enumerate() {
        assert_eq!(tcp, quic, "ACK {i}: TCP window {tcp}, QUIC window {quic}");
    }
    // The rule ran (not BBR's cwnd, 2 BDP): the windows end within
    // PROBE_BW's 0.75..1.25 BDP plus headroom (the min RTT holds one
    // datagram's transmission more, 0.08 %).
    let bdp = 20_000_000 / 8 * 6 / 10;
    let last = w.last().unwrap().0;
    assert!(
        last >= bdp * 3 / 4 && last <= bdp * 5 / 4 * 1001 / 1000 + 4 * MSS,
        "window {last}, BDP {bdp}"
    );
}

#[test]
fn the_tunnel_paces_as_quinn_does() {
    let mut cfg = CcConfig::new(MSS as u32);
    cfg.growth = Growth::TunnelBbr;
    let mut cc = Congestion::new(&cfg, Seq(1));
    assert_eq!(cc.growth(), Growth::TunnelBbr);
    // Before an RTT sample: BBR's own (initial) rate.
    let own = cc.pacing_rate().unwrap();
    assert!(own > 0);
    // 5/4 x 12,000 B / 100 ms = 150,000 B/s.
    cc.on_rtt_sample(Duration::from_millis(100), Duration::from_millis(100));
    assert_eq!(cc.cwnd(), 12_000);
    assert_eq!(cc.pacing_rate(), Some(150_000));
}
