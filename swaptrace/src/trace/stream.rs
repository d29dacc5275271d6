//! A trace read a chunk at a time: the header first, then one batch of
//! records per good chunk, the footer and the problems at the end. Memory
//! is one chunk's records ([`CHUNK_RECORDS_MAX`]), whatever the trace's
//! length; [`read_trace`](super::read_trace) is the same reading kept whole.

use super::file::{ChunkBody, CHUNK_RECORDS_MAX};
use super::jsonl::{put_line, ExportStats, JsonlError};
use super::reader::TraceReader;
use super::{Footer, Header, Loaded, Record, TraceError};
use std::io::{BufWriter, Write};
use std::path::Path;

/// A trace being read batch by batch (see the module doc).
pub struct TraceStream {
    reader: TraceReader,
    header: Header,
    footer: Option<Footer>,
    problems: Vec<TraceError>,
    skipped: u64,
    chunks: usize,
    records: u64,
    /// The most records one batch held (the memory bound, for tests).
    max_batch: usize,
}

/// What a stream found besides its records, once read to the end.
#[derive(Debug, Default)]
pub struct StreamEnd {
    pub footer: Option<Footer>,
    /// As [`Loaded::problems`](super::Loaded): bad or missing chunks, no
    /// footer, a damaged header (at most [`PROBLEMS_MAX`](super::PROBLEMS_MAX) listed).
    pub problems: Vec<TraceError>,
    pub skipped: u64,
    /// Good chunks, the footer's included.
    pub chunks: usize,
    pub records: u64,
}

impl StreamEnd {
    /// The trace as read, with `records` (those kept, if any).
    pub fn into_loaded(self, header: Header, records: Vec<Record>) -> Loaded {
        Loaded {
            header,
            records,
            footer: self.footer,
            problems: self.problems,
            skipped: self.skipped,
            chunks: Vec::new(),
        }
    }
}

impl TraceStream {
    /// Fails as [`read_trace`](super::read_trace) does: the file cannot be
    /// opened, is not a trace, or has an unknown version.
    pub fn open(path: &Path) -> Result<TraceStream, TraceError> {
        Ok(TraceStream::new(TraceReader::open(path)?))
    }

    /// A stream of a trace in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<TraceStream, TraceError> {
        let r = TraceReader::new(Box::new(std::io::Cursor::new(bytes)), "(memory)".into())?;
        Ok(TraceStream::new(r))
    }

    pub fn new(reader: TraceReader) -> TraceStream {
        TraceStream {
            header: reader.header().clone(),
            reader,
            footer: None,
            problems: Vec::new(),
            skipped: 0,
            chunks: 0,
            records: 0,
            max_batch: 0,
        }
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The records of the next good chunk (never empty); None at the end.
    /// Problems and the footer met on the way are kept for [`finish`](Self::finish).
    pub fn next_batch(&mut self) -> Option<Vec<Record>> {
        while let Some(item) = self.reader.next_chunk() {
            match item {
                Ok((_, ChunkBody::Records { records, skipped })) => {
                    self.chunks += 1;
                    self.skipped += skipped;
                    if records.is_empty() {
                        continue;
                    }
                    self.records += records.len() as u64;
                    self.max_batch = self.max_batch.max(records.len());
                    return Some(records);
                }
                Ok((_, ChunkBody::Footer(f))) => {
                    self.chunks += 1;
                    self.footer = Some(f);
                }
                Err(e) => self.problems.push(e),
            }
        }
        None
    }

    /// Hands a batch back once read: the next chunk is decoded into its
    /// memory instead of fresh pages.
    pub fn recycle(&mut self, batch: Vec<Record>) {
        self.reader.recycle(batch);
    }

    /// Bytes of the file read so far and its length.
    pub fn position(&self) -> (u64, u64) {
        self.reader.position()
    }

    /// Problems found so far.
    pub fn problems(&self) -> &[TraceError] {
        &self.problems
    }

    /// The most records one batch has held: at most [`CHUNK_RECORDS_MAX`].
    pub fn max_batch(&self) -> usize {
        self.max_batch
    }

    /// Reads what is left (dropping its records) and returns the rest.
    pub fn finish(mut self) -> StreamEnd {
        while let Some(batch) = self.next_batch() {
            self.recycle(batch);
        }
        debug_assert!(self.max_batch <= CHUNK_RECORDS_MAX as usize);
        StreamEnd {
            footer: self.footer,
            problems: self.problems,
            skipped: self.skipped,
            chunks: self.chunks,
            records: self.records,
        }
    }

    /// The trace loaded with only the records `keep` keeps: memory grows
    /// with those, not with the trace. `chunks` stays empty; `each` sees
    /// the stream after every batch (progress).
    pub fn load_where(
        mut self,
        mut keep: impl FnMut(&Record) -> bool,
        mut each: impl FnMut(&TraceStream),
    ) -> Loaded {
        let mut records = Vec::new();
        while let Some(batch) = self.next_batch() {
            records.extend(batch.into_iter().filter(|r| keep(r)));
            each(&self);
        }
        let header = self.header.clone();
        self.finish().into_loaded(header, records)
    }
}

impl Iterator for TraceStream {
    type Item = Vec<Record>;

    fn next(&mut self) -> Option<Vec<Record>> {
        self.next_batch()
    }
}

/// [`export_jsonl_file`](super::export_jsonl_file) of a stream, in JSON Lines; `each` sees it after every batch.
pub fn export_jsonl_stream<W: Write>(
    mut s: TraceStream,
    out: W,
    mut each: impl FnMut(&TraceStream),
) -> Result<ExportStats, JsonlError> {
    let mut out = BufWriter::new(out);
    put_line(&mut out, "header", s.header())?;
    while let Some(batch) = s.next_batch() {
        for r in &batch {
            put_line(&mut out, "record", r)?;
        }
        s.recycle(batch);
        each(&s);
    }
    // The footer is the last line.
    let end = s.finish();
    if let Some(f) = &end.footer {
        put_line(&mut out, "footer", f)?;
    }
    out.flush()?;
    Ok(ExportStats {
        records: end.records,
        footer: end.footer.is_some(),
        skipped: end.skipped,
        problems: end.problems.iter().map(|p| p.to_string()).collect(),
    })
}
