//! The SACK scoreboard and the RFC 6675 routines that read it: Update(),
//! IsLost(), SetPipe() and NextSeg().
//!
//! The scoreboard is a bounded, sorted list of SACKed byte ranges above
//! SND.UNA (HighACK), in storage that only grows (no per-packet
//! allocation once a connection has seen its widest loss); lookups are
//! binary searches, the other routines O(ranges). Because
//! IsLost() depends only on what was SACKed *above* a sequence number, it
//! is constant over each hole and monotone (if a hole is lost, every hole
//! below it is too), so the per-octet loops of RFC 6675 become per-hole
//! sums.
//!
//! ## Conventions
//! RFC 6675 names inclusive octets (HighACK is the highest octet
//! cumulatively acknowledged, HighData the highest sent). Here every bound
//! is an exclusive end, like the rest of `cc`: `una` is SND.UNA (HighACK +
//! 1), `max` is SND.MAX (HighData + 1), and [`Scoreboard::high_rxt`] is one
//! past the highest octet retransmitted in this recovery.

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::cell::Cell;

use crate::seq::Seq;

/// Most SACKed ranges the scoreboard keeps; its storage grows to what a
/// connection needs. A slow start that overshoots a long fat pipe's queue
/// leaves a hole every other segment: thousands (ns-2 and Linux bound
/// them only by the window). When full, the highest ranges are forgotten
/// (conservative: forgotten data is only retransmitted sooner).
pub const SCOREBOARD_RANGES: usize = 16_384;

/// What NextSeg() chose to send (RFC 6675 section 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextSeg {
    /// Rules (1) and (3): retransmit `[seq, end)` (at most one SMSS, never
    /// past the next SACKed range).
    Retransmit { seq: Seq, end: Seq },
    /// Rule (2): one segment of previously unsent data at SND.MAX.
    NewData,
    /// Rule (4): the rescue retransmission, `[seq, end)`, which includes
    /// the highest outstanding unSACKed octet. It does not move HighRxt.
    Rescue { seq: Seq, end: Seq },
}

/// SACKed ranges above SND.UNA plus RFC 6675's per-recovery variables.
#[derive(Clone, Debug)]
pub struct Scoreboard {
    /// `[start, end)` ranges: sorted, disjoint, not adjacent, all within
    /// `(una, max]`.
    ranges: Vec<(Seq, Seq)>,
    /// HighRxt as an exclusive end: one past the highest octet
    /// retransmitted in the current recovery (SND.UNA on entry).
    pub(super) high_rxt: Seq,
    /// RescueRxt as an exclusive end; `None` is "undefined".
    pub(super) rescue_rxt: Option<Seq>,
    /// Bytes of rescue retransmissions since the last SetPipe(): RFC 6675
    /// (C.4) adds them to pipe although HighRxt does not cover them.
    pub(super) rescue_in_pipe: u64,
    /// RACK (RFC 8985): unSACKed octets below this are lost whatever
    /// IsLost() says; `None` without RACK.
    pub(super) rack_lost: Option<Seq>,
    /// FACK's detection of lost retransmissions is on
    /// ([`super::CcConfig::lost_retransmit`]).
    pub(super) lost_retransmit: bool,
    /// With it: this recovery's retransmissions not yet judged, oldest
    /// first, each with SND.MAX when it was sent.
    rtx_log: VecDeque<Retransmitted>,
    /// Retransmissions judged lost (unSACKed, above SND.UNA), to send again
    /// before anything else; SetPipe() no longer counts them.
    relost: VecDeque<(Seq, Seq)>,
    /// Their bytes.
    relost_bytes: u64,
    /// SND.MAX as the transport last reported it.
    snd_max: Seq,
    /// SetPipe()'s last answer and its inputs. A sender in SACK recovery
    /// asks for pipe on every poll; between two ACKs only its own sends
    /// change it, by amounts known without computing it again
    /// ([`Scoreboard::memo_retransmit`], [`Scoreboard::memo_new_data`]).
    /// `update` and `clear` drop it; the other inputs are in the key.
    pipe_memo: Cell<Option<PipeMemo>>,
}

/// A SetPipe() result and everything it depends on besides the ranges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PipeMemo {
    una: Seq,
    max: Seq,
    high_rxt: Seq,
    rescue_in_pipe: u64,
    rack_lost: Option<Seq>,
    relost_bytes: u64,
    dupthresh: u32,
    smss: u32,
    pipe: u64,
}

/// A retransmission `[seq, end)` sent when SND.MAX was `max`: once an
/// octet at or above `max` is SACKed, data sent after it has arrived and
/// it has not (ns-2's `ScoreBoard1`: `GetSndNxt() <= fack_`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Retransmitted {
    seq: Seq,
    end: Seq,
    max: Seq,
}

impl Default for Scoreboard {
    fn default() -> Self {
        Scoreboard::new()
    }
}

/// A hole (unSACKed range) and what IsLost() says of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Hole {
    start: Seq,
    end: Seq,
    lost: bool,
    /// One past the hole's lost octets: `end` if IsLost(), else where
    /// RACK's lost prefix ends inside it (`start` if none).
    lost_end: Seq,
    /// True for the hole above the highest SACKed range (up to SND.MAX):
    /// no SACKed octet lies above it.
    top: bool,
}

impl Scoreboard {
    pub const fn new() -> Self {
        Scoreboard {
            ranges: Vec::new(),
            high_rxt: Seq(0),
            rescue_rxt: None,
            rescue_in_pipe: 0,
            rack_lost: None,
            lost_retransmit: false,
            rtx_log: VecDeque::new(),
            relost: VecDeque::new(),
            relost_bytes: 0,
            snd_max: Seq(0),
            pipe_memo: Cell::new(None),
        }
    }

    /// The SACKed ranges, lowest first.
    pub fn ranges(&self) -> &[(Seq, Seq)] {
        &self.ranges
    }

    /// SACKed bytes above SND.UNA.
    pub fn sacked_bytes(&self) -> u64 {
        self.sacked_bytes_from(0)
    }

    /// Bytes SACKed in ranges `first..`.
    fn sacked_bytes_from(&self, first: usize) -> u64 {
        self.ranges()[first..]
            .iter()
            .map(|r| r.1.bytes_since(r.0) as u64)
            .sum()
    }

    /// Forgets every SACKed range.
    pub fn clear(&mut self) {
        self.ranges.clear();
        self.pipe_memo.set(None);
    }

    /// RFC 6675 Update(): drops what the cumulative ACK `una` covers and
    /// records `blocks` (clipped to `[una, max)`). Returns true if some
    /// octet was SACKed for the first time, which makes the ACK a
    /// "duplicate acknowledgment" in RFC 6675's sense.
    ///
    /// Inline: most ACKs carry no block to an empty scoreboard, which
    /// changes nothing but the memo; the rest is [`Self::update_ranges`].
    #[inline]
    pub fn update(&mut self, una: Seq, max: Seq, blocks: &[(Seq, Seq)]) -> bool {
        self.snd_max = max;
        if self.ranges.is_empty() && blocks.is_empty() && self.relost.is_empty() {
            self.pipe_memo.set(None);
            return false;
        }
        self.update_ranges(una, max, blocks)
    }

    #[inline(never)]
    fn update_ranges(&mut self, una: Seq, max: Seq, blocks: &[(Seq, Seq)]) -> bool {
        self.pipe_memo.set(None);
        self.prune(una);
        let mut fresh = false;
        for &(l, r) in blocks {
            let (l, r) = (l.max(una), r.min(max));
            if r.gt(l) {
                fresh |= self.insert(l, r);
            }
        }
        self.prune_relost(una);
        if self.lost_retransmit {
            self.judge_retransmissions(una);
        }
        fresh
    }

    /// Drops from `relost` what is no longer outstanding (below SND.UNA
    /// `una`, or SACKed).
    fn prune_relost(&mut self, una: Seq) {
        if self.relost.is_empty() {
            return;
        }
        let mut relost = core::mem::take(&mut self.relost);
        let mut gone = 0u64;
        relost.retain(|&(seq, end)| {
            let keep = self.unsacked_at(una, seq);
            if !keep {
                gone += end.bytes_since(seq) as u64;
            }
            keep
        });
        self.relost = relost;
        self.relost_bytes -= gone;
    }

    /// `seq` is outstanding and not SACKed, SND.UNA being `una`.
    fn unsacked_at(&self, una: Seq, seq: Seq) -> bool {
        seq.ge(una) && self.next_unsacked(seq).0 == seq
    }

    /// RACK (RFC 8985) found the retransmission of `[seq, end)`, below
    /// HighRxt, lost: it joins `relost`, to be sent again first and no
    /// longer counted in pipe (once, however often it is reported).
    pub(super) fn relose(&mut self, seq: Seq, end: Seq) {
        if self.relost.iter().any(|r| r.0 == seq) || self.next_unsacked(seq).0 != seq {
            return;
        }
        let at = self.relost.partition_point(|r| r.0.lt(seq));
        self.relost.insert(at, (seq, end));
        self.relost_bytes += end.bytes_since(seq) as u64;
        self.pipe_memo.set(None);
    }

    /// FACK's rule for lost retransmissions, after an update with SND.UNA
    /// `una`: moves each logged retransmission that data sent after it has
    /// overtaken to `relost`.
    fn judge_retransmissions(&mut self, una: Seq) {
        let unsacked = |b: &Self, seq: Seq| b.unsacked_at(una, seq);
        let fack = match self.ranges().last() {
            Some(r) => r.1,
            None => una,
        };
        while let Some(&r) = self.rtx_log.front() {
            if r.end.gt(una) && !fack.gt(r.max) {
                break;
            }
            self.rtx_log.pop_front();
            if r.end.gt(una) && unsacked(self, r.seq) {
                self.relost.push_back((r.seq, r.end));
                self.relost_bytes += r.end.bytes_since(r.seq) as u64;
            }
        }
    }

    /// A retransmission of `[seq, end)` was sent: logged for FACK's rule,
    /// and taken off `relost` if it was the next one there.
    pub(super) fn log_retransmission(&mut self, seq: Seq, end: Seq) {
        if self.relost.front().is_some_and(|r| r.0 == seq) {
            let (s, e) = self.relost.pop_front().expect("front checked");
            self.relost_bytes -= e.bytes_since(s) as u64;
            self.pipe_memo.set(None);
        }
        if !self.lost_retransmit {
            return;
        }
        self.rtx_log.push_back(Retransmitted {
            seq,
            end,
            max: self.snd_max,
        });
    }

    /// New data up to `end` was sent: SND.MAX for the next log entry.
    #[inline]
    pub(super) fn on_sent_to(&mut self, end: Seq) {
        if end.gt(self.snd_max) {
            self.snd_max = end;
        }
    }

    /// A new recovery, or a timeout: the log and the lost ones go.
    pub(super) fn forget_retransmissions(&mut self) {
        if !self.rtx_log.is_empty() || !self.relost.is_empty() {
            self.rtx_log.clear();
            self.relost.clear();
            self.relost_bytes = 0;
            self.pipe_memo.set(None);
        }
    }

    /// Removes ranges (and parts of ranges) below `una`.
    fn prune(&mut self, una: Seq) {
        let gone = self.ranges.partition_point(|r| r.1.le(una));
        self.ranges.drain(..gone);
        if let Some(first) = self.ranges.first_mut() {
            if first.0.lt(una) {
                first.0 = una;
            }
        }
    }

    /// Merges `[l, r)` in; true if it covered an octet not SACKed before.
    fn insert(&mut self, l: Seq, r: Seq) -> bool {
        // Ranges i..j overlap or touch [l, r] (sorted: binary searches).
        let n = self.ranges.len();
        let i = self.ranges.partition_point(|x| x.1.lt(l));
        // Most blocks of a duplicate ACK repeat a known range or extend
        // one range without reaching the next: no shifting.
        if i < n {
            let (a, b) = self.ranges[i];
            if a.le(r) && (i + 1 == n || self.ranges[i + 1].0.gt(r)) {
                let covered = r.min(b).bytes_since(l.max(a));
                self.ranges[i] = (l.min(a), r.max(b));
                return covered < r.bytes_since(l);
            }
        }
        let j = self.ranges.partition_point(|x| x.0.le(r));
        let covered: u32 = self.ranges[i..j]
            .iter()
            .map(|x| r.min(x.1).bytes_since(l.max(x.0)))
            .sum();
        let fresh = covered < r.bytes_since(l);
        if i == j {
            if n == SCOREBOARD_RANGES {
                if i == n {
                    return false; // above everything kept: forget it
                }
                self.ranges.pop(); // forget the highest range
            }
            self.ranges.insert(i, (l, r));
        } else {
            let merged = (l.min(self.ranges[i].0), r.max(self.ranges[j - 1].1));
            self.ranges[i] = merged;
            self.ranges.drain(i + 1..j);
        }
        fresh
    }

    /// The first octet at or after `seq` that is not SACKed, and the start
    /// of the next SACKed range above it (where a segment sent from there
    /// must stop), if any.
    #[inline]
    pub fn next_unsacked(&self, seq: Seq) -> (Seq, Option<Seq>) {
        if self.ranges.is_empty() {
            return (seq, None);
        }
        self.next_unsacked_walk(seq)
    }

    #[inline(never)]
    fn next_unsacked_walk(&self, seq: Seq) -> (Seq, Option<Seq>) {
        // The first range ending above `seq`; ranges are never adjacent,
        // so past it lies unSACKed data up to the next one.
        let i = self.ranges.partition_point(|x| x.1.le(seq));
        match self.ranges.get(i) {
            None => (seq, None),
            Some(&(l, r)) if l.le(seq) => (r, self.ranges.get(i + 1).map(|x| x.0)),
            Some(&(l, _)) => (seq, Some(l)),
        }
    }

    /// RFC 6675 IsLost(seq): "returns true when either DupThresh
    /// discontiguous SACKed sequences have arrived above 'SeqNum' or more
    /// than (DupThresh - 1) * SMSS bytes with sequence numbers greater than
    /// 'SeqNum' have been SACKed." Discontiguous sequences are counted as
    /// SACKed ranges.
    pub fn is_lost(&self, seq: Seq, dupthresh: u32, smss: u32) -> bool {
        if self.rack_lost.is_some_and(|r| seq.lt(r)) {
            return true;
        }
        let (mut blocks, mut bytes) = (0u32, 0u64);
        for &(l, r) in self.ranges().iter().rev() {
            if r.le(seq + 1) {
                break;
            }
            blocks += 1;
            bytes += r.bytes_since(l.max(seq + 1)) as u64;
        }
        lost_by(blocks, bytes, dupthresh, smss)
    }

    /// The holes in `[una, max)`, lowest first, with IsLost() of each.
    fn holes(
        &self,
        una: Seq,
        max: Seq,
        dupthresh: u32,
        smss: u32,
    ) -> impl Iterator<Item = Hole> + '_ {
        self.holes_from(una, max, dupthresh, smss, 0)
    }

    /// [`Self::holes`] without those below range `first`, i.e. without
    /// the holes that end at or below `ranges[first - 1].0`.
    fn holes_from(
        &self,
        una: Seq,
        max: Seq,
        dupthresh: u32,
        smss: u32,
        first: usize,
    ) -> impl Iterator<Item = Hole> + '_ {
        let mut blocks = (self.ranges.len() - first) as u32;
        let mut bytes = self.sacked_bytes_from(first);
        let mut at = match first {
            0 => una,
            _ => self.ranges[first - 1].1,
        };
        let mut i = first;
        core::iter::from_fn(move || loop {
            if i > self.ranges.len() {
                return None;
            }
            let (end, next_at) = if i < self.ranges.len() {
                self.ranges[i]
            } else {
                (max, max)
            };
            let by_dupthresh = lost_by(blocks, bytes, dupthresh, smss);
            let lost_end = match self.rack_lost {
                _ if by_dupthresh => end,
                Some(r) if at.lt(r) => r.min(end),
                _ => at,
            };
            let hole = Hole {
                start: at,
                end,
                lost: lost_end.gt(at),
                lost_end,
                top: i == self.ranges.len(),
            };
            if i < self.ranges.len() {
                blocks -= 1;
                bytes -= self.ranges[i].1.bytes_since(self.ranges[i].0) as u64;
            }
            at = next_at;
            i += 1;
            if hole.end.gt(hole.start) {
                return Some(hole);
            }
        })
    }

    /// RFC 6675 SetPipe(): for each unSACKed octet in `[una, max)`, one if
    /// IsLost() is false ("still assumed to be in the network") and one more
    /// if it was retransmitted (below HighRxt); plus rescue retransmissions
    /// sent since the last SetPipe().
    pub fn pipe(&self, una: Seq, max: Seq, dupthresh: u32, smss: u32) -> u64 {
        let key = PipeMemo {
            una,
            max,
            high_rxt: self.high_rxt,
            rescue_in_pipe: self.rescue_in_pipe,
            rack_lost: self.rack_lost,
            relost_bytes: self.relost_bytes,
            dupthresh,
            smss,
            pipe: 0,
        };
        if let Some(m) = self.pipe_memo.get() {
            if (PipeMemo { pipe: 0, ..m }) == key {
                debug_assert_eq!(
                    m.pipe,
                    self.pipe_full(una, max, dupthresh, smss),
                    "pipe memo {m:?}"
                );
                return m.pipe;
            }
        }
        let pipe = self.pipe_full(una, max, dupthresh, smss);
        self.pipe_memo.set(Some(PipeMemo { pipe, ..key }));
        pipe
    }

    /// SetPipe() from the scoreboard. The holes that IsLost() marks lost
    /// by DupThresh are a prefix (each next hole has fewer ranges and bytes
    /// above it); walking down from the top finds where it ends, after at
    /// most DupThresh ranges. The holes above are summed one by one (RACK
    /// may mark part of them lost). The lost prefix adds only its octets
    /// below HighRxt: `[una, min(HighRxt, its end))` less the SACKed
    /// ranges in it, a sum over the ranges below HighRxt.
    pub(super) fn pipe_full(&self, una: Seq, max: Seq, dupthresh: u32, smss: u32) -> u64 {
        let r = self.ranges();
        let n = r.len();
        // Hole `i` lies below range `i` (hole `n` below SND.MAX) and has
        // ranges `i..n` above it. `lost` holes: `0..lost`.
        let (mut blocks, mut bytes) = (0u32, 0u64);
        let mut i = n;
        let lost = loop {
            if lost_by(blocks, bytes, dupthresh, smss) {
                break i + 1;
            }
            if i == 0 {
                break 0;
            }
            i -= 1;
            blocks += 1;
            bytes += r[i].1.bytes_since(r[i].0) as u64;
        };
        let start = |i: usize| if i == 0 { una } else { r[i - 1].1 };
        let end = |i: usize| if i < n { r[i].0 } else { max };
        let mut pipe = self.rescue_in_pipe;
        for i in lost..=n {
            let (start, end) = (start(i), end(i));
            let lost_end = match self.rack_lost {
                Some(m) if start.lt(m) => m.min(end),
                _ => start,
            };
            pipe += end.bytes_since(lost_end) as u64;
            pipe += end.min(self.high_rxt).bytes_since(start) as u64;
        }
        if lost > 0 {
            let cap = end(lost - 1).min(self.high_rxt);
            pipe += cap.bytes_since(una) as u64;
            for &(l, h) in &r[..lost - 1] {
                if !l.lt(cap) {
                    break;
                }
                pipe -= h.min(cap).bytes_since(l) as u64;
            }
        }
        // Lost again: below HighRxt, counted once as retransmitted.
        pipe.saturating_sub(self.relost_bytes)
    }

    /// SetPipe() walking every hole, as RFC 6675 words it (tests compare).
    #[cfg(test)]
    pub(super) fn pipe_walking_all(&self, una: Seq, max: Seq, dupthresh: u32, smss: u32) -> u64 {
        let mut pipe = self.rescue_in_pipe;
        for h in self.holes(una, max, dupthresh, smss) {
            pipe += h.end.bytes_since(h.lost_end) as u64;
            pipe += h.end.min(self.high_rxt).bytes_since(h.start) as u64;
        }
        pipe.saturating_sub(self.relost_bytes)
    }

    /// The memo's pipe if it is still valid for `[una, max)` (tests).
    #[cfg(test)]
    pub(super) fn memo_pipe(&self, una: Seq, max: Seq) -> Option<u64> {
        self.pipe_memo
            .get()
            .filter(|m| m.una == una && m.max == max && m.high_rxt == self.high_rxt)
            .map(|m| m.pipe)
    }

    /// HighRxt moved from `old` to `self.high_rxt` with a retransmission
    /// of `[seq, end)`. When that is the next piece of a hole right at the
    /// old HighRxt (the usual case), pipe grows by its length: each of its
    /// octets is unSACKed and now below HighRxt. Otherwise the memo's key
    /// no longer matches and the next `pipe` computes it anew.
    pub(super) fn memo_retransmit(&self, old: Seq, seq: Seq, end: Seq) {
        let Some(mut m) = self.pipe_memo.get() else {
            return;
        };
        let unsacked = match self.next_unsacked(seq) {
            (s, Some(l)) => s == seq && end.le(l),
            (s, None) => s == seq,
        };
        if m.high_rxt == old
            && seq == old
            && self.high_rxt == end
            && seq.ge(m.una)
            && end.le(m.max)
            && unsacked
        {
            m.high_rxt = end;
            m.pipe += end.bytes_since(seq) as u64;
            self.pipe_memo.set(Some(m));
        }
    }

    /// New data `[seq, end)` was sent at SND.MAX (`seq`). It widens the
    /// hole above the highest SACKed range, which no SACKed octet lies
    /// above, so it is not lost by IsLost() (with `dupthresh >= 1`), nor by
    /// RACK if RACK's mark is at or below `seq`, and not retransmitted if
    /// HighRxt is at or below `seq`: pipe grows by its length.
    pub(super) fn memo_new_data(&self, seq: Seq, end: Seq) {
        let Some(mut m) = self.pipe_memo.get() else {
            return;
        };
        if m.max == seq
            && end.gt(seq)
            && !lost_by(0, 0, m.dupthresh, m.smss)
            && m.high_rxt.le(seq)
            && m.rack_lost.is_none_or(|r| r.le(seq))
        {
            m.max = end;
            m.pipe += end.bytes_since(seq) as u64;
            self.pipe_memo.set(Some(m));
        }
    }

    /// RFC 6675 NextSeg(), given whether a segment of new data may be sent
    /// (unsent data exists and the receiver's window allows it). The caller
    /// checks `cwnd - pipe >= SMSS` first.
    pub fn next_seg(
        &self,
        una: Seq,
        max: Seq,
        new_data: bool,
        dupthresh: u32,
        smss: u32,
    ) -> Option<NextSeg> {
        // A retransmission found lost goes first (ns-2's Linux agent puts
        // it back on its lost list, which it retransmits from the lowest).
        if let Some(&(seq, end)) = self.relost.front() {
            return Some(NextSeg::Retransmit { seq, end });
        }
        // Rules (1) and (3) look above HighRxt only: the holes that end at
        // or below it (those before the first range starting above it) have
        // nothing left to retransmit. If one of them is not lost, no hole
        // above is either (IsLost is monotone, and RACK's mark is below its
        // start), so rule (1)'s walk stops at the first hole either way.
        let first = self.ranges().partition_point(|r| r.0.le(self.high_rxt));
        self.next_seg_from(una, max, new_data, dupthresh, smss, first)
    }

    /// NextSeg() walking the holes from range `first` on.
    #[inline]
    fn next_seg_from(
        &self,
        una: Seq,
        max: Seq,
        new_data: bool,
        dupthresh: u32,
        smss: u32,
        first: usize,
    ) -> Option<NextSeg> {
        // Rule (1): the smallest unSACKed S2 above HighRxt, below the highest
        // SACKed octet, with IsLost(S2). IsLost is monotone: the first hole
        // that is not lost ends the search.
        for h in self.holes_from(una, max, dupthresh, smss, first) {
            if h.top || !h.lost {
                break;
            }
            let lost = Hole {
                end: h.lost_end,
                ..h
            };
            if let Some(seg) = self.above_high_rxt(lost, smss) {
                return Some(seg);
            }
        }
        // Rule (2): new data.
        if new_data {
            return Some(NextSeg::NewData);
        }
        // Rule (3): as (1) without IsLost.
        for h in self.holes_from(una, max, dupthresh, smss, first) {
            if h.top {
                break;
            }
            if let Some(seg) = self.above_high_rxt(h, smss) {
                return Some(seg);
            }
        }
        self.rescue(una, max, dupthresh, smss)
    }

    /// Rule (4): "If HighACK is greater than RescueRxt (or RescueRxt is
    /// undefined), then one segment of upto SMSS octets that MUST include
    /// the highest outstanding unSACKed sequence number SHOULD be
    /// returned".
    fn rescue(&self, una: Seq, max: Seq, dupthresh: u32, smss: u32) -> Option<NextSeg> {
        let rescue_allowed = match self.rescue_rxt {
            None => true,
            Some(r) => una.gt(r),
        };
        if rescue_allowed {
            let h = self.holes(una, max, dupthresh, smss).last()?;
            let seq = h.start.max(h.end - smss);
            return Some(NextSeg::Rescue { seq, end: h.end });
        }
        None
    }

    /// [`Self::next_seg`] walking every hole from SND.UNA, as RFC 6675
    /// words it (tests compare the two).
    #[cfg(test)]
    pub(super) fn next_seg_walking_all(
        &self,
        una: Seq,
        max: Seq,
        new_data: bool,
        dupthresh: u32,
        smss: u32,
    ) -> Option<NextSeg> {
        self.next_seg_from(una, max, new_data, dupthresh, smss, 0)
    }

    /// One segment of hole `h` starting above HighRxt, if any is left.
    fn above_high_rxt(&self, h: Hole, smss: u32) -> Option<NextSeg> {
        let seq = h.start.max(self.high_rxt);
        if seq.ge(h.end) {
            return None;
        }
        let end = h.end.min(seq + smss);
        Some(NextSeg::Retransmit { seq, end })
    }
}

fn lost_by(blocks: u32, bytes: u64, dupthresh: u32, smss: u32) -> bool {
    blocks >= dupthresh || bytes > dupthresh.saturating_sub(1) as u64 * smss as u64
}
