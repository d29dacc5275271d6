//! Trace file writer and reader. A crash loses at most the chunk being
//! written; the reader reports a bad chunk with its offset and goes on.

use super::codec::{decode_records, encode_record, DeltaState};
use super::{Footer, Header, Record, TraceError, FORMAT_VERSION, MAGIC};
use std::fs::File;
use std::io::{BufReader, BufWriter, ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const CHUNK_MAGIC: &[u8; 4] = b"CHNK";
const CHUNK_HEADER: usize = 24;
const KIND_RECORDS: u8 = 1;
const KIND_FOOTER: u8 = 2;
const CODEC_RAW: u8 = 0;
const CODEC_ZSTD: u8 = 1;
/// Uncompressed bytes of records per chunk before it is written.
const CHUNK_TARGET: usize = 256 << 10;
/// Largest chunk payload accepted by the reader (guards allocations).
const CHUNK_MAX: u32 = 64 << 20;
const HEADER_MAX: u32 = 16 << 20;
const ZSTD_LEVEL: i32 = 3;
/// A partly filled chunk is written after this long, so a crash loses little.
pub const FLUSH_EVERY: Duration = Duration::from_secs(1);

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> TraceError + '_ {
    move |err| TraceError::Io {
        path: path.display().to_string(),
        err,
    }
}

pub struct TraceWriter {
    path: PathBuf,
    out: BufWriter<File>,
    buf: Vec<u8>,
    st: DeltaState,
    count: u32,
    records: u64,
    bytes: u64,
    last_flush: Instant,
}

impl TraceWriter {
    pub fn create(path: &Path, header: &Header) -> Result<TraceWriter, TraceError> {
        let file = File::create(path).map_err(io_err(path))?;
        let mut out = BufWriter::new(file);
        let json = serde_json::to_vec(header).map_err(|e| TraceError::Header {
            offset: 0,
            why: e.to_string(),
        })?;
        let mut head = Vec::with_capacity(20 + json.len());
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        head.extend_from_slice(&0u16.to_le_bytes());
        head.extend_from_slice(&(json.len() as u32).to_le_bytes());
        head.extend_from_slice(&crc32fast::hash(&json).to_le_bytes());
        head.extend_from_slice(&json);
        out.write_all(&head).map_err(io_err(path))?;
        out.flush().map_err(io_err(path))?;
        Ok(TraceWriter {
            path: path.to_path_buf(),
            out,
            buf: Vec::with_capacity(CHUNK_TARGET + 4096),
            st: DeltaState::default(),
            count: 0,
            records: 0,
            bytes: head.len() as u64,
            last_flush: Instant::now(),
        })
    }

    pub fn push(&mut self, r: &Record) -> Result<(), TraceError> {
        encode_record(&mut self.buf, &mut self.st, r);
        self.count += 1;
        self.records += 1;
        if self.buf.len() >= CHUNK_TARGET {
            self.flush_chunk()?;
        }
        Ok(())
    }

    /// Writes the buffered records when the last write is older than [`FLUSH_EVERY`].
    pub fn tick(&mut self) -> Result<(), TraceError> {
        if self.count > 0 && self.last_flush.elapsed() >= FLUSH_EVERY {
            self.flush_chunk()?;
        }
        Ok(())
    }

    pub fn flush_chunk(&mut self) -> Result<(), TraceError> {
        self.last_flush = Instant::now();
        if self.count == 0 {
            return Ok(());
        }
        let raw = std::mem::take(&mut self.buf);
        self.write_chunk(KIND_RECORDS, self.count, &raw)?;
        self.buf = raw;
        self.buf.clear();
        self.count = 0;
        self.st = DeltaState::default();
        Ok(())
    }

    fn write_chunk(&mut self, kind: u8, count: u32, raw: &[u8]) -> Result<(), TraceError> {
        let (codec, payload) = match zstd::bulk::compress(raw, ZSTD_LEVEL) {
            Ok(z) if z.len() < raw.len() => (CODEC_ZSTD, z),
            _ => (CODEC_RAW, raw.to_vec()),
        };
        let mut h = [0u8; CHUNK_HEADER];
        h[0..4].copy_from_slice(CHUNK_MAGIC);
        h[4] = kind;
        h[5] = codec;
        h[8..12].copy_from_slice(&count.to_le_bytes());
        h[12..16].copy_from_slice(&(raw.len() as u32).to_le_bytes());
        h[16..20].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        let crc = chunk_crc(&h, &payload);
        h[20..24].copy_from_slice(&crc.to_le_bytes());
        self.out.write_all(&h).map_err(io_err(&self.path))?;
        self.out.write_all(&payload).map_err(io_err(&self.path))?;
        self.out.flush().map_err(io_err(&self.path))?;
        self.bytes += (CHUNK_HEADER + payload.len()) as u64;
        Ok(())
    }

    pub fn records(&self) -> u64 {
        self.records
    }

    /// Bytes written so far (buffered records not included).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Writes the remaining records and the footer, and syncs the file.
    pub fn finish(mut self, footer: &Footer) -> Result<u64, TraceError> {
        self.flush_chunk()?;
        let json = serde_json::to_vec(footer).map_err(|e| TraceError::Header {
            offset: self.bytes,
            why: e.to_string(),
        })?;
        self.write_chunk(KIND_FOOTER, 0, &json)?;
        self.out.get_ref().sync_all().map_err(io_err(&self.path))?;
        Ok(self.bytes)
    }
}

fn chunk_crc(h: &[u8; CHUNK_HEADER], payload: &[u8]) -> u32 {
    let mut c = crc32fast::Hasher::new();
    c.update(&h[4..20]);
    c.update(payload);
    c.finalize()
}

/// What one chunk held.
#[derive(Debug)]
pub enum ChunkBody {
    Records { records: Vec<Record>, skipped: u64 },
    Footer(Footer),
}

#[derive(Debug, Clone, Copy)]
pub struct ChunkInfo {
    pub offset: u64,
    pub stored_bytes: u32,
    pub raw_bytes: u32,
    pub records: u32,
}

pub struct TraceReader {
    path: PathBuf,
    input: BufReader<Box<dyn Read + Send>>,
    pos: u64,
    header: Header,
    done: bool,
}

impl TraceReader {
    pub fn open(path: &Path) -> Result<TraceReader, TraceError> {
        let file = File::open(path).map_err(io_err(path))?;
        let mut input: BufReader<Box<dyn Read + Send>> =
            BufReader::with_capacity(1 << 20, Box::new(file));
        let mut fixed = [0u8; 20];
        let n = read_full(&mut input, &mut fixed).map_err(io_err(path))?;
        if n < 8 || &fixed[..8] != MAGIC {
            return Err(TraceError::NotATrace);
        }
        if n < 20 {
            return Err(TraceError::Header {
                offset: n as u64,
                why: "file ends inside the header".into(),
            });
        }
        let version = u16::from_le_bytes([fixed[8], fixed[9]]);
        if version != FORMAT_VERSION {
            return Err(TraceError::Version { found: version });
        }
        let len = u32::from_le_bytes([fixed[12], fixed[13], fixed[14], fixed[15]]);
        let crc = u32::from_le_bytes([fixed[16], fixed[17], fixed[18], fixed[19]]);
        if len > HEADER_MAX {
            return Err(TraceError::Header {
                offset: 12,
                why: format!("header length {len} is implausible"),
            });
        }
        let mut json = vec![0u8; len as usize];
        let got = read_full(&mut input, &mut json).map_err(io_err(path))?;
        if got < json.len() {
            return Err(TraceError::Header {
                offset: 20 + got as u64,
                why: "file ends inside the header".into(),
            });
        }
        if crc32fast::hash(&json) != crc {
            return Err(TraceError::Header {
                offset: 20,
                why: "header checksum mismatch".into(),
            });
        }
        let header: Header = serde_json::from_slice(&json).map_err(|e| TraceError::Header {
            offset: 20,
            why: e.to_string(),
        })?;
        if !super::page_size_ok(header.page_size) {
            return Err(TraceError::Header {
                offset: 20,
                why: format!(
                    "page_size {} is not a power of two from 4096 to 1 MiB",
                    header.page_size
                ),
            });
        }
        Ok(TraceReader {
            path: path.to_path_buf(),
            input,
            pos: 20 + len as u64,
            header,
            done: false,
        })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The next chunk. A corrupt chunk is an error and the reader moves to
    /// the next chunk magic; `None` at the end of the file.
    pub fn next_chunk(&mut self) -> Option<Result<(ChunkInfo, ChunkBody), TraceError>> {
        if self.done {
            return None;
        }
        let offset = self.pos;
        let mut h = [0u8; CHUNK_HEADER];
        let n = match read_full(&mut self.input, &mut h) {
            Ok(n) => n,
            Err(e) => return self.stop(io_err(&self.path)(e)),
        };
        self.pos += n as u64;
        if n == 0 {
            self.done = true;
            return None;
        }
        if &h[0..4] != CHUNK_MAGIC {
            let err = TraceError::Corrupt {
                offset,
                why: "bad chunk magic".into(),
            };
            return Some(self.resync(&h[1..n], err));
        }
        if n < CHUNK_HEADER {
            return self.stop(TraceError::Truncated {
                offset,
                why: format!("chunk header has {n} of {CHUNK_HEADER} bytes"),
            });
        }
        let le = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        let (count, raw_len, len, crc) = (le(8), le(12), le(16), le(20));
        if len > CHUNK_MAX || raw_len > CHUNK_MAX {
            let err = TraceError::Corrupt {
                offset,
                why: format!("chunk length {len} is implausible"),
            };
            return Some(self.resync(&h[4..], err));
        }
        let mut payload = vec![0u8; len as usize];
        let got = match read_full(&mut self.input, &mut payload) {
            Ok(g) => g,
            Err(e) => return self.stop(io_err(&self.path)(e)),
        };
        self.pos += got as u64;
        if got < payload.len() {
            return self.stop(TraceError::Truncated {
                offset,
                why: format!("chunk payload has {got} of {len} bytes"),
            });
        }
        if chunk_crc(&h, &payload) != crc {
            return Some(Err(TraceError::Corrupt {
                offset,
                why: "checksum mismatch".into(),
            }));
        }
        let corrupt = |why: String| TraceError::Corrupt { offset, why };
        let raw = match h[5] {
            CODEC_RAW => payload,
            CODEC_ZSTD => match zstd::bulk::decompress(&payload, raw_len as usize) {
                Ok(r) => r,
                Err(e) => return Some(Err(corrupt(format!("zstd: {e}")))),
            },
            c => return Some(Err(corrupt(format!("unknown codec {c}")))),
        };
        let info = ChunkInfo {
            offset,
            stored_bytes: len,
            raw_bytes: raw_len,
            records: count,
        };
        let body = match h[4] {
            KIND_RECORDS => match decode_records(&raw) {
                Ok((records, skipped)) => ChunkBody::Records { records, skipped },
                Err(e) => return Some(Err(corrupt(e))),
            },
            KIND_FOOTER => match serde_json::from_slice(&raw) {
                Ok(f) => ChunkBody::Footer(f),
                Err(e) => return Some(Err(corrupt(format!("footer: {e}")))),
            },
            // A chunk kind from a newer writer: skipped whole.
            _ => ChunkBody::Records {
                records: Vec::new(),
                skipped: count as u64,
            },
        };
        Some(Ok((info, body)))
    }

    fn stop(&mut self, e: TraceError) -> Option<Result<(ChunkInfo, ChunkBody), TraceError>> {
        self.done = true;
        Some(Err(e))
    }

    /// Scans forward (starting with `seen`, bytes already read) for the next
    /// chunk magic and leaves the reader there.
    fn resync(
        &mut self,
        seen: &[u8],
        err: TraceError,
    ) -> Result<(ChunkInfo, ChunkBody), TraceError> {
        let mut window: Vec<u8> = seen.to_vec();
        let mut byte = [0u8; 1];
        loop {
            if let Some(i) = window.windows(4).position(|w| w == CHUNK_MAGIC) {
                let rest = window.split_off(i);
                self.pos -= rest.len() as u64;
                let old =
                    std::mem::replace(&mut self.input, BufReader::new(Box::new(std::io::empty())));
                self.input = BufReader::new(Box::new(std::io::Cursor::new(rest).chain(old)));
                return Err(err);
            }
            if window.len() > 3 {
                window.drain(..window.len() - 3);
            }
            match self.input.read(&mut byte) {
                Ok(0) | Err(_) => {
                    self.done = true;
                    return Err(err);
                }
                Ok(_) => {
                    self.pos += 1;
                    window.push(byte[0]);
                }
            }
        }
    }
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

/// A whole trace in memory, with what could not be read.
#[derive(Debug)]
pub struct Loaded {
    pub header: Header,
    pub records: Vec<Record>,
    pub footer: Option<Footer>,
    /// Bad or truncated chunks; every good chunk was still read.
    pub problems: Vec<TraceError>,
    /// Records of kinds this build does not know.
    pub skipped: u64,
    pub chunks: Vec<ChunkInfo>,
}

impl Loaded {
    /// A /proc/vmstat counter's change over the recording (end - start),
    /// when the header and the footer both have it.
    pub fn vmstat_delta(&self, counter: &str) -> Option<i64> {
        let a = *self.header.vmstat_start.get(counter)? as i64;
        let b = *self.footer.as_ref()?.vmstat_end.get(counter)? as i64;
        Some(b - a)
    }
}

/// Reads every readable chunk. Fails only when the header is unreadable.
pub fn read_trace(path: &Path) -> Result<Loaded, TraceError> {
    let mut r = TraceReader::open(path)?;
    let mut loaded = Loaded {
        header: r.header().clone(),
        records: Vec::new(),
        footer: None,
        problems: Vec::new(),
        skipped: 0,
        chunks: Vec::new(),
    };
    while let Some(chunk) = r.next_chunk() {
        match chunk {
            Ok((info, ChunkBody::Records { records, skipped })) => {
                loaded.chunks.push(info);
                loaded.records.extend(records);
                loaded.skipped += skipped;
            }
            Ok((info, ChunkBody::Footer(f))) => {
                loaded.chunks.push(info);
                loaded.footer = Some(f);
            }
            Err(e) => loaded.problems.push(e),
        }
    }
    Ok(loaded)
}
