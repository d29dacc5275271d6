//! The trace reader. Nothing that failed a checksum is trusted: a bad chunk
//! is reported with its offset and reading goes on at the next chunk magic
//! after the bad chunk's start, found by a scan that holds no more than the
//! read buffer, however many chunks are bad. Memory per chunk is bounded
//! by [`CHUNK_RAW_MAX`] and [`CHUNK_RECORDS_MAX`].

use super::codec::decode_records_into;
use super::file::{
    chunk_crc, ChunkBody, ChunkInfo, CHUNK_HEADER_V1, CHUNK_HEADER_V2, CHUNK_MAGIC, CHUNK_RAW_MAX,
    CHUNK_RECORDS_MAX, CODEC_RAW, CODEC_ZSTD, KIND_FOOTER, KIND_RECORDS,
};
use super::{Header, Record, TraceError, FORMAT_V1, FORMAT_VERSION, MAGIC};
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind, Read, Seek, SeekFrom};
use std::path::Path;

const HEADER_MAX: u32 = 16 << 20;
/// Problems reported one by one; past this they are counted (memory stays
/// bounded on a file of garbage).
pub const PROBLEMS_MAX: u64 = 1000;

/// What a reader reads from: a file, or bytes in memory.
pub trait TraceInput: Read + Seek + Send {}
impl<T: Read + Seek + Send> TraceInput for T {}

type Item = Result<(ChunkInfo, ChunkBody), TraceError>;

pub struct TraceReader {
    name: String,
    input: BufReader<Box<dyn TraceInput>>,
    /// Offset of the next byte `input` yields.
    pos: u64,
    /// Length of the input: a payload past it is not allocated.
    end: u64,
    version: u16,
    header: Header,
    out: VecDeque<Item>,
    done: bool,
    /// Sequence number the next chunk should have (version 2).
    next_seq: u32,
    seen: HashMap<u32, u64>,
    /// Records (and skipped records) in the chunks accepted so far.
    records: u64,
    footer_at: Option<u64>,
    problems: u64,
    /// A chunk was lost (since the last good one / at all): the gap in
    /// sequence numbers and the footer's count are then expected.
    lost_recent: bool,
    lost_any: bool,
    /// Buffers reused from chunk to chunk: the stored payload, its
    /// decompressed bytes, the zstd context, and a records vector handed
    /// back by the consumer ([`TraceReader::recycle`]).
    payload: Vec<u8>,
    raw: Vec<u8>,
    dctx: Option<zstd::bulk::Decompressor<'static>>,
    spare: Vec<Record>,
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

fn le32(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

impl TraceReader {
    pub fn open(path: &Path) -> Result<TraceReader, TraceError> {
        let file = File::open(path).map_err(|err| TraceError::Io {
            path: path.display().to_string(),
            err,
        })?;
        TraceReader::new(Box::new(file), path.display().to_string())
    }

    /// A reader of `input`; `name` is used in I/O errors. Fails only when
    /// the input is not a trace or of an unknown version: a damaged header
    /// is a problem (the first item of [`TraceReader::next_chunk`]) and the
    /// chunks are read with a default header.
    pub fn new(mut input: Box<dyn TraceInput>, name: String) -> Result<TraceReader, TraceError> {
        let io = |err| TraceError::Io {
            path: name.clone(),
            err,
        };
        let end = input.seek(SeekFrom::End(0)).map_err(io)?;
        input.seek(SeekFrom::Start(0)).map_err(io)?;
        let mut r = TraceReader {
            name,
            input: BufReader::with_capacity(64 << 10, input),
            pos: 0,
            end,
            version: FORMAT_VERSION,
            header: Header::default(),
            out: VecDeque::new(),
            done: false,
            next_seq: 0,
            seen: HashMap::new(),
            records: 0,
            footer_at: None,
            problems: 0,
            lost_recent: false,
            lost_any: false,
            payload: Vec::new(),
            raw: Vec::new(),
            dctx: None,
            spare: Vec::new(),
        };
        let mut fixed = [0u8; 20];
        let n = read_full(&mut r.input, &mut fixed).map_err(|e| r.io(e))?;
        r.pos = n as u64;
        if n < 8 || &fixed[..8] != MAGIC {
            return Err(TraceError::NotATrace);
        }
        if n < 20 {
            r.done = true;
            r.header_problem(n as u64, "file ends inside the header".into());
            return Ok(r);
        }
        let version = u16::from_le_bytes([fixed[8], fixed[9]]);
        if version != FORMAT_VERSION && version != FORMAT_V1 {
            return Err(TraceError::Version { found: version });
        }
        r.version = version;
        match r.read_header(le32(&fixed, 12), le32(&fixed, 16)) {
            Ok(h) => r.header = h,
            Err(Err(e)) => return Err(e),
            Err(Ok((offset, why))) => {
                // The length failed with the rest: the chunks are found by
                // their magic, starting right after the fixed part.
                r.header_problem(offset, why);
                if r.resync(20).map_err(|e| r.io(e))?.is_none() {
                    r.at_end();
                }
            }
        }
        Ok(r)
    }

    /// The header JSON. `Err(Ok(..))`: damage (the chunks are still read);
    /// `Err(Err(..))`: a header that passed its checksum but is invalid.
    fn read_header(
        &mut self,
        len: u32,
        crc: u32,
    ) -> Result<Header, Result<(u64, String), TraceError>> {
        if len > HEADER_MAX {
            return Err(Ok((12, format!("header length {len} is implausible"))));
        }
        let mut json = vec![0u8; len as usize];
        let got = read_full(&mut self.input, &mut json).map_err(|e| Err(self.io(e)))?;
        self.pos += got as u64;
        if got < json.len() {
            return Err(Ok((20 + got as u64, "file ends inside the header".into())));
        }
        if crc32fast::hash(&json) != crc {
            return Err(Ok((20, "header checksum mismatch".into())));
        }
        let invalid = |why: String| Err(TraceError::Header { offset: 20, why });
        let h: Header = serde_json::from_slice(&json).map_err(|e| invalid(e.to_string()))?;
        if !super::page_size_ok(h.page_size) {
            return Err(invalid(format!(
                "page_size {} is not a power of two from 4096 to 1 MiB",
                h.page_size
            )));
        }
        Ok(h)
    }

    fn header_problem(&mut self, offset: u64, why: String) {
        self.header = Header {
            format_version: self.version,
            page_size: 4096,
            ..Header::default()
        };
        self.problem(TraceError::Header {
            offset,
            why: format!(
                "{why}; the chunks are read with a default header (page size 4096, no metadata)"
            ),
        });
    }

    fn io(&self, err: std::io::Error) -> TraceError {
        TraceError::Io {
            path: self.name.clone(),
            err,
        }
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The file's format version (1 or 2).
    pub fn version(&self) -> u16 {
        self.version
    }

    /// Bytes of the input read so far, and its length (for progress).
    pub fn position(&self) -> (u64, u64) {
        (self.pos.min(self.end), self.end)
    }

    /// A chunk whose header was good but whose body was not: lost alone.
    fn lost(&mut self, e: TraceError) {
        self.lost_recent = true;
        self.lost_any = true;
        self.problem(e);
    }

    fn problem(&mut self, e: TraceError) {
        self.problems += 1;
        if self.problems <= PROBLEMS_MAX {
            self.out.push_back(Err(e));
        }
    }

    /// The next chunk, or a problem (a bad chunk, a gap, the missing
    /// footer); `None` after the end of the input.
    pub fn next_chunk(&mut self) -> Option<Item> {
        loop {
            if let Some(item) = self.out.pop_front() {
                return Some(item);
            }
            if self.done {
                return None;
            }
            if let Err(e) = self.read_chunk() {
                self.done = true;
                return Some(Err(self.io(e)));
            }
        }
    }

    fn seek_to(&mut self, to: u64) -> std::io::Result<()> {
        // Relative, so that a target inside the buffer costs no read.
        let delta = to as i64 - self.pos as i64;
        self.input.seek_relative(delta)?;
        self.pos = to;
        Ok(())
    }

    /// Moves to the next chunk magic at or after `from` and returns its
    /// offset; `None` at the end of the input.
    fn resync(&mut self, from: u64) -> std::io::Result<Option<u64>> {
        self.seek_to(from)?;
        let mut last = 0u32;
        let magic = u32::from_be_bytes(*CHUNK_MAGIC);
        loop {
            let buf = match self.input.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                return Ok(None);
            }
            let n = buf.len();
            for (i, &b) in buf.iter().enumerate() {
                last = last << 8 | b as u32;
                if last == magic && self.pos + i as u64 + 1 >= from + 4 {
                    self.input.consume(i + 1);
                    let at = self.pos + i as u64 + 1 - 4;
                    self.pos += i as u64 + 1;
                    self.seek_to(at)?;
                    return Ok(Some(at));
                }
            }
            self.input.consume(n);
            self.pos += n as u64;
        }
    }

    /// A bad chunk at `offset`: reported, and reading goes on at the next
    /// magic after its start.
    fn bad(&mut self, offset: u64, why: String, truncated: bool) -> std::io::Result<()> {
        self.lost_recent = true;
        self.lost_any = true;
        let next = self.resync(offset + 1)?;
        let why = match next {
            Some(at) => format!("{why}; reading goes on at offset {at}"),
            None => format!("{why}; no chunk after it"),
        };
        self.problem(if truncated {
            TraceError::Truncated { offset, why }
        } else {
            TraceError::Corrupt { offset, why }
        });
        if next.is_none() {
            self.at_end();
        }
        Ok(())
    }

    fn at_end(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        if self.footer_at.is_none() {
            self.problem(TraceError::Truncated {
                offset: self.pos,
                why: "no footer: the trace was cut short (not finalized)".into(),
            });
        }
        if self.problems > PROBLEMS_MAX {
            self.out.push_back(Err(TraceError::Corrupt {
                offset: self.pos,
                why: format!(
                    "… and {} more problems before this offset (not listed)",
                    self.problems - PROBLEMS_MAX
                ),
            }));
        }
    }

    fn read_chunk(&mut self) -> std::io::Result<()> {
        let offset = self.pos;
        let hsize = if self.version == FORMAT_V1 {
            CHUNK_HEADER_V1
        } else {
            CHUNK_HEADER_V2
        };
        let mut h = [0u8; CHUNK_HEADER_V2];
        let n = read_full(&mut self.input, &mut h[..hsize])?;
        self.pos += n as u64;
        if n == 0 {
            self.at_end();
            return Ok(());
        }
        if n < 4 || &h[0..4] != CHUNK_MAGIC {
            return self.bad(offset, "no chunk magic".into(), false);
        }
        if n < hsize {
            return self.bad(
                offset,
                format!("chunk header has {n} of {hsize} bytes"),
                true,
            );
        }
        let (kind, codec) = (h[4], h[5]);
        let (count, raw_len, len) = (le32(&h, 8), le32(&h, 12), le32(&h, 16));
        let (seq, crc) = if self.version == FORMAT_V1 {
            (None, le32(&h, 20))
        } else {
            (Some(le32(&h, 20)), le32(&h, 24))
        };
        if len > CHUNK_RAW_MAX || raw_len > CHUNK_RAW_MAX || count > CHUNK_RECORDS_MAX {
            let why = format!(
                "chunk of {count} records, {raw_len} bytes ({len} stored) is over the limits \
                 ({CHUNK_RECORDS_MAX} records, {CHUNK_RAW_MAX} bytes)"
            );
            return self.bad(offset, why, false);
        }
        if self.pos + len as u64 > self.end {
            let got = self.end - self.pos;
            let why = format!("chunk payload has {got} of {len} bytes");
            return self.bad(offset, why, true);
        }
        let mut payload = std::mem::take(&mut self.payload);
        payload.clear();
        payload.resize(len as usize, 0);
        let got = read_full(&mut self.input, &mut payload)?;
        self.pos += got as u64;
        if got < payload.len() {
            let why = format!("chunk payload has {got} of {len} bytes");
            return self.bad(offset, why, true);
        }
        if chunk_crc(&h[..hsize], &payload) != crc {
            return self.bad(offset, "checksum mismatch".into(), false);
        }
        // From here the header is trusted: a failure loses this chunk only.
        let corrupt = |why: String| TraceError::Corrupt { offset, why };
        let raw = match codec {
            CODEC_RAW => payload,
            CODEC_ZSTD => {
                let mut raw = std::mem::take(&mut self.raw);
                let got = self.unzstd(&payload, raw_len as usize, &mut raw);
                self.payload = payload;
                match got {
                    Ok(n) if n == raw_len as usize => raw,
                    Ok(n) => {
                        self.lost(corrupt(format!("zstd gave {n} of {raw_len} bytes")));
                        return Ok(());
                    }
                    Err(e) => {
                        self.lost(corrupt(format!("zstd: {e}")));
                        return Ok(());
                    }
                }
            }
            c => {
                self.lost(corrupt(format!("unknown codec {c}")));
                return Ok(());
            }
        };
        if let Some(seq) = seq {
            if !self.check_seq(offset, seq) {
                return Ok(());
            }
        }
        let info = ChunkInfo {
            offset,
            stored_bytes: len,
            raw_bytes: raw_len,
            records: count,
        };
        if let Some(at) = self.footer_at {
            self.problem(corrupt(format!("chunk after the footer (at offset {at})")));
        }
        let body = match kind {
            KIND_RECORDS => {
                let mut records = std::mem::take(&mut self.spare);
                records.reserve(count as usize);
                match decode_records_into(&raw, &mut records) {
                    Ok(skipped) => {
                        let found = records.len() as u64 + skipped;
                        if found != count as u64 {
                            let why = format!("holds {found} records, its header says {count}");
                            self.problem(corrupt(why));
                        }
                        self.records += found;
                        ChunkBody::Records { records, skipped }
                    }
                    Err(e) => {
                        self.lost(corrupt(e));
                        return Ok(());
                    }
                }
            }
            KIND_FOOTER => match serde_json::from_slice::<super::Footer>(&raw) {
                Ok(f) => {
                    // Version 1 writers may leave the count at 0.
                    // A lost chunk was reported already.
                    let checked = !self.lost_any && (self.version != FORMAT_V1 || f.records != 0);
                    if checked && f.records != self.records {
                        let why = format!(
                            "the footer counts {} records, the chunks before it hold {}",
                            f.records, self.records
                        );
                        self.problem(corrupt(why));
                    }
                    self.footer_at = Some(offset);
                    ChunkBody::Footer(f)
                }
                Err(e) => {
                    self.lost(corrupt(format!("footer: {e}")));
                    return Ok(());
                }
            },
            // A chunk kind from a newer writer: skipped whole.
            _ => {
                self.records += count as u64;
                ChunkBody::Records {
                    records: Vec::new(),
                    skipped: count as u64,
                }
            }
        };
        // The bytes' buffer serves the next chunk.
        if codec == CODEC_RAW {
            self.payload = raw;
        } else {
            self.raw = raw;
        }
        self.out.push_back(Ok((info, body)));
        Ok(())
    }

    /// Decompresses a zstd payload into `raw` (cleared, grown to
    /// `raw_len`) with the reader's one context; the bytes it gave.
    fn unzstd(
        &mut self,
        payload: &[u8],
        raw_len: usize,
        raw: &mut Vec<u8>,
    ) -> std::io::Result<usize> {
        raw.clear();
        raw.reserve(raw_len);
        let dctx = match &mut self.dctx {
            Some(d) => d,
            None => self.dctx.insert(zstd::bulk::Decompressor::new()?),
        };
        dctx.decompress_to_buffer(payload, raw)
    }

    /// Takes back a batch of records its consumer is done with: the next
    /// chunk is decoded into its memory.
    pub fn recycle(&mut self, records: Vec<Record>) {
        if records.capacity() > self.spare.capacity() {
            self.spare = records;
        }
    }

    /// Checks a good chunk's sequence number; false for a repeat, whose
    /// records are dropped.
    fn check_seq(&mut self, offset: u64, seq: u32) -> bool {
        if let Some(&first) = self.seen.get(&seq) {
            self.problem(TraceError::Corrupt {
                offset,
                why: format!(
                    "chunk {seq} repeats the chunk at offset {first}: its records are left out"
                ),
            });
            return false;
        }
        self.seen.insert(seq, offset);
        let lost = std::mem::take(&mut self.lost_recent);
        if seq > self.next_seq && !lost {
            let (a, b) = (self.next_seq, seq - 1);
            let which = if a == b {
                format!("chunk {a} is")
            } else {
                format!("chunks {a} to {b} are")
            };
            self.problem(TraceError::Corrupt {
                offset,
                why: format!("{which} missing before chunk {seq} (or out of order)"),
            });
        } else if seq < self.next_seq {
            self.problem(TraceError::Corrupt {
                offset,
                why: format!(
                    "chunk {seq} is out of order (after chunk {})",
                    self.next_seq - 1
                ),
            });
        }
        self.next_seq = self.next_seq.max(seq.saturating_add(1));
        true
    }
}
