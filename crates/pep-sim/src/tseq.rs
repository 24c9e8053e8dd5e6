//! The per-flow time-sequence trace (`tseq.csv`): every segment a sender
//! sends and every segment its sender half receives, as tcptrace draws them.
//!
//! Off by default (a row per packet is large): the engine checks one flag
//! per packet and appends to a `Vec` only when the series is asked for.
//! Sequence and ACK numbers are offsets from the flow's first data byte
//! (the SYN's + 1), so they start at 0 and do not wrap.

use std::fmt::Write as _;

use pep_core::{Instant, Segment, Seq};

use crate::table::{Cell, Column, ColumnType, Table};
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

/// The table `tseq`: `time_s,flow,event,seq,ack,len,wnd,sack`. `seq`
/// and `len` are the segment's (for an ACK, the data it carries, usually
/// none); `ack` is the cumulative ACK of an ACK row (null for sent rows);
/// `sack` is `start-end` blocks separated by spaces. `data_start` gives
/// each flow's first data byte, `names` its name.
pub fn table<'a>(rows: &'a [TseqRow], data_start: Vec<Seq>, names: Vec<&'a str>) -> Table<'a> {
    use ColumnType::{Float, Int, Text, UInt};
    let columns = [
        ("time_s", Float),
        ("flow", Text),
        ("event", Text),
        ("seq", Int),
        ("ack", Int),
        ("len", UInt),
        ("wnd", UInt),
        ("sack", Text),
    ]
    .map(|(n, t)| Column::new(n, t))
    .to_vec();
    Table::new("tseq", columns, rows.len(), move |i, v| {
        let r = &rows[i];
        let base = data_start[r.flow as usize];
        let off = |x: Seq| x.0.wrapping_sub(base.0) as i32 as i64;
        let mut sack = String::new();
        for (k, b) in r.seg.sack.as_slice().iter().enumerate() {
            let sep = if k == 0 { "" } else { " " };
            let _ = write!(sack, "{sep}{}-{}", off(b.0), off(b.1));
        }
        v.extend([
            Cell::Time(r.t),
            Cell::Text(names[r.flow as usize].into()),
            Cell::Text(event_name(r.event).into()),
            Cell::Int(off(r.seg.seq)),
            if r.event == TseqEvent::Ack {
                Cell::Int(off(r.seg.ack))
            } else {
                Cell::Null
            },
            Cell::UInt(r.seg.len.into()),
            Cell::UInt(r.seg.wnd.into()),
            Cell::Text(sack.into()),
        ]);
    })
}
