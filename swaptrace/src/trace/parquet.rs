//! Parquet export: every record as a row of one wide table (`kind` names
//! the record; the columns another kind has are null), the header as
//! key-value metadata. Schema and example queries: `docs/parquet.md`.
//!
//! The trace is read one chunk at a time and written one row group per
//! [`ROW_GROUP_ROWS`] rows: memory holds at most one row group's encoded
//! pages and one batch of [`BATCH_ROWS`] rows, whatever the trace's length.

use super::file::ChunkBody;
use super::{
    Footer, Header, OutKind, RaSource, ReadKind, Record, Syscall, TraceError, TraceReader,
};
use arrow_array::builder::{
    BooleanBufferBuilder, BooleanBuilder, Int32Builder, Int64Builder, ListBuilder, StringBuilder,
    StructBuilder, TimestampNanosecondBuilder,
};
use arrow_array::{ArrayRef, Int32Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use serde::Serialize;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// Rows per row group: the unit a query engine skips or reads in parallel.
pub const ROW_GROUP_ROWS: usize = 1 << 20;
/// Rows built in memory before they are handed to the writer.
pub const BATCH_ROWS: usize = 1 << 16;
/// Written in the `swaptrace_schema` metadata; bumped when a column changes.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum ParquetError {
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error("Parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    #[error("Arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    #[error("header JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("the Parquet writer thread stopped unexpectedly")]
    WriterThread,
    #[error("row {row}: column {column}: {why}")]
    Row {
        row: usize,
        column: String,
        why: String,
    },
}

/// What a Parquet export wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ParquetStats {
    pub records: u64,
    pub row_groups: u64,
    pub footer: bool,
    /// Records of kinds this build does not know (not exported).
    pub skipped: u64,
    /// Unreadable chunks of the trace: their records are missing.
    pub problems: Vec<String>,
}

/// The file's key-value metadata: the header whole, and the keys a query
/// over files of many hosts selects on.
fn metadata(header: &Header, host: &str) -> Result<Vec<KeyValue>, ParquetError> {
    Ok(vec![
        KeyValue::new("swaptrace.header".into(), serde_json::to_string(header)?),
        KeyValue::new("host".into(), host.to_string()),
        KeyValue::new("kernel".into(), header.kernel_release.clone()),
        KeyValue::new("recorded_at".into(), super::utc(header.realtime_start_ns)),
        KeyValue::new(
            "swaptrace_version".into(),
            env!("CARGO_PKG_VERSION").to_string(),
        ),
        KeyValue::new("swaptrace_schema".into(), SCHEMA_VERSION.to_string()),
    ])
}

/// How to export.
#[derive(Clone, Debug)]
pub struct ParquetOptions {
    /// The name the rows carry in `host` (default: [`Header::host`]).
    pub host: Option<String>,
    /// Rows per row group.
    pub row_group_rows: usize,
}

impl Default for ParquetOptions {
    fn default() -> ParquetOptions {
        ParquetOptions {
            host: None,
            row_group_rows: ROW_GROUP_ROWS,
        }
    }
}

/// zstd pages (the codec traces already use), `rows` per row group.
pub(crate) fn props(kv: Vec<KeyValue>, rows: usize) -> Result<WriterProperties, ParquetError> {
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1)?))
        .set_max_row_group_row_count(Some(rows.max(1)))
        .set_key_value_metadata(Some(kv));
    // Nearly one value per row: a dictionary is built, then given up.
    for c in HIGH_CARDINALITY {
        b = b.set_column_dictionary_enabled(ColumnPath::from(*c), false);
    }
    // Timestamps rise: deltas are small.
    b = b.set_column_encoding(ColumnPath::from("time"), Encoding::DELTA_BINARY_PACKED);
    b = b.set_column_encoding(ColumnPath::from("ts"), Encoding::DELTA_BINARY_PACKED);
    Ok(b.build())
}

/// Columns whose values rarely repeat within a row group.
const HIGH_CARDINALITY: &[&str] = &["time", "ts", "vaddr", "addr", "offset", "dur_ns", "lat_ns"];

/// Typed column names of the record table, declared once: the row, the
/// builders, the schema and the append all come from this list.
macro_rules! columns {
    ($($name:ident: $builder:ident, $ty:ty, $dt:expr;)*) => {
        /// One record's values; a column its kind lacks stays None (null).
        #[derive(Default)]
        struct Row<'a> {
            $($name: Option<$ty>,)*
        }

        struct Builders {
            host: StringBuilder,
            kind: StringBuilder,
            time: TimestampNanosecondBuilder,
            $($name: Sparse<$builder>,)*
            entries: ListBuilder<StructBuilder>,
            rows: usize,
        }

        fn record_fields() -> Vec<Field> {
            let mut v = vec![
                Field::new("host", DataType::Utf8, false),
                Field::new("kind", DataType::Utf8, false),
                Field::new(
                    "time",
                    DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
                    true,
                ),
            ];
            $(v.push(Field::new(stringify!($name), $dt, true));)*
            v.push(Field::new(
                "entries",
                DataType::List(Arc::new(entry_item())),
                true,
            ));
            v
        }

        impl Builders {
            fn new() -> Builders {
                Builders {
                    host: StringBuilder::new(),
                    kind: StringBuilder::new(),
                    time: TimestampNanosecondBuilder::new().with_timezone("UTC"),
                    $($name: Sparse::default(),)*
                    entries: ListBuilder::new(StructBuilder::from_fields(entry_fields(), 0))
                        .with_field(Arc::new(entry_item())),
                    rows: 0,
                }
            }

            fn push_row(&mut self, host: &str, kind: &str, time: Option<i64>, r: &Row<'_>) {
                self.host.append_value(host);
                self.kind.append_value(kind);
                self.time.append_option(time);
                $(self.$name.put(self.rows, r.$name);)*
                self.rows += 1;
            }

            fn finish(&mut self, schema: &SchemaRef) -> Result<RecordBatch, ParquetError> {
                let cols: Vec<ArrayRef> = vec![
                    Arc::new(self.host.finish()),
                    Arc::new(self.kind.finish()),
                    Arc::new(self.time.finish()),
                    $(self.$name.finish(self.rows),)*
                    Arc::new(self.entries.finish()),
                ];
                self.rows = 0;
                Ok(RecordBatch::try_new(schema.clone(), cols)?)
            }
        }
    };
}

/// One column of a batch, kept as the rows that have a value: a record
/// fills a few of the table's columns, so a null costs nothing until the
/// batch is built.
struct Sparse<T> {
    rows: Vec<u32>,
    values: Vec<T>,
}

impl<T> Default for Sparse<T> {
    fn default() -> Sparse<T> {
        Sparse {
            rows: Vec::new(),
            values: Vec::new(),
        }
    }
}

impl<T> Sparse<T> {
    #[inline]
    fn put<V: Into<T>>(&mut self, row: usize, v: Option<V>) {
        if let Some(v) = v {
            self.rows.push(row as u32);
            self.values.push(v.into());
        }
    }

    fn clear(&mut self) {
        self.rows.clear();
        self.values.clear();
    }
}

/// The batch's `n` rows into builder `$b`: runs of nulls between the rows
/// that have a value, appended whole; empties the column.
macro_rules! sparse_finish {
    ($t:ty, $b:expr, $val:expr) => {
        impl Sparse<$t> {
            fn finish(&mut self, n: usize) -> ArrayRef {
                let mut b = $b(n, &self.values);
                let mut at = 0;
                for (&r, v) in self.rows.iter().zip(&self.values) {
                    let r = r as usize;
                    b.append_nulls(r.saturating_sub(at));
                    b.append_value($val(v));
                    at = r + 1;
                }
                b.append_nulls(n.saturating_sub(at));
                self.clear();
                Arc::new(b.finish())
            }
        }
    };
}

/// Integer columns: a column every row of the batch has moves its values
/// whole; otherwise they are scattered into place beside a validity bitmap.
macro_rules! sparse_primitive {
    ($t:ty, $array:ty) => {
        impl Sparse<$t> {
            fn finish(&mut self, n: usize) -> ArrayRef {
                let a = if self.rows.len() == n {
                    <$array>::from(std::mem::take(&mut self.values))
                } else {
                    let mut vals: Vec<$t> = vec![0; n];
                    let mut valid = BooleanBufferBuilder::new(n);
                    valid.append_n(n, false);
                    for (&r, &v) in self.rows.iter().zip(&self.values) {
                        if let Some(slot) = vals.get_mut(r as usize) {
                            *slot = v;
                            valid.set_bit(r as usize, true);
                        }
                    }
                    <$array>::new(vals.into(), Some(valid.finish().into()))
                };
                self.clear();
                Arc::new(a)
            }
        }
    };
}
sparse_primitive!(i64, Int64Array);
sparse_primitive!(i32, Int32Array);
sparse_finish!(bool, |n, _| BooleanBuilder::with_capacity(n), |v: &bool| *v);
sparse_finish!(
    String,
    |n, v: &Vec<String>| StringBuilder::with_capacity(n, v.iter().map(String::len).sum()),
    String::as_str
);

// Integers are signed (Spark has no unsigned types); every u32 and u64 of
// a trace fits in Int64 (offsets < 2^58, user addresses < 2^57).
columns! {
    ts: i64, i64, DataType::Int64;
    tid: i64, i64, DataType::Int64;
    pid: i64, i64, DataType::Int64;
    comm: String, &'a str, DataType::Utf8;
    mm: i64, i64, DataType::Int64;
    vaddr: i64, i64, DataType::Int64;
    addr: i64, i64, DataType::Int64;
    dev: i32, i32, DataType::Int32;
    offset: i64, i64, DataType::Int64;
    nr: i64, i64, DataType::Int64;
    how: String, &'a str, DataType::Utf8;
    dur_ns: i64, i64, DataType::Int64;
    major: bool, bool, DataType::Boolean;
    pages_read: i64, i64, DataType::Int64;
    zero_reads: i64, i64, DataType::Int64;
    zswap_loads: i64, i64, DataType::Int64;
    write: bool, bool, DataType::Boolean;
    begin: bool, bool, DataType::Boolean;
    memcg: bool, bool, DataType::Boolean;
    nr_reclaimed: i64, i64, DataType::Int64;
    swapped_in: i64, i64, DataType::Int64;
    referenced: i64, i64, DataType::Int64;
    ret: i64, i64, DataType::Int64;
    call: String, &'a str, DataType::Utf8;
    window: i64, i64, DataType::Int64;
    hits: i64, i64, DataType::Int64;
    source: String, &'a str, DataType::Utf8;
    hit: bool, bool, DataType::Boolean;
    ra_hit: bool, bool, DataType::Boolean;
    lat_ns: i64, i64, DataType::Int64;
    load: bool, bool, DataType::Boolean;
    ok: bool, bool, DataType::Boolean;
    swap_ents: i64, i64, DataType::Int64;
    exiting: bool, bool, DataType::Boolean;
    none_or_zero: i64, i64, DataType::Int64;
    unmapped: i64, i64, DataType::Int64;
    status: i64, i64, DataType::Int64;
    isolated: bool, bool, DataType::Boolean;
    what: String, &'a str, DataType::Utf8;
    count: i64, i64, DataType::Int64;
}

fn entry_fields() -> Fields {
    Fields::from(vec![
        Field::new("dev", DataType::Int32, false),
        Field::new("offset", DataType::Int64, false),
    ])
}

fn entry_item() -> Field {
    Field::new("item", DataType::Struct(entry_fields()), true)
}

/// The Arrow schema of an exported trace (`docs/parquet.md`).
pub fn record_schema() -> SchemaRef {
    Arc::new(Schema::new(record_fields()))
}

fn out_kind(k: OutKind) -> &'static str {
    match k {
        OutKind::Io => "io",
        OutKind::Zero => "zero",
        OutKind::Zswap => "zswap",
        OutKind::Unknown => "unknown",
    }
}

fn read_kind(k: ReadKind) -> &'static str {
    match k {
        ReadKind::Io => "io",
        ReadKind::Zero => "zero",
        ReadKind::Zswap => "zswap",
        ReadKind::Unknown => "unknown",
    }
}

/// The record's columns, as docs/jsonl.md names its fields.
fn row(r: &Record) -> Row<'_> {
    let n = |v: u32| Some(v as i64);
    // u64 values that no kernel makes above 2^63 (offsets, user addresses,
    // counts); a hand-edited one saturates rather than wraps.
    let w = |v: u64| Some(i64::try_from(v).unwrap_or(i64::MAX));
    match r {
        Record::Task { tid, pid, comm } => Row {
            tid: n(*tid),
            pid: n(*pid),
            comm: Some(comm),
            ..Row::default()
        },
        Record::AddressSpace { mm, pid } => Row {
            mm: n(*mm),
            pid: n(*pid),
            ..Row::default()
        },
        Record::SwapOut {
            ts,
            tid,
            mm,
            vaddr,
            entry,
            nr,
            how,
        } => Row {
            ts: w(*ts),
            tid: n(*tid),
            mm: n(*mm),
            vaddr: w(*vaddr),
            dev: Some(entry.dev as i32),
            offset: w(entry.offset),
            nr: n(*nr),
            how: Some(out_kind(*how)),
            ..Row::default()
        },
        Record::SwapFault {
            ts,
            dur_ns,
            tid,
            mm,
            addr,
            entry,
            major,
            pages_read,
            zero_reads,
            zswap_loads,
            write,
        } => Row {
            ts: w(*ts),
            dur_ns: n(*dur_ns),
            tid: n(*tid),
            mm: n(*mm),
            addr: w(*addr),
            dev: entry.map(|e| e.dev as i32),
            offset: entry.and_then(|e| w(e.offset)),
            major: Some(*major),
            pages_read: n(*pages_read),
            zero_reads: n(*zero_reads),
            zswap_loads: n(*zswap_loads),
            write: Some(*write),
            ..Row::default()
        },
        Record::SwapRead { ts, tid, how, nr } => Row {
            ts: w(*ts),
            tid: n(*tid),
            how: Some(read_kind(*how)),
            nr: n(*nr),
            ..Row::default()
        },
        Record::Reclaim {
            ts,
            tid,
            begin,
            memcg,
            nr_reclaimed,
        } => Row {
            ts: w(*ts),
            tid: n(*tid),
            begin: Some(*begin),
            memcg: Some(*memcg),
            nr_reclaimed: w(*nr_reclaimed),
            ..Row::default()
        },
        Record::KhugepagedSwapin {
            ts,
            tid,
            mm,
            swapped_in,
            referenced,
            ret,
        } => Row {
            ts: w(*ts),
            tid: n(*tid),
            mm: n(*mm),
            swapped_in: n(*swapped_in),
            referenced: n(*referenced),
            ret: Some(*ret as i64),
            ..Row::default()
        },
        Record::Syscall { ts, tid, call, ret } => Row {
            ts: w(*ts),
            tid: n(*tid),
            call: Some(match call {
                Syscall::Swapon => "swapon",
                Syscall::Swapoff => "swapoff",
            }),
            ret: *ret,
            ..Row::default()
        },
        Record::ZswapWriteback { ts, tid, nr, entry } => Row {
            ts: w(*ts),
            tid: n(*tid),
            nr: n(*nr),
            dev: entry.map(|e| e.dev as i32),
            offset: entry.and_then(|e| w(e.offset)),
            ..Row::default()
        },
        Record::RaWindow {
            ts,
            tid,
            entry,
            window,
            hits,
            source,
        } => Row {
            ts: w(*ts),
            tid: n(*tid),
            dev: Some(entry.dev as i32),
            offset: w(entry.offset),
            window: n(*window),
            hits: n(*hits),
            source: Some(match source {
                RaSource::KprobeLastReadaheadPages => "kprobe_last_readahead_pages",
                RaSource::FexitLastReadaheadPages => "fexit_last_readahead_pages",
            }),
            ..Row::default()
        },
        Record::CacheLookup {
            ts,
            tid,
            entry,
            hit,
            ra_hit,
        } => Row {
            ts: w(*ts),
            tid: n(*tid),
            dev: Some(entry.dev as i32),
            offset: w(entry.offset),
            hit: Some(*hit),
            ra_hit: Some(*ra_hit),
            ..Row::default()
        },
        Record::FreeBatch {
            ts,
            tid,
            lat_ns,
            entries,
        } => Row {
            ts: w(*ts),
            tid: n(*tid),
            lat_ns: n(*lat_ns),
            nr: w(entries.len() as u64),
            ..Row::default()
        },
        Record::ZswapOp { ts, tid, load, ok } => Row {
            ts: w(*ts),
            tid: n(*tid),
            load: Some(*load),
            ok: Some(*ok),
            ..Row::default()
        },
        Record::Zap {
            ts,
            tid,
            mm,
            swap_ents,
            exiting,
        } => Row {
            ts: w(*ts),
            tid: n(*tid),
            mm: n(*mm),
            swap_ents: *swap_ents,
            exiting: Some(*exiting),
            ..Row::default()
        },
        Record::KhugepagedScan {
            ts,
            tid,
            mm,
            referenced,
            none_or_zero,
            unmapped,
            status,
            pmd,
        } => Row {
            ts: w(*ts),
            tid: n(*tid),
            mm: n(*mm),
            referenced: n(*referenced),
            none_or_zero: n(*none_or_zero),
            unmapped: n(*unmapped),
            addr: (*pmd != 0).then(|| w(*pmd)).flatten(),
            status: Some(*status as i64),
            ..Row::default()
        },
        Record::Collapse {
            ts,
            tid,
            mm,
            isolated,
            status,
        } => Row {
            ts: w(*ts),
            tid: n(*tid),
            mm: n(*mm),
            isolated: Some(*isolated),
            status: Some(*status as i64),
            ..Row::default()
        },
        Record::Lost { ts, what, count } => Row {
            ts: w(*ts),
            what: Some(what),
            count: w(*count),
            ..Row::default()
        },
        Record::Vma { ts, mm, start, end }
        | Record::Unmapped { ts, mm, start, end }
        | Record::Zapped { ts, mm, start, end } => Row {
            ts: w(*ts),
            mm: n(*mm),
            vaddr: w(*start),
            addr: w(*end),
            ..Row::default()
        },
        Record::Moved {
            ts,
            mm,
            from,
            to,
            len,
        } => Row {
            ts: w(*ts),
            mm: n(*mm),
            vaddr: w(*from),
            addr: w(*to),
            nr: w(len.div_ceil(4096)),
            ..Row::default()
        },
        Record::OutFreed { ts, entry, nr } | Record::WriteEnd { ts, entry, nr } => Row {
            ts: w(*ts),
            dev: Some(entry.dev as i32),
            offset: w(entry.offset),
            nr: n(*nr),
            ..Row::default()
        },
        Record::Isolated { ts, entry } => Row {
            ts: w(*ts),
            dev: Some(entry.dev as i32),
            offset: w(entry.offset),
            ..Row::default()
        },
        Record::WillNeed {
            ts,
            tid,
            mm,
            start,
            end,
            how,
            nr,
        } => Row {
            ts: w(*ts),
            tid: n(*tid),
            mm: n(*mm),
            vaddr: w(*start),
            addr: w(*end),
            how: Some(read_kind(*how)),
            nr: n(*nr),
            ..Row::default()
        },
    }
}

/// Wall-clock time of a monotonic `ts`, from the header's pair of clocks.
fn wall_ns(h: &Header, ts: i64) -> i64 {
    let start = i64::try_from(h.realtime_start_ns).unwrap_or(i64::MAX);
    let mono = i64::try_from(h.monotonic_start_ns).unwrap_or(i64::MAX);
    start.saturating_add(ts.saturating_sub(mono))
}

struct RecordTable<'h> {
    header: &'h Header,
    host: String,
    schema: SchemaRef,
    b: Builders,
}

impl RecordTable<'_> {
    fn push(&mut self, r: &Record) {
        let row = row(r);
        let time = row.ts.map(|ts| wall_ns(self.header, ts));
        self.b.push_row(&self.host, r.kind_name(), time, &row);
        let entries = self.b.entries.values();
        if let Record::FreeBatch { entries: list, .. } = r {
            for e in list {
                let dev = e.dev as i32;
                let offset = i64::try_from(e.offset).unwrap_or(i64::MAX);
                if let Some(d) = entries.field_builder::<Int32Builder>(0) {
                    d.append_value(dev);
                }
                if let Some(o) = entries.field_builder::<Int64Builder>(1) {
                    o.append_value(offset);
                }
                entries.append(true);
            }
        }
        self.b.entries.append(matches!(r, Record::FreeBatch { .. }));
    }
}

/// Writes the trace at `path` to `out` as Parquet, reading it one chunk at
/// a time.
pub fn export_parquet_file<W: Write + Send>(
    path: &Path,
    out: W,
    opts: &ParquetOptions,
) -> Result<ParquetStats, ParquetError> {
    let mut reader = TraceReader::open(path)?;
    let header = reader.header().clone();
    let host = opts.host.clone().unwrap_or_else(|| header.host(path));
    let schema = record_schema();
    let kv = metadata(&header, &host)?;
    let w = ArrowWriter::try_new(out, schema.clone(), Some(props(kv, opts.row_group_rows)?))?;
    let batch = BATCH_ROWS.min(opts.row_group_rows.max(1));
    let mut t = RecordTable {
        header: &header,
        host,
        schema,
        b: Builders::new(),
    };
    let mut stats = ParquetStats::default();
    let mut footer: Option<Footer> = None;
    // Encoding and compression on a second thread while this one decodes
    // and builds the next batch; two batches in flight bound the memory.
    let (tx, rx) = std::sync::mpsc::sync_channel::<RecordBatch>(2);
    let (written, built) = std::thread::scope(|scope| {
        let writer = scope.spawn(move || -> Result<ArrowWriter<W>, ParquetError> {
            let mut w = w;
            for b in rx {
                w.write(&b)?;
            }
            Ok(w)
        });
        let built = (|| -> Result<(), ParquetError> {
            while let Some(chunk) = reader.next_chunk() {
                match chunk {
                    Ok((_, ChunkBody::Records { records, skipped })) => {
                        for r in &records {
                            t.push(r);
                            if t.b.rows >= batch && tx.send(t.b.finish(&t.schema)?).is_err() {
                                return Ok(()); // the writer failed: its error is returned
                            }
                        }
                        stats.records += records.len() as u64;
                        stats.skipped += skipped;
                    }
                    Ok((_, ChunkBody::Footer(f))) => footer = Some(f),
                    Err(e) => stats.problems.push(e.to_string()),
                }
            }
            if t.b.rows > 0 {
                let _ = tx.send(t.b.finish(&t.schema)?);
            }
            Ok(())
        })();
        drop(tx);
        let written = writer.join().unwrap_or(Err(ParquetError::WriterThread));
        (written, built)
    });
    built?;
    let mut w = written?;
    if let Some(f) = &footer {
        w.append_key_value_metadata(KeyValue::new(
            "swaptrace.footer".into(),
            serde_json::to_string(f)?,
        ));
    }
    let meta = w.close()?;
    stats.row_groups = meta.num_row_groups() as u64;
    stats.footer = footer.is_some();
    Ok(stats)
}

#[cfg(test)]
#[path = "parquet_tests.rs"]
mod tests;
