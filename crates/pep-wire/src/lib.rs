//! # pep-wire: bytes to headers and back
//!
//! The wire layer of pepkit. The simulator's pcap export, the lab and the
//! daemon all turn bytes into headers and headers into bytes here, with one
//! small vocabulary: [`IpRepr`], [`TcpRepr`], [`TcpOptions`], [`WireError`].
//! It knows nothing of flows or decisions (`pep-core` depends on it, not
//! the reverse), and no input makes it panic: malformed bytes give a
//! [`WireError`] saying which layer was wrong and how, which a daemon can
//! count and pass or drop by policy.
//!
//! Header slicing and validation use `etherparse`; the typed API, the TCP
//! option parser, the incremental checksum update and pcap are ours.
//!
//! ## Use
//!
//! * Parse: [`parse_ip_packet`] gives [`Parsed::Tcp`] (IP repr, TCP repr,
//!   payload slice, header lengths) or [`Parsed::NotTcp`] for packets to
//!   forward untouched. [`verify_checksums`] is separate, so bad checksums
//!   can be passed on as a router would.
//! * Emit: [`emit_packet`] writes a complete IPv4 or IPv6 + TCP packet with
//!   lengths and checksums; [`emit_headers`] writes the headers of a packet
//!   whose payload is zeros (for captures of simulated segments, which have
//!   lengths but no bytes). [`ethernet_frame`] adds Ethernet II framing.
//! * Rewrite in place: [`rewrite_tcp_ack`], [`rewrite_tcp_window`],
//!   [`rewrite_tcp_seq`], [`rewrite_tcp_flags`], [`rewrite_tcp_timestamps`],
//!   [`rewrite_tcp_sack`] change one field and
//!   update the TCP checksum incrementally (RFC 1624, eqn. 3).
//! * Capture: [`PcapWriter`] writes classic pcap with nanosecond
//!   timestamps, Ethernet or raw IP; [`PcapReader`] reads it back.
//!
//! ## Supported
//!
//! * IPv4, options skipped by IHL; the total length bounds the packet, so
//!   Ethernet padding is ignored.
//! * IPv6 fixed header; hop-by-hop (first only), routing (segments left 0),
//!   destination options and atomic fragment headers are walked to TCP.
//! * TCP with MSS, window scale, SACK-permitted, 1 to 4 SACK blocks,
//!   timestamps, NOP and EOL; options of unknown kind skipped by length and
//!   counted.
//! * Emitted option layout matches Linux, so captures look familiar.
//!
//! ## Not implemented
//!
//! * Emitting IPv4 options or IPv6 extension headers (parse skips them; a
//!   rewrite in place keeps them).
//! * Fragments and reassembly: reported as [`NotTcpReason::Fragment`].
//! * IPv6 AH, ESP, Mobility, HIP, Shim6, and hop-by-hop options anywhere
//!   but first: reported as [`NotTcpReason::Extension`]. Routing headers
//!   with segments left: [`NotTcpReason::SourceRoute`] (the checksum would
//!   need the final destination). Jumbograms (RFC 2675).
//! * Keeping unknown TCP options in [`TcpOptions`], the AccECN AE bit, and
//!   TCP-AO/MD5 signatures (a rewrite in place would invalidate them).
//! * UDP, ICMP and other protocols: parsed as far as the IP header.
//! * VLAN tags, pcapng, and writing pcap in the host's byte order.

mod checksum;
mod error;
mod ether;
mod ip;
mod options;
mod packet;
mod pcap;
mod rewrite;
mod tcp;

pub use checksum::{fill_checksums, update16, update32, verify_checksums};
pub use error::{Layer, WireError};
pub use ether::{
    ethernet_frame, ethertype_of, EthernetRepr, MacAddr, ETHERTYPE_IPV4, ETHERTYPE_IPV6,
};
pub use ip::{IpRepr, Ipv4Repr, Ipv6Repr, NotTcpReason, PROTO_TCP};
pub use options::{
    kind as option_kind, SackOption, TcpOptions, TimestampOption, MAX_OPTIONS_LEN, MAX_SACK_BLOCKS,
};
pub use packet::{
    emit_headers, emit_packet, emit_packet_vec, packet_len, parse_ip_packet, NotTcp, Parsed,
    TcpPacket,
};
pub use pcap::{
    LinkType, PcapReader, PcapRecord, PcapWriter, DEFAULT_SNAPLEN, MAGIC_MICROS, MAGIC_NANOS,
};
pub use rewrite::{
    rewrite_tcp_ack, rewrite_tcp_flags, rewrite_tcp_sack, rewrite_tcp_seq, rewrite_tcp_timestamps,
    rewrite_tcp_window,
};
pub use tcp::{flags, TcpRepr};
