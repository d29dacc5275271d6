//! A trace read a chunk at a time: the header first, then one batch of
//! records per good chunk, the footer and the problems at the end. Memory
//! is a few chunks' records ([`CHUNK_RECORDS_MAX`] each), whatever the
//! trace's length; [`read_trace`](super::read_trace) is the same reading
//! kept whole. On a machine of several cores a thread reads and decodes the
//! next chunk while the consumer works on this one ([`AHEAD_CHUNKS`]).

use super::file::{ChunkBody, ChunkInfo, CHUNK_RECORDS_MAX};
use super::jsonl::{put_line, ExportStats, JsonlError};
use super::reader::TraceReader;
use super::{Footer, Header, Loaded, Record, TraceError};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender};
use std::thread::JoinHandle;

/// Chunks queued between the reading thread and the consumer, each at most
/// [`CHUNK_RECORDS_MAX`] records. 0: a hand-over, the thread decoding one
/// chunk ahead (one queued more cost 5–10 MiB and gained nothing measurable).
pub const AHEAD_CHUNKS: usize = 0;

type Item = Result<(ChunkInfo, ChunkBody), TraceError>;

/// Where a stream's chunks come from.
enum Source {
    /// Read and decoded when asked.
    Inline(Box<TraceReader>),
    /// Read and decoded ahead by a thread.
    Ahead(Ahead),
}

/// A thread that owns the reader: it sends each chunk with the position
/// after it, and decodes into the batches the consumer hands back.
struct Ahead {
    chunks: Option<Receiver<(Item, (u64, u64))>>,
    spares: Sender<Vec<Record>>,
    worker: Option<JoinHandle<()>>,
    position: (u64, u64),
}

impl Source {
    /// Reads ahead when the machine has a core to spare and a thread starts.
    fn new(reader: TraceReader) -> Source {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        if cores < 2 {
            return Source::inline(reader);
        }
        let position = reader.position();
        let (reader_tx, reader_rx) = sync_channel::<TraceReader>(1);
        let (tx, rx) = sync_channel(AHEAD_CHUNKS);
        let (spares, spares_rx) = channel::<Vec<Record>>();
        let worker = std::thread::Builder::new()
            .name("trace-read".into())
            .spawn(move || {
                let Ok(mut reader) = reader_rx.recv() else {
                    return;
                };
                loop {
                    while let Ok(v) = spares_rx.try_recv() {
                        reader.recycle(v);
                    }
                    let Some(item) = reader.next_chunk() else {
                        return;
                    };
                    // The consumer is gone (dropped early): stop.
                    if tx.send((item, reader.position())).is_err() {
                        return;
                    }
                }
            });
        match worker {
            Ok(worker) => {
                // The thread is alive and waits for it: it cannot be refused.
                let _ = reader_tx.send(reader);
                Source::Ahead(Ahead {
                    chunks: Some(rx),
                    spares,
                    worker: Some(worker),
                    position,
                })
            }
            Err(_) => Source::inline(reader),
        }
    }

    fn inline(reader: TraceReader) -> Source {
        Source::Inline(Box::new(reader))
    }

    fn next_chunk(&mut self) -> Option<Item> {
        match self {
            Source::Inline(r) => r.next_chunk(),
            Source::Ahead(a) => {
                let got = a.chunks.as_ref()?.recv();
                match got {
                    Ok((item, position)) => {
                        a.position = position;
                        Some(item)
                    }
                    Err(_) => {
                        a.chunks = None;
                        // Only a panic ends the thread before the end of
                        // the input: say so rather than end short.
                        let failed = a.worker.take().is_some_and(|w| w.join().is_err());
                        failed.then(|| {
                            Err(TraceError::Corrupt {
                                offset: a.position.0,
                                why: "the reading thread failed here: the rest of the trace is not read"
                                    .into(),
                            })
                        })
                    }
                }
            }
        }
    }

    fn recycle(&mut self, batch: Vec<Record>) {
        match self {
            Source::Inline(r) => r.recycle(batch),
            // A thread that is gone needs no memory.
            Source::Ahead(a) => drop(a.spares.send(batch)),
        }
    }

    fn position(&self) -> (u64, u64) {
        match self {
            Source::Inline(r) => r.position(),
            Source::Ahead(a) => a.position,
        }
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        // The thread's next send fails, and it ends.
        self.chunks = None;
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

/// A trace being read batch by batch (see the module doc).
pub struct TraceStream {
    reader: Source,
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
        TraceStream::from_bytes_ahead(bytes, true)
    }

    /// [`TraceStream::from_bytes`], read ahead by a thread or (`ahead`
    /// false) on the caller's: both give the same batches.
    pub fn from_bytes_ahead(bytes: Vec<u8>, ahead: bool) -> Result<TraceStream, TraceError> {
        let r = TraceReader::new(Box::new(std::io::Cursor::new(bytes)), "(memory)".into())?;
        Ok(match ahead {
            true => TraceStream::new(r),
            false => TraceStream::with_source(r, Source::inline),
        })
    }

    pub fn new(reader: TraceReader) -> TraceStream {
        TraceStream::with_source(reader, Source::new)
    }

    fn with_source(reader: TraceReader, source: fn(TraceReader) -> Source) -> TraceStream {
        TraceStream {
            header: reader.header().clone(),
            reader: source(reader),
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
