//! The byte stream a traffic sender writes and its receiver checks.
//!
//! Byte `i` of the stream with seed `s` is byte `i % 8` (little-endian) of
//! `splitmix64(s ^ (i / 8) * φ)`: any stretch can be generated from its
//! offset alone, so the receiver checks each read as it comes, in constant
//! memory and far faster than the links carry data. A lost, repeated,
//! reordered or corrupted byte shows as a mismatch at its stream offset.

/// A seeded pseudo-random byte stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pattern {
    seed: u64,
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Pattern {
    pub fn new(seed: u64) -> Pattern {
        Pattern { seed }
    }

    fn word(&self, index: u64) -> [u8; 8] {
        splitmix64(self.seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_le_bytes()
    }

    /// Fills `buf` with the stream's bytes from `offset` on.
    pub fn fill(&self, offset: u64, buf: &mut [u8]) {
        let mut pos = offset;
        let mut out = buf;
        // Up to the next word boundary, then whole words, then the tail.
        let head = ((8 - pos % 8) % 8) as usize;
        if head > 0 {
            let n = head.min(out.len());
            let w = self.word(pos / 8);
            let at = (pos % 8) as usize;
            out[..n].copy_from_slice(&w[at..at + n]);
            out = &mut out[n..];
            pos += n as u64;
        }
        let mut chunks = out.chunks_exact_mut(8);
        for c in &mut chunks {
            c.copy_from_slice(&self.word(pos / 8));
            pos += 8;
        }
        let tail = chunks.into_remainder();
        if !tail.is_empty() {
            let n = tail.len();
            tail.copy_from_slice(&self.word(pos / 8)[..n]);
        }
    }
}

/// Checks received bytes against the stream, in order.
#[derive(Clone, Debug)]
pub struct Verifier {
    pattern: Pattern,
    /// Bytes checked so far (the stream offset of the next byte).
    pub offset: u64,
    /// Stream offset of the first wrong byte, if any.
    pub first_mismatch: Option<u64>,
    scratch: Vec<u8>,
}

impl Verifier {
    pub fn new(seed: u64) -> Verifier {
        Verifier {
            pattern: Pattern::new(seed),
            offset: 0,
            first_mismatch: None,
            scratch: Vec::new(),
        }
    }

    /// Checks the next bytes of the stream.
    pub fn check(&mut self, data: &[u8]) {
        if self.first_mismatch.is_none() {
            self.scratch.resize(data.len(), 0);
            self.pattern.fill(self.offset, &mut self.scratch);
            if let Some(i) = data.iter().zip(&self.scratch).position(|(a, b)| a != b) {
                self.first_mismatch = Some(self.offset + i as u64);
            }
        }
        self.offset += data.len() as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_split_gives_the_same_stream() {
        let p = Pattern::new(42);
        let mut whole = vec![0u8; 1000];
        p.fill(0, &mut whole);
        for split in [1usize, 3, 7, 8, 9, 500, 999] {
            let mut a = vec![0u8; split];
            let mut b = vec![0u8; 1000 - split];
            p.fill(0, &mut a);
            p.fill(split as u64, &mut b);
            a.extend_from_slice(&b);
            assert_eq!(a, whole, "split at {split}");
        }
        let mut other = vec![0u8; 1000];
        Pattern::new(43).fill(0, &mut other);
        assert_ne!(other, whole);
    }

    #[test]
    fn verifier_finds_the_first_wrong_byte() {
        let p = Pattern::new(7);
        let mut data = vec![0u8; 4096];
        p.fill(0, &mut data);
        let mut v = Verifier::new(7);
        v.check(&data[..1000]);
        v.check(&data[1000..]);
        assert_eq!((v.offset, v.first_mismatch), (4096, None));
        data[2345] ^= 1;
        let mut v = Verifier::new(7);
        for chunk in data.chunks(100) {
            v.check(chunk);
        }
        assert_eq!(v.first_mismatch, Some(2345));
        // A missing byte is caught at the gap.
        let mut v = Verifier::new(7);
        v.check(&data[..10]);
        v.check(&data[11..20]);
        assert_eq!(v.first_mismatch.map(|m| m >= 10), Some(true));
    }
}
