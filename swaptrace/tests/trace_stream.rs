//! The streaming reader (issue 19): on whole and damaged traces it gives
//! the records, footer and problems `read_trace` gives, and never holds
//! more than one chunk's records.

use std::path::Path;
use swaptrace::report::{self, TraceInfo};
use swaptrace::trace::{
    export_jsonl, export_jsonl_stream, read_trace_bytes, Footer, Header, OutKind, Record,
    SwapEntry, TraceStream, TraceWriter, CHUNK_RECORDS_MAX,
};

fn header() -> Header {
    Header {
        format_version: swaptrace::trace::FORMAT_VERSION,
        page_size: 4096,
        target: "stream test".into(),
        ..Header::default()
    }
}

fn records(n: u64) -> Vec<Record> {
    (0..n)
        .map(|i| Record::SwapOut {
            ts: 1000 + i * 10,
            tid: 7,
            mm: 1,
            vaddr: (0x1000 + (i * 7919) % 100_000) << 12,
            entry: SwapEntry {
                dev: 0,
                offset: (i * 104_729) % 1_000_003,
            },
            nr: 1,
            how: OutKind::Io,
        })
        .collect()
}

fn write(path: &Path, recs: &[Record]) -> Vec<u8> {
    let mut w = TraceWriter::create(path, &header()).unwrap();
    for r in recs {
        w.push(r).unwrap();
    }
    w.finish(&Footer::default()).unwrap();
    std::fs::read(path).unwrap()
}

/// Streams `data` and checks everything against the whole read.
fn same_as_whole_read(data: &[u8], what: &str) {
    let whole = read_trace_bytes(data.to_vec()).unwrap();
    let mut s = TraceStream::from_bytes(data.to_vec()).unwrap();
    assert_eq!(s.header(), &whole.header, "{what}");
    let mut streamed = Vec::new();
    for batch in s.by_ref() {
        assert!(!batch.is_empty(), "{what}");
        streamed.extend(batch);
    }
    assert!(s.max_batch() <= CHUNK_RECORDS_MAX as usize, "{what}");
    let end = s.finish();
    assert_eq!(streamed, whole.records, "{what}");
    assert_eq!(end.records, whole.records.len() as u64, "{what}");
    assert_eq!(end.footer, whole.footer, "{what}");
    assert_eq!(end.skipped, whole.skipped, "{what}");
    assert_eq!(end.chunks, whole.chunks.len(), "{what}");
    let p =
        |v: &[swaptrace::trace::TraceError]| v.iter().map(|e| e.to_string()).collect::<Vec<_>>();
    assert_eq!(p(&end.problems), p(&whole.problems), "{what}");
    // `info` streamed shows what it showed of the whole read.
    let info = TraceInfo::stream(TraceStream::from_bytes(data.to_vec()).unwrap(), |_| {});
    assert_eq!(info.json("t"), report::info_json(&whole, "t"), "{what}");
    assert_eq!(
        info.text("t", 1),
        report::info_text(&whole, "t", 1),
        "{what}"
    );
    // And `export` the same lines.
    let mut a = Vec::new();
    let mut b = Vec::new();
    let sa = export_jsonl_stream(
        TraceStream::from_bytes(data.to_vec()).unwrap(),
        &mut a,
        |_| {},
    );
    let sb = export_jsonl(&whole, &mut b).unwrap();
    assert_eq!(sa.unwrap(), sb, "{what}");
    assert_eq!(a, b, "{what}");
}

#[test]
fn streamed_reads_equal_whole_reads_on_damaged_traces() {
    let dir = tempfile::tempdir().unwrap();
    let data = write(&dir.path().join("t.swt"), &records(120_000));
    let whole = read_trace_bytes(data.clone()).unwrap();
    assert!(whole.chunks.len() >= 5);
    same_as_whole_read(&data, "clean");
    let offs: Vec<usize> = whole.chunks.iter().map(|c| c.offset as usize).collect();
    // Bits flipped in chunk headers and payloads, and in the header.
    for (at, what) in [
        (offs[0] + 9, "chunk 0 count"),
        (offs[1] + 17, "chunk 1 length"),
        (offs[2] + 21, "chunk 2 sequence"),
        (offs[1] + 200, "chunk 1 payload"),
        (14, "header length"),
        (40, "header json"),
    ] {
        let mut bad = data.clone();
        bad[at] ^= 0x10;
        same_as_whole_read(&bad, what);
    }
    // Cut inside a chunk, at the footer, and a chunk repeated.
    same_as_whole_read(&data[..offs[2] + 100], "cut inside chunk 2");
    same_as_whole_read(&data[..*offs.last().unwrap()], "cut at the footer");
    let mut dup = data[..offs[2]].to_vec();
    dup.extend_from_slice(&data[offs[1]..]);
    same_as_whole_read(&dup, "chunk 1 twice");
    // Garbage between chunks.
    let mut junk = data[..offs[3]].to_vec();
    junk.extend_from_slice(&b"CHNKCHNK garbage".repeat(50));
    junk.extend_from_slice(&data[offs[3]..]);
    same_as_whole_read(&junk, "garbage between chunks");
}

#[test]
fn a_stream_never_holds_more_than_one_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let n = 600_000u64;
    let data = write(&dir.path().join("t.swt"), &records(n));
    let mut s = TraceStream::from_bytes(data).unwrap();
    let (mut batches, mut total, mut largest_cap) = (0, 0u64, 0usize);
    while let Some(b) = s.next_batch() {
        batches += 1;
        total += b.len() as u64;
        largest_cap = largest_cap.max(b.capacity());
    }
    assert_eq!(total, n);
    assert!(batches >= 10, "{batches} batches");
    // One batch is one chunk: bounded by the chunk limit, a small part of
    // the trace.
    assert!(s.max_batch() <= CHUNK_RECORDS_MAX as usize);
    assert!(largest_cap <= CHUNK_RECORDS_MAX as usize, "{largest_cap}");
    assert!((s.max_batch() as u64) < n / 8, "{}", s.max_batch());
    let end = s.finish();
    assert!(end.problems.is_empty(), "{:?}", end.problems);
    assert_eq!(end.footer.map(|f| f.records), Some(n));
}
