//! The per-flow time-sequence trace (`tseq.csv`): every segment a sender
//! sends and every segment its sender half receives, as tcptrace draws them.
//!
//! Off by default (a row per packet is large): the engine checks one flag
//! per packet and appends to a `Vec` only when the series is asked for.
//! Sequence and ACK numbers are offsets from the flow's first data byte
//! (the SYN's + 1), so they start at 0 and do not wrap.

use std::fmt::Write as _;

use pep_core::{Instant, Segment, Seq};

use crate::output::secs;
use crate::tcp::TxKind;

/// What a row records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TseqEvent {
    /// A segment the sender sent, and why.
    Sent(TxKind),
    /// A segment (pure ACK, or data with a piggybacked ACK) the sender
    /// received.
    Ack,
}

/// One row, kept as the segment itself until written.
#[derive(Clone, Copy, Debug)]
pub struct TseqRow {
    pub t: Instant,
    pub flow: u32,
    pub event: TseqEvent,
    pub seg: Segment,
}

fn event_name(e: TseqEvent) -> &'static str {
    match e {
        TseqEvent::Ack => "ack",
        TseqEvent::Sent(TxKind::New) => "new",
        TseqEvent::Sent(TxKind::Fin) => "fin",
        TseqEvent::Sent(TxKind::Syn) => "syn",
        TseqEvent::Sent(TxKind::WindowProbe) => "probe",
        TseqEvent::Sent(TxKind::Ack) => "pure-ack",
        TseqEvent::Sent(_) => "retransmit",
    }
}

/// The CSV body: `time_s,flow,event,seq,ack,len,wnd,sack`. `seq` and `len`
/// are the segment's (for an ACK, the data it carries, usually none); `ack`
/// is the cumulative ACK of an ACK row (empty for sent rows); `sack` is
/// `start-end` blocks separated by spaces. `data_start` gives each flow's
/// first data byte, `names` its name.
pub fn csv(rows: &[TseqRow], data_start: &[Seq], names: &[String]) -> String {
    let mut s = String::from("time_s,flow,event,seq,ack,len,wnd,sack\n");
    for r in rows {
        let base = data_start[r.flow as usize];
        let off = |x: Seq| x.0.wrapping_sub(base.0) as i32 as i64;
        let _ = write!(
            s,
            "{},{},{},{},",
            secs(r.t),
            names[r.flow as usize],
            event_name(r.event),
            off(r.seg.seq)
        );
        if r.event == TseqEvent::Ack {
            let _ = write!(s, "{}", off(r.seg.ack));
        }
        let _ = write!(s, ",{},{},", r.seg.len, r.seg.wnd);
        for (i, b) in r.seg.sack.as_slice().iter().enumerate() {
            let sep = if i == 0 { "" } else { " " };
            let _ = write!(s, "{sep}{}-{}", off(b.0), off(b.1));
        }
        s.push('\n');
    }
    s
}
