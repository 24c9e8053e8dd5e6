//! Classic pcap files (the libpcap format, not pcapng) with nanosecond
//! timestamps, since pepkit time is integer nanoseconds.
//!
//! The writer always writes little-endian, so the same run gives the same
//! bytes on any host; readers detect byte order from the magic number.

use std::io::{self, Read, Write};

/// Magic number of a pcap file with nanosecond timestamps.
pub const MAGIC_NANOS: u32 = 0xa1b2_3c4d;
/// Magic number of a pcap file with microsecond timestamps.
pub const MAGIC_MICROS: u32 = 0xa1b2_c3d4;
/// libpcap's default snapshot length: whole packets.
pub const DEFAULT_SNAPLEN: u32 = 262_144;

// Largest record the reader accepts, so garbage cannot make it allocate
// gigabytes.
const MAX_RECORD: u32 = 1 << 26;

/// What the records of a file begin with (tcpdump.org "LINKTYPE_" values).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkType {
    /// LINKTYPE_ETHERNET: Ethernet II frames.
    Ethernet,
    /// LINKTYPE_RAW: bare IPv4 or IPv6 packets, told apart by version.
    RawIp,
}

impl LinkType {
    pub fn to_u32(self) -> u32 {
        match self {
            LinkType::Ethernet => 1,
            LinkType::RawIp => 101,
        }
    }
}

/// Writes a pcap file: the file header on creation, then one record per
/// call.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    snaplen: u32,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header. `snaplen` bounds the bytes stored per record
    /// and must be non-zero.
    pub fn new(mut out: W, link: LinkType, snaplen: u32) -> io::Result<Self> {
        if snaplen == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "snaplen 0"));
        }
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&MAGIC_NANOS.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone and sigfigs stay zero: timestamps are UTC, exact.
        h[16..20].copy_from_slice(&snaplen.to_le_bytes());
        h[20..24].copy_from_slice(&link.to_u32().to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter { out, snaplen })
    }

    /// Records a whole packet seen at `ts_ns` nanoseconds since the epoch
    /// (or since the start of a simulation), cut to the snaplen.
    pub fn write_packet(&mut self, ts_ns: u64, data: &[u8]) -> io::Result<()> {
        let orig_len = u32::try_from(data.len()).map_err(|_| invalid("packet over 4 GiB"))?;
        self.write_record(ts_ns, data, orig_len)
    }

    /// Records the first bytes of a packet that was `orig_len` bytes long,
    /// such as headers from [`emit_headers`](crate::emit_headers). `data` is
    /// cut further to the snaplen.
    pub fn write_record(&mut self, ts_ns: u64, data: &[u8], orig_len: u32) -> io::Result<()> {
        let incl = data.len().min(self.snaplen as usize);
        if incl as u64 > u64::from(orig_len) {
            return Err(invalid("record longer than its original length"));
        }
        let secs =
            u32::try_from(ts_ns / 1_000_000_000).map_err(|_| invalid("timestamp past 2106"))?;
        let nanos = (ts_ns % 1_000_000_000) as u32;
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&secs.to_le_bytes());
        h[4..8].copy_from_slice(&nanos.to_le_bytes());
        h[8..12].copy_from_slice(&(incl as u32).to_le_bytes());
        h[12..16].copy_from_slice(&orig_len.to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(&data[..incl])
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

fn invalid(msg: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

fn bad_data(msg: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// One record of a pcap file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PcapRecord {
    /// Timestamp in nanoseconds (microsecond files are scaled up).
    pub ts_ns: u64,
    /// Length of the packet on the wire; `data` may be shorter.
    pub orig_len: u32,
    pub data: Vec<u8>,
}

/// A minimal reader of classic pcap files in either byte order and either
/// timestamp resolution, for tests and for replaying captures.
#[derive(Debug)]
pub struct PcapReader<R: Read> {
    input: R,
    big_endian: bool,
    nanos: bool,
    snaplen: u32,
    link_type: u32,
}

impl<R: Read> PcapReader<R> {
    /// Reads and checks the file header.
    pub fn new(mut input: R) -> io::Result<Self> {
        let mut h = [0u8; 24];
        input.read_exact(&mut h)?;
        let magic = [h[0], h[1], h[2], h[3]];
        let (big_endian, nanos) = match (u32::from_le_bytes(magic), u32::from_be_bytes(magic)) {
            (MAGIC_NANOS, _) => (false, true),
            (MAGIC_MICROS, _) => (false, false),
            (_, MAGIC_NANOS) => (true, true),
            (_, MAGIC_MICROS) => (true, false),
            _ => return Err(bad_data("not a pcap file")),
        };
        let mut r = PcapReader {
            input,
            big_endian,
            nanos,
            snaplen: 0,
            link_type: 0,
        };
        r.snaplen = r.u32_at(&h, 16);
        r.link_type = r.u32_at(&h, 20);
        Ok(r)
    }

    fn u32_at(&self, b: &[u8], at: usize) -> u32 {
        let w = [b[at], b[at + 1], b[at + 2], b[at + 3]];
        if self.big_endian {
            u32::from_be_bytes(w)
        } else {
            u32::from_le_bytes(w)
        }
    }

    pub fn snaplen(&self) -> u32 {
        self.snaplen
    }

    /// The LINKTYPE_ value (1 Ethernet, 101 raw IP).
    pub fn link_type(&self) -> u32 {
        self.link_type
    }

    /// The next record, or `None` at a clean end of file.
    pub fn next_record(&mut self) -> io::Result<Option<PcapRecord>> {
        let mut h = [0u8; 16];
        // Distinguish a clean end (no bytes) from a cut record header.
        let mut got = 0;
        while got < h.len() {
            match self.input.read(&mut h[got..]) {
                Ok(0) if got == 0 => return Ok(None),
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let (secs, frac) = (self.u32_at(&h, 0), self.u32_at(&h, 4));
        let (incl, orig_len) = (self.u32_at(&h, 8), self.u32_at(&h, 12));
        if incl > MAX_RECORD {
            return Err(bad_data("record too large"));
        }
        let mut data = vec![0; incl as usize];
        self.input.read_exact(&mut data)?;
        let frac_ns = if self.nanos {
            frac
        } else {
            frac.saturating_mul(1000)
        };
        Ok(Some(PcapRecord {
            ts_ns: u64::from(secs) * 1_000_000_000 + u64::from(frac_ns),
            orig_len,
            data,
        }))
    }
}

impl<R: Read> Iterator for PcapReader<R> {
    type Item = io::Result<PcapRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_bytes() {
        let w = PcapWriter::new(Vec::new(), LinkType::RawIp, 65535).unwrap();
        let b = w.into_inner().unwrap();
        assert_eq!(
            b,
            [
                0x4d, 0x3c, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 101,
                0, 0, 0
            ]
        );
    }

    #[test]
    fn records_round_trip_with_truncation() {
        let mut w = PcapWriter::new(Vec::new(), LinkType::Ethernet, 8).unwrap();
        w.write_packet(1_500_000_123, &[1, 2, 3]).unwrap();
        w.write_packet(2_000_000_000, &[9; 20]).unwrap();
        w.write_record(3, &[7; 4], 1500).unwrap();
        assert!(w.write_record(4, &[7; 4], 3).is_err());
        assert!(w.write_packet(u64::MAX, &[]).is_err());
        let bytes = w.into_inner().unwrap();

        let mut r = PcapReader::new(&bytes[..]).unwrap();
        assert_eq!((r.link_type(), r.snaplen()), (1, 8));
        let recs: Vec<_> = r.by_ref().collect::<io::Result<_>>().unwrap();
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[0].ts_ns, 1_500_000_123);
        assert_eq!(recs[0].data, [1, 2, 3]);
        assert_eq!((recs[1].data.len(), recs[1].orig_len), (8, 20));
        assert_eq!((recs[2].data.len(), recs[2].orig_len), (4, 1500));

        // A cut record is an error, not a clean end.
        let mut r = PcapReader::new(&bytes[..bytes.len() - 1]).unwrap();
        r.next_record().unwrap();
        r.next_record().unwrap();
        assert!(r.next_record().is_err());
    }

    #[test]
    fn reads_big_endian_microseconds() {
        let mut b = Vec::new();
        b.extend_from_slice(&MAGIC_MICROS.to_be_bytes());
        b.extend_from_slice(&[0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 96, 0, 0, 0, 1]);
        b.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1, 0xab]);
        let mut r = PcapReader::new(&b[..]).unwrap();
        let rec = r.next_record().unwrap().unwrap();
        assert_eq!(rec.ts_ns, 1_000_002_000);
        assert_eq!(rec.data, [0xab]);
        assert!(r.next_record().unwrap().is_none());
    }
}
