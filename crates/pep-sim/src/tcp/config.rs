//! Configuration of the simulated TCP endpoints.

use pep_core::cc::{CcConfig, Growth, Recovery};
use pep_core::rtt::{RttConfig, RttMode};
use pep_core::{Duration, Seq};

use super::pacing::PacingConfig;

/// Sender parameters. Defaults follow the RFCs; ns-2 reproductions override
/// them (ns-2: `packetSize_` 1000, `windowInit_` 2, `minrto_` 200 ms,
/// initial RTO 3 s, `tcpTick_` 10 ms, `syn_` true, `window_` 20 packets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpConfig {
    /// Payload bytes per full segment (SMSS). Default 1460 (Ethernet MTU).
    pub mss: u32,
    /// Bytes of IP + TCP header counted on the wire per segment. Default 40.
    pub hdr_len: u16,
    /// Initial congestion window in segments. Default 10 (RFC 6928, whose
    /// byte cap `min(10*MSS, max(2*MSS, 14600))` equals 10 segments at the
    /// default MSS; a larger MSS here is not capped, as in ns-2).
    pub initial_window: u32,
    /// Initial slow start threshold in bytes. Default `u64::MAX`
    /// ("arbitrarily high", RFC 5681).
    pub initial_ssthresh: u64,
    /// RTO before the first RTT sample. Default 1 s (RFC 6298; ns-2: 3 s).
    pub initial_rto: Duration,
    /// Lower bound on the RTO. Default 1 s (RFC 6298; ns-2 and Linux:
    /// 200 ms).
    pub min_rto: Duration,
    /// Upper bound on the RTO, backoff included. Default 60 s.
    pub max_rto: Duration,
    /// RFC 6298's clock granularity G, the floor of the variance term in
    /// `RTO = SRTT + max(G, 4*RTTVAR)`. Default 1 ms.
    pub clock_granularity: Duration,
    /// If set, RTT samples are rounded to this tick and the RTO up to a
    /// multiple of it (ns-2's `tcpTick_`, 10 ms). Default none (exact).
    pub rto_tick: Option<Duration>,
    /// RFC 6298 or ns-2 arithmetic for the retransmission timer.
    pub rtt_mode: RttMode,
    /// Duplicate ACKs that trigger fast retransmit. Default 3 (RFC 5681).
    pub dupack_threshold: u32,
    /// Loss recovery. Default NewReno (RFC 6582).
    pub recovery: Recovery,
    /// Window growth. Default Reno (RFC 5681) without byte counting.
    pub growth: Growth,
    /// Proportional Rate Reduction (RFC 6937) in SACK recovery. Default
    /// off (RFC 6675's immediate reduction).
    pub prr: bool,
    /// HyStart++ (RFC 9406) in the initial slow start; needs `timestamps`
    /// for its per-ACK RTT samples. Default off.
    pub hystart: bool,
    /// Send the timestamps option (RFC 7323) with a microsecond clock; the
    /// sink echoes it and every ACK of new data then gives an RTT sample
    /// (for HyStart++; the RTO keeps timing one segment per RTT). Default
    /// off.
    pub timestamps: bool,
    /// Limited transmit (RFC 3042; ns-2's `singledup_`): each of the first
    /// DupThresh - 1 duplicate ACKs lets one new segment beyond cwnd out.
    /// Default off.
    pub limited_transmit: bool,
    /// RACK-TLP (RFC 8985; `pep_core::cc::Rack`), with SACK recovery only:
    /// time-based loss marking beside DupThresh, and a tail loss probe
    /// before the RTO. Default off.
    pub rack: bool,
    /// The retransmission timer's RTT estimate takes a sample from every
    /// ACK that delivers a segment sent after any delivered before (RACK's
    /// RTT; needs `rack`), as QUIC does (RFC 9002 5.1), instead of timing
    /// one segment per round trip. Default off.
    pub rtt_every_ack: bool,
    /// cwnd and ssthresh are `pep_core::cc::QuicCongestion`'s (RFC 9002's
    /// recovery period: one cut per congestion event, keyed by the lost
    /// segment's send time; growth again once a segment sent after the
    /// cut is delivered), told of every delivered and lost segment with
    /// RACK's send times, as the daemon's QUIC tunnel runs its controller;
    /// SACK recovery still chooses what to resend. Needs `rack`; not with
    /// BBR. Default off.
    pub quic_window: bool,
    /// Initial send sequence number. Default 0. The SYN occupies `isn` and
    /// data starts at `isn + 1` whether or not the handshake is simulated.
    pub isn: Seq,
    /// Simulate the SYN / SYN-ACK exchange before data. The SYN is subject
    /// to the retransmission timer with the initial RTO. Default false.
    pub handshake: bool,
    /// Most data segments sent back-to-back in response to one ACK (or one
    /// timeout), as ns-2's `maxburst_`; also applies to the first flight.
    /// Retransmissions demanded by the ACK itself are not counted. `None`:
    /// unlimited (default).
    pub max_burst: Option<u32>,
    /// The receiver's window assumed until the first segment from it
    /// arrives (the SYN-ACK, or the first ACK when there is no handshake).
    /// Set it to the sink's `rwnd`. Default 65535.
    pub initial_rwnd: u32,
    /// Pace segments at a rate derived from cwnd/srtt, as Linux with the
    /// `fq` qdisc ([`super::pacing`]). `None`: unpaced (default).
    pub pacing: Option<PacingConfig>,
    /// The application's send buffer (`SO_SNDBUF`): bytes unacknowledged or
    /// written but unsent at once. A bulk source keeps it full, so it caps
    /// in-flight data like a third window. Default `u64::MAX` (unlimited).
    pub sndbuf: u64,
    /// Congestion-window validation (RFC 7661): while the data acknowledged
    /// per RTT (pipeACK, the largest of the last three RTTs) is below half
    /// of cwnd, cwnd does not grow. Keeps an application-limited sender's
    /// window, and a pacing rate derived from it, near what it uses.
    /// Default off.
    pub cwv: bool,
    /// Bidirectional flows: the receiver of the peer's data at the
    /// sender's host (its ACKs ride on this sender's data). `None`: data
    /// flows one way.
    pub reverse: Option<SinkConfig>,
}

impl Default for TcpConfig {
    fn default() -> Self {
        let rtt = RttConfig::default();
        TcpConfig {
            mss: 1460,
            hdr_len: 40,
            initial_window: 10,
            initial_ssthresh: u64::MAX,
            initial_rto: rtt.initial_rto,
            min_rto: rtt.min_rto,
            max_rto: rtt.max_rto,
            clock_granularity: rtt.granularity,
            rto_tick: rtt.tick,
            rtt_mode: rtt.mode,
            dupack_threshold: 3,
            recovery: Recovery::default(),
            growth: Growth::default(),
            prr: false,
            hystart: false,
            timestamps: false,
            limited_transmit: false,
            rack: false,
            rtt_every_ack: false,
            quic_window: false,
            isn: Seq(0),
            handshake: false,
            max_burst: None,
            initial_rwnd: 65_535,
            pacing: None,
            sndbuf: u64::MAX,
            cwv: false,
            reverse: None,
        }
    }
}

impl TcpConfig {
    /// The retransmission timer parameters.
    pub fn rtt_config(&self) -> RttConfig {
        RttConfig {
            initial_rto: self.initial_rto,
            min_rto: self.min_rto,
            max_rto: self.max_rto,
            granularity: self.clock_granularity,
            tick: self.rto_tick,
            mode: self.rtt_mode,
        }
    }

    /// The congestion control configuration these parameters imply.
    pub fn cc_config(&self) -> CcConfig {
        CcConfig {
            smss: self.mss,
            initial_window: self.initial_window as u64 * self.mss as u64,
            initial_ssthresh: self.initial_ssthresh,
            dupack_threshold: self.dupack_threshold,
            growth: self.growth,
            recovery: self.recovery,
            prr: self.prr,
            hystart: self.hystart,
            // The agent finds lost retransmissions by FACK's rule; RACK
            // has its own way.
            lost_retransmit: self.linux_agent() && !self.rack,
        }
    }

    /// The sender is ns-2's `Agent/TCP/Linux`: what `cubic-ns2` models,
    /// with the agent's habits (docs/tcp.md).
    pub fn linux_agent(&self) -> bool {
        self.growth == Growth::CubicNs2
    }
}

/// What the sending application offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppSource {
    /// An infinite backlog (FTP in ns-2): the sender is never idle.
    Bulk,
    /// Send this many bytes, then a FIN. The transfer completes when all the
    /// data is acknowledged (the FIN's own ACK is not waited for).
    Finite(u64),
    /// An application that writes over time ([`super::TcpSender::write`]):
    /// the bytes written so far. The connection stays open (no FIN); the
    /// sender idles when it has sent everything written.
    Open(u64),
}

/// When the receiver acknowledges in-order data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckPolicy {
    /// One ACK per segment (ns-2's `Agent/TCPSink`).
    Every,
    /// RFC 1122 / RFC 5681 section 4.2 delayed ACKs: ACK every `count`-th
    /// in-order segment, or when `timeout` has passed since the first
    /// unacknowledged one arrived. Out-of-order segments, segments that fill
    /// (part of) a hole, duplicates and FINs are acknowledged at once.
    Delayed {
        /// Segments per ACK (>= 1). RFC 5681: "an ACK SHOULD be generated
        /// for at least every second full-sized segment": 2.
        count: u32,
        /// Delayed-ACK timer. ns-2's `Agent/TCPSink/DelAck` uses 100 ms
        /// (`interval_`); RFC 5681 requires less than 500 ms.
        timeout: Duration,
    },
    /// Delayed ACKs whose count adapts
    /// ([`pep_core::ack_interval::AdaptiveAckInterval`]): it starts at `min`,
    /// widens while delivery is in order, up to `max` and half the segments
    /// the window holds, falls back to `min` on loss or reordering and
    /// halves when the timer has to send the ACK.
    Adaptive {
        min: u32,
        max: u32,
        /// Delayed-ACK timer, as for [`AckPolicy::Delayed`].
        timeout: Duration,
    },
}

impl AckPolicy {
    /// Delayed ACKs with ns-2's DelAck defaults: every 2nd segment, 100 ms.
    pub const fn delayed() -> Self {
        AckPolicy::Delayed {
            count: 2,
            timeout: Duration::from_millis(100),
        }
    }
}

/// Receiver parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SinkConfig {
    /// Advertised window in bytes. The sink hands in-order data to the
    /// application at once, so the window is constant; data beyond
    /// `rcv_nxt + rwnd` is discarded. Default 65535, the largest window
    /// without RFC 7323 scaling.
    pub rwnd: u32,
    /// Bytes of IP + TCP header per ACK on the wire. Default 40.
    pub hdr_len: u16,
    /// Acknowledgment policy. Default [`AckPolicy::Every`], as ns-2's plain
    /// sink; [`AckPolicy::delayed`] for RFC 1122 behaviour.
    pub ack: AckPolicy,
    /// Generate SACK blocks (RFC 2018), up to 3 per ACK. Default false.
    pub sack: bool,
    /// With `sack`: report duplicate segments in a D-SACK block (RFC 2883),
    /// first in the next ACK. Default false (ns-2's sinks have none; the
    /// `linux` profile's RACK turns it on, as Linux's `tcp_dsack = 1`).
    pub dsack: bool,
    /// Granularity of the delayed-ACK timer. `None` (default): the timer
    /// fires exactly `timeout` after the first unacknowledged segment, as
    /// ns-2's DelAck sink. `Some(tick)`: it fires at the first multiple of
    /// `tick` (counted from time zero) at or after that instant, as BSD's
    /// 200 ms fast timer does, so with `timeout` near zero a deferred ACK
    /// leaves 0 to 200 ms later.
    pub delack_tick: Option<Duration>,
    /// The sink's own initial sequence number (its SYN-ACK's; its ACKs
    /// carry `isn + 1`). Default 0.
    pub isn: Seq,
    /// The sender's ISN, for runs without a handshake (a SYN overrides it);
    /// data is expected from `peer_isn + 1`. Default 0, matching
    /// [`TcpConfig::isn`].
    pub peer_isn: Seq,
    /// In-order data waits in a receive buffer of `rwnd` bytes until the
    /// application takes it ([`super::TcpSink::read`]); the advertised
    /// window is the buffer's free space. Default false: the application
    /// reads everything at once and the window stays `rwnd`.
    pub app_reads: bool,
    /// The sender's segment size, for the window-update rule of a buffered
    /// receiver (an ACK once reads open the window by two segments). Default
    /// 1460.
    pub mss: u32,
}

impl Default for SinkConfig {
    fn default() -> Self {
        SinkConfig {
            rwnd: 65_535,
            hdr_len: 40,
            ack: AckPolicy::Every,
            sack: false,
            dsack: false,
            delack_tick: None,
            isn: Seq(0),
            peer_isn: Seq(0),
            app_reads: false,
            mss: 1460,
        }
    }
}
