//! TCP options: MSS, window scale, SACK-permitted, SACK blocks, timestamps
//! (RFC 9293, RFC 7323, RFC 2018).
//!
//! Parsing is by kind and length: NOP is skipped, EOL ends the list, and any
//! other kind must carry a length byte of at least 2 that stays inside the
//! header. Unknown kinds are skipped by that length and counted, not kept:
//! a PEP that emits a segment of its own speaks for itself, and repeating an
//! option it does not implement (MPTCP, TCP-AO, Fast Open) would claim a
//! capability it lacks. Packets forwarded untouched keep all their options.

use crate::error::WireError;

/// Most SACK blocks a header can hold: 4 alone, 3 beside timestamps.
pub const MAX_SACK_BLOCKS: usize = 4;
/// Most option bytes a TCP header can hold (data offset 15 words).
pub const MAX_OPTIONS_LEN: usize = 40;

/// Option kinds (IANA "TCP Option Kind Numbers").
pub mod kind {
    pub const EOL: u8 = 0;
    pub const NOP: u8 = 1;
    pub const MSS: u8 = 2;
    pub const WSCALE: u8 = 3;
    pub const SACK_PERMITTED: u8 = 4;
    pub const SACK: u8 = 5;
    pub const TIMESTAMPS: u8 = 8;
}

/// The SACK option: up to four blocks `[left, right)` as raw sequence
/// numbers, in a fixed array so that [`TcpOptions`] stays `Copy` and
/// allocation-free. (`pep_core::SackBlocks` is what a segment carries for
/// the mechanisms, in sequence-number arithmetic.)
#[derive(Clone, Copy, Debug, Default)]
pub struct SackOption {
    blocks: [(u32, u32); MAX_SACK_BLOCKS],
    len: u8,
}

impl SackOption {
    pub const fn new() -> Self {
        SackOption {
            blocks: [(0, 0); MAX_SACK_BLOCKS],
            len: 0,
        }
    }
    /// Up to the first four blocks of `blocks`.
    pub fn from_slice(blocks: &[(u32, u32)]) -> Self {
        let mut s = SackOption::new();
        for &(l, r) in blocks.iter().take(MAX_SACK_BLOCKS) {
            s.push(l, r);
        }
        s
    }
    /// Appends a block; returns false (and drops it) when full.
    pub fn push(&mut self, left: u32, right: u32) -> bool {
        match self.blocks.get_mut(usize::from(self.len)) {
            Some(b) => {
                *b = (left, right);
                self.len += 1;
                true
            }
            None => false,
        }
    }
    pub fn as_slice(&self) -> &[(u32, u32)] {
        &self.blocks[..usize::from(self.len)]
    }
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn clear(&mut self) {
        self.len = 0;
    }
}

// Equality and hashing look only at the blocks in use: stale entries past
// `len` (after `clear`) must not make equal lists differ.
impl PartialEq for SackOption {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}
impl Eq for SackOption {}
impl std::hash::Hash for SackOption {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state)
    }
}

/// The timestamps option (RFC 7323 section 3) as the header carries it
/// (`pep_core::Timestamps` is a segment's copy for the mechanisms).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TimestampOption {
    /// TSval: the sender's clock.
    pub val: u32,
    /// TSecr: the TSval being echoed.
    pub ecr: u32,
}

/// The options of one TCP header.
///
/// Values are as on the wire: `wscale` is not clamped to 14 and `mss` is
/// reported on any segment; what to make of them is the caller's business.
/// A repeated option keeps its last value. A known option with the wrong
/// length is an error, where Linux would ignore the option: the daemon can
/// count it and forward the packet untouched.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TcpOptions {
    pub mss: Option<u16>,
    pub wscale: Option<u8>,
    pub sack_permitted: bool,
    pub sack: SackOption,
    pub timestamps: Option<TimestampOption>,
    /// Options of unknown kind skipped by parse. Ignored by emit.
    pub unknown: u8,
}

/// One option as found in the header.
pub(crate) struct RawOption<'a> {
    /// Offset of the kind byte from the start of the options area.
    pub offset: usize,
    pub kind: u8,
    /// The bytes after kind and length.
    pub data: &'a [u8],
}

/// Iterates the options of a header, validating lengths. Yields one error
/// and then stops.
pub(crate) struct OptionIter<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> OptionIter<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        OptionIter { bytes, pos: 0 }
    }
}

impl<'a> Iterator for OptionIter<'a> {
    type Item = Result<RawOption<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let offset = self.pos;
            let kind = *self.bytes.get(offset)?;
            match kind {
                // What follows EOL is padding.
                kind::EOL => self.pos = self.bytes.len(),
                kind::NOP => self.pos += 1,
                _ => {
                    // Whatever happens, the next call ends the iteration.
                    self.pos = self.bytes.len();
                    let Some(&len) = self.bytes.get(offset + 1) else {
                        return Some(Err(WireError::OptionOverrun { kind }));
                    };
                    if len < 2 {
                        return Some(Err(WireError::BadOptionLength { kind, len }));
                    }
                    let end = offset + usize::from(len);
                    let Some(data) = self.bytes.get(offset + 2..end) else {
                        return Some(Err(WireError::OptionOverrun { kind }));
                    };
                    self.pos = end;
                    return Some(Ok(RawOption { offset, kind, data }));
                }
            }
        }
    }
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

impl TcpOptions {
    /// Parses the options area of a TCP header (the bytes between the fixed
    /// 20-byte header and the data offset).
    pub fn parse(bytes: &[u8]) -> Result<TcpOptions, WireError> {
        let mut o = TcpOptions::default();
        for opt in OptionIter::new(bytes) {
            let RawOption { kind, data, .. } = opt?;
            let bad = || WireError::BadOptionLength {
                kind,
                len: data.len() as u8 + 2,
            };
            match kind {
                kind::MSS if data.len() == 2 => o.mss = Some(be16(data)),
                kind::WSCALE if data.len() == 1 => o.wscale = Some(data[0]),
                kind::SACK_PERMITTED if data.is_empty() => o.sack_permitted = true,
                kind::TIMESTAMPS if data.len() == 8 => {
                    o.timestamps = Some(TimestampOption {
                        val: be32(data),
                        ecr: be32(&data[4..]),
                    })
                }
                // The 40-byte limit already bounds the count to four.
                kind::SACK if !data.is_empty() && data.len() % 8 == 0 => {
                    o.sack.clear();
                    for b in data.chunks_exact(8) {
                        o.sack.push(be32(b), be32(&b[4..]));
                    }
                }
                kind::MSS | kind::WSCALE | kind::SACK_PERMITTED | kind::TIMESTAMPS | kind::SACK => {
                    return Err(bad())
                }
                _ => o.unknown = o.unknown.saturating_add(1),
            }
        }
        Ok(o)
    }

    /// Bytes [`emit`](Self::emit) writes: a multiple of 4, possibly over the
    /// 40 that fit.
    pub fn wire_len(&self) -> usize {
        let mut n = 0;
        if self.mss.is_some() {
            n += 4;
        }
        if self.timestamps.is_some() {
            n += 12;
        } else if self.sack_permitted {
            n += 4;
        }
        if self.wscale.is_some() {
            n += 4;
        }
        if !self.sack.is_empty() {
            n += 4 + 8 * self.sack.len();
        }
        n
    }

    /// Writes the options in the order and alignment Linux uses, so that
    /// emitted headers look like real ones in a capture:
    /// `MSS, SACK-permitted + TS (or NOP NOP TS, or NOP NOP SACK-permitted),
    /// NOP WS, NOP NOP SACK`. Returns the bytes written.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let len = self.wire_len();
        if len > MAX_OPTIONS_LEN {
            return Err(WireError::OptionsTooLong(len));
        }
        let Some(buf) = buf.get_mut(..len) else {
            return Err(WireError::BufferTooSmall {
                needed: len,
                got: buf.len(),
            });
        };
        let mut w = Writer { buf, pos: 0 };
        if let Some(mss) = self.mss {
            w.put(&[kind::MSS, 4]);
            w.put(&mss.to_be_bytes());
        }
        match (self.sack_permitted, self.timestamps) {
            (sp, Some(ts)) => {
                w.put(&if sp {
                    [kind::SACK_PERMITTED, 2]
                } else {
                    [kind::NOP, kind::NOP]
                });
                w.put(&[kind::TIMESTAMPS, 10]);
                w.put(&ts.val.to_be_bytes());
                w.put(&ts.ecr.to_be_bytes());
            }
            (true, None) => w.put(&[kind::NOP, kind::NOP, kind::SACK_PERMITTED, 2]),
            (false, None) => {}
        }
        if let Some(ws) = self.wscale {
            w.put(&[kind::NOP, kind::WSCALE, 3, ws]);
        }
        if !self.sack.is_empty() {
            w.put(&[
                kind::NOP,
                kind::NOP,
                kind::SACK,
                2 + 8 * self.sack.len() as u8,
            ]);
            for &(l, r) in self.sack.as_slice() {
                w.put(&l.to_be_bytes());
                w.put(&r.to_be_bytes());
            }
        }
        debug_assert_eq!(w.pos, len);
        Ok(len)
    }
}

/// Sequential writer over a buffer already sized by `wire_len`.
struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl Writer<'_> {
    fn put(&mut self, bytes: &[u8]) {
        self.buf[self.pos..self.pos + bytes.len()].copy_from_slice(bytes);
        self.pos += bytes.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux_syn_options() {
        // MSS 1460, SACK-permitted, TS, NOP, WS 7: what Linux puts in a SYN.
        let bytes = [
            2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7,
        ];
        let o = TcpOptions::parse(&bytes).unwrap();
        let want = TcpOptions {
            mss: Some(1460),
            wscale: Some(7),
            sack_permitted: true,
            timestamps: Some(TimestampOption { val: 1, ecr: 0 }),
            ..Default::default()
        };
        assert_eq!(o, want);
        let mut out = [0u8; 40];
        assert_eq!(o.emit(&mut out), Ok(20));
        assert_eq!(out[..20], bytes);
    }

    #[test]
    fn eol_ends_list_and_unknown_is_skipped() {
        // Unknown kind 30 (MPTCP) of length 4, then EOL and garbage padding.
        let bytes = [30, 4, 0xaa, 0xbb, 2, 4, 0x02, 0x18, 0, 0xff, 0xff, 0xff];
        let o = TcpOptions::parse(&bytes).unwrap();
        assert_eq!(o.mss, Some(536));
        assert_eq!(o.unknown, 1);
    }

    #[test]
    fn malformed_lengths() {
        use WireError::*;
        let cases: &[(&[u8], WireError)] = &[
            (&[2], OptionOverrun { kind: 2 }),
            (&[2, 0], BadOptionLength { kind: 2, len: 0 }),
            (&[99, 1], BadOptionLength { kind: 99, len: 1 }),
            (&[2, 8, 0, 0], OptionOverrun { kind: 2 }),
            (&[2, 3, 0, 0], BadOptionLength { kind: 2, len: 3 }),
            (&[8, 2, 0, 0], BadOptionLength { kind: 8, len: 2 }),
            (&[5, 6, 0, 0, 0, 0], BadOptionLength { kind: 5, len: 6 }),
            (&[5, 2, 1, 1], BadOptionLength { kind: 5, len: 2 }),
            (&[4, 3, 0, 1], BadOptionLength { kind: 4, len: 3 }),
            (&[3, 4, 0, 1], BadOptionLength { kind: 3, len: 4 }),
        ];
        for (bytes, err) in cases {
            assert_eq!(TcpOptions::parse(bytes), Err(*err), "{bytes:?}");
        }
    }

    #[test]
    fn too_many_options_for_the_header() {
        let o = TcpOptions {
            mss: Some(1460),
            timestamps: Some(TimestampOption::default()),
            sack: SackOption::from_slice(&[(1, 2), (3, 4), (5, 6)]),
            ..Default::default()
        };
        assert_eq!(o.wire_len(), 4 + 12 + 28);
        assert_eq!(o.emit(&mut [0; 64]), Err(WireError::OptionsTooLong(44)));
    }

    #[test]
    fn sack_equality_ignores_stale_blocks() {
        let mut a = SackOption::from_slice(&[(1, 2), (3, 4)]);
        a.clear();
        a.push(5, 6);
        assert_eq!(a, SackOption::from_slice(&[(5, 6)]));
        let mut full = SackOption::from_slice(&[(0, 1); 5]);
        assert_eq!(full.len(), MAX_SACK_BLOCKS);
        assert!(!full.push(9, 9));
    }
}
