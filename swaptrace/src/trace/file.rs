//! Trace file writer, and the whole-trace read. A crash loses at most the
//! chunk being written; the reader (`reader.rs`) reports a bad chunk with
//! its offset and goes on.

use super::codec::{encode_record, DeltaState};
use super::output::{OutputFile, OutputPolicy};
use super::reader::TraceReader;
use super::{Footer, Header, Record, TraceError, FORMAT_VERSION, MAGIC};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub(super) const CHUNK_MAGIC: &[u8; 4] = b"CHNK";
/// Chunk header bytes: version 1 has no sequence number.
pub(super) const CHUNK_HEADER_V1: usize = 24;
pub(super) const CHUNK_HEADER_V2: usize = 28;
pub(super) const KIND_RECORDS: u8 = 1;
pub(super) const KIND_FOOTER: u8 = 2;
pub(super) const CODEC_RAW: u8 = 0;
pub(super) const CODEC_ZSTD: u8 = 1;
/// Uncompressed bytes of records per chunk before it is written.
const CHUNK_TARGET: usize = 256 << 10;
/// Most uncompressed (and stored) bytes one chunk may hold. Writers stay
/// below it, readers refuse a chunk above it: what one chunk expands to
/// is bounded, however well it compresses.
pub const CHUNK_RAW_MAX: u32 = 1 << 20;
/// Most records one chunk may hold (writers flush at it).
pub const CHUNK_RECORDS_MAX: u32 = 1 << 18;
/// zstd level of a writer unless set ([`TraceWriter::set_level`]): fast,
/// for traces written at memory speed (synth, import).
const ZSTD_LEVEL: i32 = 3;
/// The level `record` sets: its events come at most a few MB/s of
/// records, which level 7 compresses ~7% smaller at a fraction of a core.
pub const RECORD_ZSTD_LEVEL: i32 = 7;
/// A partly filled chunk is written after this long, so a crash loses little.
pub const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// Mode of a new trace: it holds commands and addresses.
pub const TRACE_MODE: u32 = 0o600;

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> TraceError + '_ {
    move |err| TraceError::Io {
        path: path.display().to_string(),
        err,
    }
}

/// Writes a trace (format version 2) to a temporary file beside the
/// target, put in place by [`TraceWriter::finish`]; dropped before, the
/// temporary file is removed.
pub struct TraceWriter {
    path: PathBuf,
    out: BufWriter<File>,
    file: Option<OutputFile>,
    seq: u32,
    buf: Vec<u8>,
    st: DeltaState,
    count: u32,
    records: u64,
    bytes: u64,
    last_flush: Instant,
    level: i32,
}

impl TraceWriter {
    /// The zstd level of the chunks written from now on.
    pub fn set_level(&mut self, level: i32) {
        self.level = level;
    }

    /// Replaces whatever is at `path` (never an input, nor a symlink as
    /// root): see [`TraceWriter::create_with`].
    pub fn create(path: &Path, header: &Header) -> Result<TraceWriter, TraceError> {
        TraceWriter::create_with(path, header, &OutputPolicy::replace())
    }

    pub fn create_with(
        path: &Path,
        header: &Header,
        policy: &OutputPolicy,
    ) -> Result<TraceWriter, TraceError> {
        let file = OutputFile::create(path, policy, TRACE_MODE)?;
        let mut out = BufWriter::new(file.file().try_clone().map_err(io_err(path))?);
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
            file: Some(file),
            seq: 0,
            buf: Vec::with_capacity(CHUNK_TARGET + 4096),
            st: DeltaState::default(),
            count: 0,
            records: 0,
            bytes: head.len() as u64,
            last_flush: Instant::now(),
            level: ZSTD_LEVEL,
        })
    }

    /// Puts the trace in place now rather than at [`TraceWriter::finish`]
    /// ([`OutputFile::publish`]): a killed recording leaves it readable.
    pub fn publish(&mut self) -> Result<(), TraceError> {
        self.out.flush().map_err(io_err(&self.path))?;
        if let Some(f) = &mut self.file {
            f.publish()?;
        }
        Ok(())
    }

    pub fn push(&mut self, r: &Record) -> Result<(), TraceError> {
        let (len, st) = (self.buf.len(), self.st.clone());
        encode_record(&mut self.buf, &mut self.st, r);
        if self.buf.len() > CHUNK_RAW_MAX as usize {
            // Over the chunk limit: the record starts a chunk of its own.
            self.buf.truncate(len);
            self.st = st;
            self.flush_chunk()?;
            encode_record(&mut self.buf, &mut self.st, r);
            if self.buf.len() > CHUNK_RAW_MAX as usize {
                let size = self.buf.len();
                self.buf.clear();
                self.st = DeltaState::default();
                return Err(TraceError::Corrupt {
                    offset: self.bytes,
                    why: format!(
                        "a record of {size} bytes is over the chunk limit of {CHUNK_RAW_MAX}"
                    ),
                });
            }
        }
        self.count += 1;
        self.records += 1;
        if self.buf.len() >= CHUNK_TARGET || self.count >= CHUNK_RECORDS_MAX {
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
        let (codec, payload) = match zstd::bulk::compress(raw, self.level) {
            Ok(z) if z.len() < raw.len() => (CODEC_ZSTD, z),
            _ => (CODEC_RAW, raw.to_vec()),
        };
        if raw.len() > CHUNK_RAW_MAX as usize {
            return Err(TraceError::Corrupt {
                offset: self.bytes,
                why: format!(
                    "a chunk of {} bytes is over the limit of {CHUNK_RAW_MAX}",
                    raw.len()
                ),
            });
        }
        let mut h = [0u8; CHUNK_HEADER_V2];
        h[0..4].copy_from_slice(CHUNK_MAGIC);
        h[4] = kind;
        h[5] = codec;
        h[8..12].copy_from_slice(&count.to_le_bytes());
        h[12..16].copy_from_slice(&(raw.len() as u32).to_le_bytes());
        h[16..20].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        h[20..24].copy_from_slice(&self.seq.to_le_bytes());
        let crc = chunk_crc(&h, &payload);
        h[24..28].copy_from_slice(&crc.to_le_bytes());
        self.out.write_all(&h).map_err(io_err(&self.path))?;
        self.out.write_all(&payload).map_err(io_err(&self.path))?;
        self.out.flush().map_err(io_err(&self.path))?;
        self.bytes += (CHUNK_HEADER_V2 + payload.len()) as u64;
        self.seq = self.seq.wrapping_add(1);
        Ok(())
    }

    pub fn records(&self) -> u64 {
        self.records
    }

    /// Bytes written so far (buffered records not included).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Writes the remaining records and the footer (its record count set
    /// to what was written), syncs the file and puts it in place.
    pub fn finish(mut self, footer: &Footer) -> Result<u64, TraceError> {
        self.flush_chunk()?;
        let footer = Footer {
            records: self.records,
            ..footer.clone()
        };
        let json = serde_json::to_vec(&footer).map_err(|e| TraceError::Header {
            offset: self.bytes,
            why: e.to_string(),
        })?;
        self.write_chunk(KIND_FOOTER, 0, &json)?;
        if let Some(file) = self.file.take() {
            file.commit()?;
        }
        Ok(self.bytes)
    }
}

/// CRC-32 of a chunk header without its magic and CRC (version 1: bytes
/// 4..20; version 2: 4..24, with the sequence number), then the payload.
pub(super) fn chunk_crc(h: &[u8], payload: &[u8]) -> u32 {
    let mut c = crc32fast::Hasher::new();
    c.update(&h[4..h.len() - 4]);
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
    /// The VMA bounds the trace recorded: (mm, start, end).
    pub fn vmas(&self) -> Vec<(u32, u64, u64)> {
        self.records
            .iter()
            .filter_map(|r| match *r {
                Record::Vma { mm, start, end, .. } => Some((mm, start, end)),
                _ => None,
            })
            .collect()
    }

    /// A /proc/vmstat counter's change over the recording (end - start),
    /// when the header and the footer both have it.
    pub fn vmstat_delta(&self, counter: &str) -> Option<i64> {
        self.header.vmstat_delta(self.footer.as_ref(), counter)
    }
}

/// Reads every readable chunk. Fails only when the file cannot be opened,
/// is not a trace or has an unknown version; every problem (a damaged
/// header, bad or missing chunks, no footer) is in `problems`.
pub fn read_trace(path: &Path) -> Result<Loaded, TraceError> {
    load(TraceReader::open(path)?)
}

/// [`read_trace`] of a trace in memory.
pub fn read_trace_bytes(bytes: Vec<u8>) -> Result<Loaded, TraceError> {
    load(TraceReader::new(
        Box::new(std::io::Cursor::new(bytes)),
        "(memory)".into(),
    )?)
}

fn load(mut r: TraceReader) -> Result<Loaded, TraceError> {
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
