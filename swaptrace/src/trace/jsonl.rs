//! JSON Lines export and import: one JSON object a line, for other tools and
//! for streams from other tracers. Schema: `docs/jsonl.md`.

use super::output::OutputPolicy;
use super::{Footer, Header, Loaded, Record, TraceError, TraceStream, TraceWriter, FORMAT_VERSION};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};
use std::io::{BufRead, BufWriter, ErrorKind, Read, Write};
use std::path::Path;

/// Bad lines listed in an [`ImportReport`]; the rest are only counted.
const MAX_BAD_LINES: usize = 100;
/// Longest line accepted, in bytes: bounds memory and keeps a record well
/// within a chunk.
const MAX_LINE: usize = 8 << 20;
/// Most entries of one free_batch (the trace reader's limit).
const MAX_FREE_ENTRIES: usize = 1 << 16;
/// Without a header line, records held back waiting for a first timestamp.
const MAX_PENDING: usize = 4096;

#[derive(Debug, thiserror::Error)]
pub enum JsonlError {
    /// In the message only, not also a `source()` (printed once).
    #[error("JSON Lines I/O: {0}")]
    Io(std::io::Error),
    #[error("line {line}: invalid header: {why}")]
    Header { line: usize, why: String },
    #[error(transparent)]
    Trace(#[from] TraceError),
}

impl From<std::io::Error> for JsonlError {
    fn from(e: std::io::Error) -> JsonlError {
        JsonlError::Io(e)
    }
}

/// What an export wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ExportStats {
    pub records: u64,
    pub footer: bool,
    /// Records of kinds this build does not know (not exported).
    pub skipped: u64,
    /// Unreadable chunks of the trace: their records are missing.
    pub problems: Vec<String>,
}

/// What an import wrote and skipped.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    /// Records written.
    pub records: u64,
    /// The first 100 skipped lines: 1-based line number and reason.
    pub bad_lines: Vec<(usize, String)>,
    /// Skipped lines beyond those listed.
    pub bad_lines_omitted: u64,
    /// No header line: a minimal header was written.
    pub header_synthesized: bool,
    /// No footer line: one was written with the record count.
    pub footer_synthesized: bool,
    /// Records whose ts is earlier than the previous timestamped record's.
    pub out_of_order: u64,
}

impl ImportReport {
    pub fn bad_line_count(&self) -> u64 {
        self.bad_lines.len() as u64 + self.bad_lines_omitted
    }

    fn bad(&mut self, line: usize, why: String) {
        if self.bad_lines.len() < MAX_BAD_LINES {
            self.bad_lines.push((line, why));
        } else {
            self.bad_lines_omitted += 1;
        }
    }
}

/// `{"type": ty, ...body}`: the body's own serde form, flattened.
#[derive(Serialize)]
struct Line<'a, T> {
    #[serde(rename = "type")]
    ty: &'static str,
    #[serde(flatten)]
    body: &'a T,
}

pub(super) fn put_line<W: Write, T: Serialize>(
    out: &mut W,
    ty: &'static str,
    body: &T,
) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, &Line { ty, body })?;
    out.write_all(b"\n")
}

/// Writes a loaded trace as JSON Lines: header, records, footer if any.
pub fn export_jsonl<W: Write>(t: &Loaded, out: W) -> Result<ExportStats, JsonlError> {
    let mut out = BufWriter::new(out);
    put_line(&mut out, "header", &t.header)?;
    for r in &t.records {
        put_line(&mut out, "record", r)?;
    }
    if let Some(f) = &t.footer {
        put_line(&mut out, "footer", f)?;
    }
    out.flush()?;
    Ok(ExportStats {
        records: t.records.len() as u64,
        footer: t.footer.is_some(),
        skipped: t.skipped,
        problems: t.problems.iter().map(|p| p.to_string()).collect(),
    })
}

/// Like [`export_jsonl`], reading the trace one chunk at a time.
pub fn export_jsonl_file<W: Write>(path: &Path, out: W) -> Result<ExportStats, JsonlError> {
    super::stream::export_jsonl_stream(TraceStream::open(path)?, out, |_| {})
}

/// Reads JSON Lines and writes them as a trace file at `out_path`. Bad lines
/// are skipped and reported; only I/O errors and an invalid header line fail.
pub fn import_jsonl<R: BufRead>(
    mut input: R,
    out_path: &Path,
    policy: &OutputPolicy,
) -> Result<ImportReport, JsonlError> {
    let mut st = Import {
        path: out_path,
        policy,
        writer: None,
        start_ns: 0,
        pending: Vec::new(),
        footer: None,
        prev_ts: None,
        max_ts: None,
        report: ImportReport::default(),
    };
    let mut buf = Vec::new();
    let mut n = 0usize;
    while let Some(fits) = read_line(&mut input, &mut buf)? {
        n += 1;
        if !fits {
            st.report
                .bad(n, format!("line longer than {MAX_LINE} bytes"));
            continue;
        }
        let mut text = buf.as_slice();
        if n == 1 {
            text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
        }
        let text = text.strip_suffix(b"\n").unwrap_or(text);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        st.line(n, text)?;
    }
    st.finish()
}

struct Import<'p> {
    path: &'p Path,
    policy: &'p OutputPolicy,
    writer: Option<TraceWriter>,
    start_ns: u64,
    /// Records seen before the writer exists (no header line yet).
    pending: Vec<Record>,
    footer: Option<Footer>,
    prev_ts: Option<u64>,
    max_ts: Option<u64>,
    report: ImportReport,
}

impl Import<'_> {
    fn line(&mut self, n: usize, text: &[u8]) -> Result<(), JsonlError> {
        let mut obj = match serde_json::from_slice::<Value>(text) {
            Ok(Value::Object(m)) => m,
            Ok(_) => {
                self.report.bad(n, "not a JSON object".into());
                return Ok(());
            }
            Err(e) => {
                // serde_json's position is within the line: keep the column.
                let msg = e.to_string();
                let msg = msg.rsplit_once(" at line ").map_or(msg.as_str(), |m| m.0);
                let why = format!("invalid JSON at column {}: {msg}", e.column());
                self.report.bad(n, why);
                return Ok(());
            }
        };
        let ty = match obj.remove("type") {
            None => "record".to_string(),
            Some(Value::String(s)) => s,
            Some(v) => {
                self.report.bad(n, format!("`type` is not a string: {v}"));
                return Ok(());
            }
        };
        match ty.as_str() {
            "record" => match parse_record(obj) {
                Ok((r, ts)) => self.record(r, ts)?,
                Err(why) => self.report.bad(n, why),
            },
            "header" => self.header(n, obj)?,
            "footer" if self.footer.is_some() => self.report.bad(n, "second footer line".into()),
            "footer" => match overlay(&Footer::default(), obj) {
                Ok(f) => self.footer = Some(f),
                Err(why) => self.report.bad(n, format!("invalid footer: {why}")),
            },
            other => self.report.bad(n, format!("unknown line type `{other}`")),
        }
        Ok(())
    }

    fn header(&mut self, n: usize, obj: Map<String, Value>) -> Result<(), JsonlError> {
        if self.writer.is_some() || !self.pending.is_empty() {
            let why = "header line after records or after another header (ignored)";
            self.report.bad(n, why.into());
            return Ok(());
        }
        let bad = |why: String| JsonlError::Header { line: n, why };
        let mut h: Header = overlay(&minimal_header(), obj).map_err(bad)?;
        if !super::page_size_ok(h.page_size) {
            return Err(bad(format!(
                "page_size {} is not a power of two from 4096 to 1 MiB",
                h.page_size
            )));
        }
        h.format_version = FORMAT_VERSION;
        self.start_ns = h.monotonic_start_ns;
        self.writer = Some(TraceWriter::create_with(self.path, &h, self.policy)?);
        Ok(())
    }

    fn record(&mut self, r: Record, ts: Option<u64>) -> Result<(), JsonlError> {
        if let Some(ts) = ts {
            if self.prev_ts.is_some_and(|p| ts < p) {
                self.report.out_of_order += 1;
            }
            self.prev_ts = Some(ts);
            self.max_ts = Some(self.max_ts.map_or(ts, |m| m.max(ts)));
        }
        match &mut self.writer {
            Some(w) => w.push(&r)?,
            None => {
                self.pending.push(r);
                if ts.is_some() || self.pending.len() >= MAX_PENDING {
                    self.open_synthesized(ts.unwrap_or(0))?;
                }
            }
        }
        Ok(())
    }

    /// Opens the trace with a minimal header and writes the held records.
    fn open_synthesized(&mut self, start_ns: u64) -> Result<(), JsonlError> {
        let h = Header {
            monotonic_start_ns: start_ns,
            ..minimal_header()
        };
        let mut w = TraceWriter::create_with(self.path, &h, self.policy)?;
        for r in self.pending.drain(..) {
            w.push(&r)?;
        }
        self.start_ns = start_ns;
        self.report.header_synthesized = true;
        self.writer = Some(w);
        Ok(())
    }

    fn finish(mut self) -> Result<ImportReport, JsonlError> {
        if self.writer.is_none() {
            self.open_synthesized(0)?;
        }
        let Some(w) = self.writer.take() else {
            return Err(std::io::Error::other("trace writer missing").into());
        };
        let records = w.records();
        let footer = match self.footer.take() {
            Some(f) => Footer { records, ..f },
            None => {
                self.report.footer_synthesized = true;
                Footer {
                    monotonic_end_ns: self.max_ts.unwrap_or(self.start_ns),
                    records,
                    ..Footer::default()
                }
            }
        };
        w.finish(&footer)?;
        self.report.records = records;
        Ok(self.report)
    }
}

/// The header written when the stream has no header line; missing fields of
/// a header line are taken from it.
fn minimal_header() -> Header {
    Header {
        format_version: FORMAT_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        kernel_release: "unknown".into(),
        page_size: 4096,
        target: "imported".into(),
        ..Header::default()
    }
}

/// `base` with the top-level fields of `obj` put over it.
fn overlay<T: Serialize + DeserializeOwned>(
    base: &T,
    obj: Map<String, Value>,
) -> Result<T, String> {
    let mut v = serde_json::to_value(base).map_err(|e| e.to_string())?;
    if let Value::Object(m) = &mut v {
        m.extend(obj);
    }
    serde_json::from_value(v).map_err(|e| e.to_string())
}

/// The record and its ts (from the line: every kind but task and
/// address_space has one).
fn parse_record(obj: Map<String, Value>) -> Result<(Record, Option<u64>), String> {
    let ts = obj.get("ts").and_then(Value::as_u64);
    let kind = obj.get("kind").and_then(Value::as_str).map(str::to_owned);
    let r: Record = serde_json::from_value(Value::Object(obj)).map_err(|e| match &kind {
        Some(k) => format!("{k} record: {e}"),
        None => e.to_string(),
    })?;
    let ts = match r {
        Record::Task { .. } | Record::AddressSpace { .. } => None,
        _ => ts,
    };
    if let Record::FreeBatch { entries, .. } = &r {
        if entries.len() > MAX_FREE_ENTRIES {
            return Err(format!(
                "free_batch has {} entries; a trace holds at most {MAX_FREE_ENTRIES}",
                entries.len()
            ));
        }
    }
    Ok((r, ts))
}

/// Reads one line into `buf`. None at the end of input; Some(false) when the
/// line is longer than [`MAX_LINE`] (its rest is skipped).
fn read_line<R: BufRead>(input: &mut R, buf: &mut Vec<u8>) -> std::io::Result<Option<bool>> {
    buf.clear();
    let n = Read::take(&mut *input, MAX_LINE as u64 + 1).read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(None);
    }
    if buf.last() == Some(&b'\n') || n <= MAX_LINE {
        return Ok(Some(true));
    }
    loop {
        let (done, used) = match input.fill_buf() {
            Ok([]) => (true, 0),
            Ok(b) => match b.iter().position(|&c| c == b'\n') {
                Some(i) => (true, i + 1),
                None => (false, b.len()),
            },
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        input.consume(used);
        if done {
            return Ok(Some(false));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{read_trace, OutKind, RaSource, ReadKind, Readahead, SwapEntry, Syscall};
    use std::collections::BTreeMap;

    fn e(dev: u8, offset: u64) -> SwapEntry {
        SwapEntry { dev, offset }
    }

    fn sample_records() -> Vec<Record> {
        vec![
            Record::Task {
                tid: 7,
                pid: 7,
                comm: "stress \"ng\"".into(),
            },
            Record::AddressSpace { mm: 1, pid: 7 },
            Record::SwapOut {
                ts: 1_000,
                tid: 7,
                mm: 1,
                vaddr: 0x7f00_0000_3000,
                entry: e(0, 42),
                nr: 1,
                how: OutKind::Io,
            },
            Record::SwapOut {
                ts: 1_500,
                tid: 7,
                mm: 0,
                vaddr: 0,
                entry: e(1, 7),
                nr: 16,
                how: OutKind::Zswap,
            },
            Record::FreeBatch {
                ts: 2_000,
                tid: 9,
                lat_ns: 1234,
                entries: vec![e(0, 42), e(1, 7), e(0, u64::MAX >> 6)],
            },
            Record::SwapFault {
                ts: 3_000,
                dur_ns: 5_000,
                tid: 7,
                mm: 1,
                addr: 0x7f00_0000_3abc,
                entry: Some(e(0, 42)),
                major: true,
                pages_read: 8,
                zero_reads: 1,
                zswap_loads: 2,
                write: false,
            },
            Record::SwapFault {
                ts: 3_100,
                dur_ns: 0,
                tid: 7,
                mm: 1,
                addr: 0x1000,
                entry: None,
                major: false,
                pages_read: 0,
                zero_reads: 0,
                zswap_loads: 0,
                write: false,
            },
            Record::SwapRead {
                ts: 3_200,
                tid: 8,
                how: ReadKind::Zero,
                nr: 3,
            },
            Record::Reclaim {
                ts: 3_300,
                tid: 8,
                begin: true,
                memcg: true,
                nr_reclaimed: 99,
            },
            Record::KhugepagedSwapin {
                ts: 3_400,
                tid: 3,
                mm: 1,
                swapped_in: 4,
                referenced: 2,
                ret: -12,
            },
            Record::Syscall {
                ts: 3_500,
                tid: 1,
                call: Syscall::Swapoff,
                ret: Some(-22),
            },
            Record::ZswapWriteback {
                ts: 3_600,
                tid: 2,
                nr: 5,
                entry: None,
            },
            Record::ZswapWriteback {
                ts: 3_650,
                tid: 2,
                nr: 1,
                entry: Some(SwapEntry { dev: 1, offset: 77 }),
            },
            Record::RaWindow {
                ts: 3_700,
                tid: 7,
                entry: e(0, 43),
                window: 8,
                hits: 3,
                source: RaSource::FexitLastReadaheadPages,
            },
            Record::CacheLookup {
                ts: 3_800,
                tid: 7,
                entry: e(2, 44),
                hit: true,
                ra_hit: false,
            },
            Record::ZswapOp {
                ts: 3_900,
                tid: 7,
                load: true,
                ok: false,
            },
            Record::Lost {
                ts: 4_000,
                what: "swap_fault".into(),
                count: 3,
            },
        ]
    }

    fn import_str(s: &str) -> (ImportReport, Loaded) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.swaptrace");
        let report = import_jsonl(s.as_bytes(), &path, &OutputPolicy::replace()).unwrap();
        let t = read_trace(&path).unwrap();
        assert!(t.problems.is_empty(), "{:?}", t.problems);
        (report, t)
    }

    #[test]
    fn round_trip_through_jsonl_keeps_every_record() {
        let records = sample_records();
        let t = Loaded {
            header: Header {
                kernel_release: "6.8.0-test".into(),
                monotonic_start_ns: 900,
                realtime_start_ns: 1_700_000_000_000_000_000,
                mem_total_kib: 1 << 20,
                readahead: Readahead {
                    page_cluster: Some(3),
                    vma_ra_enabled: None,
                },
                vmstat_start: BTreeMap::from([("pswpin".to_string(), 5)]),
                target: "pid 7".into(),
                memory_limit_bytes: Some(1 << 30),
                ..minimal_header()
            },
            records: records.clone(),
            footer: Some(Footer {
                monotonic_end_ns: 5_000,
                vmstat_end: BTreeMap::from([("pswpin".to_string(), 9)]),
                lost: BTreeMap::from([("swap_fault".to_string(), 3)]),
                records: records.len() as u64,
                exit_code: Some(0),
                zswap_pool: vec![crate::trace::PoolSample {
                    ts: 4_000,
                    pool_kib: 100,
                    stored_kib: 300,
                }],
                footprint: Vec::new(),
                memcg: vec![crate::trace::MemcgSample {
                    ts: 4_500,
                    usage_kib: 1000,
                    anon_kib: 900,
                }],
                frees_unseen: 4,
            }),
            problems: Vec::new(),
            skipped: 0,
            chunks: Vec::new(),
        };
        let mut out = Vec::new();
        let stats = export_jsonl(&t, &mut out).unwrap();
        assert_eq!(stats.records, records.len() as u64);
        assert!(stats.footer);
        let text = String::from_utf8(out.clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), records.len() + 2);
        assert!(lines[0].starts_with(r#"{"type":"header","format_version":2,"#));
        assert!(lines[5].starts_with(r#"{"type":"record","kind":"free_batch","ts":2000,"#));
        assert!(lines[5].contains(r#""entries":[{"dev":0,"offset":42},{"dev":1,"offset":7}"#));
        assert!(lines[lines.len() - 1].starts_with(r#"{"type":"footer","#));

        let (report, back) = import_str(&text);
        assert_eq!(report.records, records.len() as u64);
        assert!(report.bad_lines.is_empty(), "{:?}", report.bad_lines);
        assert!(!report.header_synthesized && !report.footer_synthesized);
        assert_eq!(report.out_of_order, 0);
        assert_eq!(back.records, records);
        assert_eq!(back.header, t.header);
        assert_eq!(back.footer, t.footer);

        // The streaming export of the imported file gives the same lines.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.swaptrace");
        import_jsonl(text.as_bytes(), &path, &OutputPolicy::replace()).unwrap();
        let mut again = Vec::new();
        let stats = export_jsonl_file(&path, &mut again).unwrap();
        assert_eq!(stats.records, records.len() as u64);
        assert!(stats.footer && stats.problems.is_empty());
        assert_eq!(String::from_utf8(again).unwrap(), text);
    }

    #[test]
    fn bad_lines_are_reported_and_valid_ones_kept() {
        let input = [
            r#"{"type":"record","kind":"swap_out","ts":10,"tid":1,"mm":1,"vaddr":4096,"entry":{"dev":0,"offset":5},"nr":1,"how":"io"}"#,
            "",
            r#"{"type":"record","kind":"swap_out","ts":"#,
            r#"{"kind":"bogus","ts":11}"#,
            r#"{"kind":"swap_fault","ts":"late","dur_ns":0,"tid":1,"mm":1,"addr":4096,"entry":null,"major":true,"pages_read":1,"zero_reads":0,"zswap_loads":0}"#,
            r#"{"kind":"swap_fault","ts":12,"dur_ns":0,"tid":1,"mm":1,"addr":4096,"entry":{"dev":0,"offset":5},"major":true,"pages_read":1,"zero_reads":0,"zswap_loads":0}"#,
            "[1, 2]",
            r#"{"type":"record","kind":"swap_out","ts":13}"#,
            r#"{"type":"frobnicate"}"#,
            "   \t",
            r#"{"kind":"free_batch","ts":14,"tid":2,"lat_ns":300,"entries":[{"dev":0,"offset":5}]}"#,
            r#"{"kind":"zswap_op","ts":15,"tid":4294967296,"load":true,"ok":true}"#,
        ]
        .join("\n");
        let (report, t) = import_str(&input);
        let lines: Vec<usize> = report.bad_lines.iter().map(|b| b.0).collect();
        assert_eq!(lines, [3, 4, 5, 7, 8, 9, 12], "{:?}", report.bad_lines);
        let why = |i: usize| report.bad_lines[i].1.as_str();
        assert_eq!(
            why(0),
            "invalid JSON at column 40: EOF while parsing a value"
        );
        assert!(why(1).contains("bogus"), "{}", why(1));
        assert!(
            why(2).starts_with("swap_fault record: invalid type"),
            "{}",
            why(2)
        );
        assert!(why(3).contains("not a JSON object"), "{}", why(3));
        assert!(why(4).contains("missing field"), "{}", why(4));
        assert!(why(5).contains("frobnicate"), "{}", why(5));
        assert!(why(6).contains("4294967296"), "{}", why(6));
        assert_eq!(report.records, 3);
        assert_eq!(t.records.len(), 3);
        assert_eq!(
            t.records.iter().map(|r| r.kind_name()).collect::<Vec<_>>(),
            ["swap_out", "swap_fault", "free_batch"]
        );
    }

    #[test]
    fn stream_without_header_gets_a_synthesized_one() {
        let input = r#"{"kind":"task","tid":1,"pid":1,"comm":"a"}
{"kind":"zswap_writeback","ts":100,"tid":1,"nr":1}
{"kind":"zswap_writeback","ts":300,"tid":1,"nr":1}
{"kind":"zswap_writeback","ts":200,"tid":1,"nr":1}
{"kind":"zswap_writeback","ts":400,"tid":1,"nr":1}
"#;
        let (report, t) = import_str(input);
        assert!(report.header_synthesized && report.footer_synthesized);
        assert_eq!(report.records, 5);
        assert_eq!(report.out_of_order, 1);
        let h = &t.header;
        assert_eq!(h.format_version, FORMAT_VERSION);
        assert_eq!(h.tool_version, env!("CARGO_PKG_VERSION"));
        assert_eq!(h.page_size, 4096);
        assert_eq!(h.kernel_release, "unknown");
        assert_eq!(h.target, "imported");
        assert_eq!(h.monotonic_start_ns, 100);
        let f = t.footer.unwrap();
        assert_eq!((f.records, f.monotonic_end_ns), (5, 400));
        assert_eq!(t.records[0].kind_name(), "task");
        assert_eq!(t.records.len(), 5);

        let (report, t) = import_str("");
        assert!(report.header_synthesized && t.records.is_empty());
        assert_eq!(t.footer.map(|f| f.records), Some(0));
    }

    #[test]
    fn unknown_extra_fields_are_ignored() {
        let input = r#"{"type":"header","page_size":16384,"target":"other tracer","hostname":"h1"}
{"type":"record","kind":"swap_out","ts":10,"tid":1,"mm":1,"vaddr":8192,"entry":{"dev":0,"offset":5,"cluster":0},"nr":1,"how":"io","cpu":3,"comment":"x"}
{"type":"footer","exit_code":2,"records":999,"note":[1,2]}
"#;
        let (report, t) = import_str(input);
        assert!(report.bad_lines.is_empty(), "{:?}", report.bad_lines);
        assert!(!report.header_synthesized && !report.footer_synthesized);
        assert_eq!(t.header.page_size, 16384);
        assert_eq!(t.header.target, "other tracer");
        assert_eq!(t.header.kernel_release, "unknown");
        assert_eq!(
            t.records,
            [Record::SwapOut {
                ts: 10,
                tid: 1,
                mm: 1,
                vaddr: 8192,
                entry: e(0, 5),
                nr: 1,
                how: OutKind::Io,
            }]
        );
        let f = t.footer.unwrap();
        // The footer counts the records actually written.
        assert_eq!((f.exit_code, f.records), (Some(2), 1));
    }

    #[test]
    fn invalid_header_line_fails_and_late_header_is_a_bad_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.swaptrace");
        let bad = "\n{\"type\":\"header\",\"page_size\":\"big\"}\n";
        match import_jsonl(bad.as_bytes(), &path, &OutputPolicy::replace()) {
            Err(JsonlError::Header { line: 2, .. }) => {}
            other => panic!("{other:?}"),
        }
        assert!(!path.exists());
        let odd = r#"{"type":"header","page_size":3000}"#;
        assert!(matches!(
            import_jsonl(odd.as_bytes(), &path, &OutputPolicy::replace()),
            Err(JsonlError::Header { line: 1, .. })
        ));

        let input = r#"{"kind":"zswap_op","ts":1,"tid":1,"load":false,"ok":true}
{"type":"header","page_size":4096}
{"type":"footer"}
{"type":"footer"}
"#;
        let (report, t) = import_str(input);
        let lines: Vec<usize> = report.bad_lines.iter().map(|b| b.0).collect();
        assert_eq!(lines, [2, 4]);
        assert!(report.header_synthesized && !report.footer_synthesized);
        assert_eq!(t.records.len(), 1);
    }

    #[test]
    fn bad_lines_beyond_the_limit_are_counted() {
        let mut input = "nope\n".repeat(150);
        input.push_str(r#"{"kind":"zswap_op","ts":1,"tid":1,"load":false,"ok":true}"#);
        let (report, t) = import_str(&input);
        assert_eq!(report.bad_lines.len(), MAX_BAD_LINES);
        assert_eq!(report.bad_lines.last().map(|b| b.0), Some(MAX_BAD_LINES));
        assert_eq!(report.bad_lines_omitted, 50);
        assert_eq!(report.bad_line_count(), 150);
        assert_eq!(t.records.len(), 1);
    }

    #[test]
    fn overlong_lines_and_oversized_batches_are_skipped() {
        let rec = r#"{"kind":"zswap_op","ts":1,"tid":1,"load":false,"ok":true}"#;
        let entries = vec![r#"{"dev":0,"offset":1}"#; MAX_FREE_ENTRIES + 1].join(",");
        let batch =
            format!(r#"{{"kind":"free_batch","ts":2,"tid":1,"lat_ns":1,"entries":[{entries}]}}"#);
        let long = format!(
            r#"{{"kind":"task","tid":1,"pid":1,"comm":"{}"}}"#,
            "x".repeat(MAX_LINE)
        );
        let input = format!("{rec}\n{long}\n{batch}\n{rec}");
        let (report, t) = import_str(&input);
        let lines: Vec<usize> = report.bad_lines.iter().map(|b| b.0).collect();
        assert_eq!(lines, [2, 3], "{:?}", report.bad_lines);
        assert!(report.bad_lines[0].1.contains("longer than"));
        assert!(report.bad_lines[1].1.contains("at most"));
        assert_eq!(t.records.len(), 2);
    }

    #[test]
    fn doc_example_imports_and_optional_fields_may_be_left_out() {
        let doc = include_str!("../../../docs/jsonl.md");
        let example = doc
            .split("```json\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .unwrap();
        let input = format!(
            "{example}{}\n",
            r#"{"kind":"syscall","ts":2600000,"tid":1,"call":"swapon"}"#
        );
        let (report, t) = import_str(&input);
        assert!(report.bad_lines.is_empty(), "{:?}", report.bad_lines);
        assert!(!report.header_synthesized && !report.footer_synthesized);
        assert_eq!(t.header.kernel_release, "6.8.0");
        let kinds: Vec<&str> = t.records.iter().map(|r| r.kind_name()).collect();
        assert_eq!(
            kinds,
            [
                "task",
                "address_space",
                "swap_out",
                "free_batch",
                "swap_fault",
                "syscall"
            ]
        );
        assert!(matches!(t.records[5], Record::Syscall { ret: None, .. }));
        assert_eq!(
            t.footer.map(|f| (f.records, f.exit_code)),
            Some((6, Some(0)))
        );
    }
}
