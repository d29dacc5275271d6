//! Damaged and hostile traces (issue 18, defects 4–7 and 10): bounded
//! chunks, resync without growth, no trust in a length that failed its
//! checksum, sequence numbers, the missing footer and a damaged header.
//! The streaming reader (issue 19) gives, on the same damage, what
//! `read_trace` gives, and never holds more than one chunk's records.

use std::path::Path;
use swaptrace::report::{self, TraceInfo};
use swaptrace::trace::{
    export_jsonl, export_jsonl_stream, read_trace_bytes, Footer, Header, Loaded, OutKind, Record,
    SwapEntry, TraceError, TraceStream, TraceWriter, CHUNK_RAW_MAX, CHUNK_RECORDS_MAX,
    PROBLEMS_MAX,
};

fn header() -> Header {
    Header {
        format_version: swaptrace::trace::FORMAT_VERSION,
        page_size: 4096,
        target: "damage test".into(),
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

/// A trace of several chunks, its bytes and its clean reading.
fn sample() -> (Vec<Record>, Vec<u8>, Loaded) {
    let dir = tempfile::tempdir().unwrap();
    let recs = records(120_000);
    let data = write(&dir.path().join("t.swt"), &recs);
    let full = read_trace_bytes(data.clone()).unwrap();
    assert!(full.problems.is_empty(), "{:?}", full.problems);
    assert!(full.chunks.len() >= 5, "{} chunks", full.chunks.len());
    (recs, data, full)
}

/// A version 2 chunk with a correct checksum.
fn chunk(kind: u8, codec: u8, count: u32, raw_len: u32, seq: u32, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0u8; 28];
    h[0..4].copy_from_slice(b"CHNK");
    h[4] = kind;
    h[5] = codec;
    h[8..12].copy_from_slice(&count.to_le_bytes());
    h[12..16].copy_from_slice(&raw_len.to_le_bytes());
    h[16..20].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    h[20..24].copy_from_slice(&seq.to_le_bytes());
    let mut c = crc32fast::Hasher::new();
    c.update(&h[4..24]);
    c.update(payload);
    h[24..28].copy_from_slice(&c.finalize().to_le_bytes());
    h.extend_from_slice(payload);
    h
}

fn names_offset(t: &Loaded) {
    for p in &t.problems {
        let off = match p {
            TraceError::Header { offset, .. }
            | TraceError::Truncated { offset, .. }
            | TraceError::Corrupt { offset, .. } => *offset,
            other => panic!("problem without an offset: {other}"),
        };
        assert!(p.to_string().contains(&off.to_string()), "{p}");
    }
}

#[test]
fn writer_stays_within_the_chunk_limits() {
    let dir = tempfile::tempdir().unwrap();
    // Tiny records: the record cap, not the byte target, ends chunks.
    let recs: Vec<Record> = (0..600_000u64)
        .map(|i| Record::Reclaim {
            ts: i,
            tid: 1,
            memcg: false,
            begin: true,
            nr_reclaimed: 0,
        })
        .collect();
    let data = write(&dir.path().join("t.swt"), &recs);
    let t = read_trace_bytes(data).unwrap();
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    assert_eq!(t.records.len(), recs.len());
    for c in &t.chunks {
        assert!(c.records <= CHUNK_RECORDS_MAX, "{c:?}");
        assert!(c.raw_bytes <= CHUNK_RAW_MAX, "{c:?}");
    }
}

#[test]
fn decompression_bomb_is_refused_with_its_offset() {
    let (recs, data, full) = sample();
    // 64 MiB of 4-byte records compress to a few KB.
    let raw: Vec<u8> = [6u8, 2, 0, 0].repeat(16 << 20);
    let z = zstd::bulk::compress(&raw, 19).unwrap();
    assert!(z.len() < 1 << 20);
    let at = full.chunks[1].offset as usize;
    let mut bad = data[..at].to_vec();
    bad.extend(chunk(1, 1, 16 << 20, raw.len() as u32, 1, &z));
    bad.extend_from_slice(&data[at..]);
    let t = read_trace_bytes(bad).unwrap();
    names_offset(&t);
    let p = t.problems.first().expect("a problem");
    assert!(
        matches!(p, TraceError::Corrupt { offset, why } if *offset == at as u64 && why.contains("limits")),
        "{p:?}"
    );
    // Every real chunk is still read.
    assert_eq!(t.records, recs);
    assert!(t.footer.is_some());
}

#[test]
fn chunk_magic_flood_neither_recurses_nor_grows() {
    let (_, data, full) = sample();
    let mut bad = data[..full.chunks[0].offset as usize].to_vec();
    bad.extend_from_slice(&b"CHNK".repeat(262_144));
    // A small stack: any per-resync recursion or layering would overflow it.
    let t = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || read_trace_bytes(bad).unwrap())
        .unwrap()
        .join()
        .unwrap();
    assert!(t.records.is_empty());
    // Counted past the cap, not held: memory stays bounded.
    assert_eq!(
        t.problems.len() as u64,
        PROBLEMS_MAX + 1,
        "{:?}",
        t.problems.last()
    );
    let last = t.problems.last().unwrap().to_string();
    assert!(last.contains("more problems"), "{last}");
    names_offset(&t);
}

#[test]
fn a_flipped_bit_in_a_chunk_header_loses_only_that_chunk() {
    let (recs, data, full) = sample();
    for victim in [0usize, 1] {
        let c = full.chunks[victim];
        // count, raw length, stored length and sequence number, bit by bit.
        for byte in 8..24 {
            for bit in [0u8, 3, 7] {
                let mut bad = data.clone();
                bad[c.offset as usize + byte] ^= 1 << bit;
                let t = read_trace_bytes(bad).unwrap();
                names_offset(&t);
                let lost = c.records as usize;
                assert_eq!(
                    t.records.len(),
                    recs.len() - lost,
                    "chunk {victim} byte {byte} bit {bit}: {:?}",
                    t.problems
                );
                assert!(t.footer.is_some(), "chunk {victim} byte {byte} bit {bit}");
                assert!(
                    t.problems
                        .iter()
                        .any(|p| p.to_string().contains(&c.offset.to_string())),
                    "{:?}",
                    t.problems
                );
            }
        }
    }
}

#[test]
fn duplicated_swapped_and_missing_chunks_are_reported() {
    let (recs, data, full) = sample();
    let span = |i: usize| {
        let a = full.chunks[i].offset as usize;
        let b = full.chunks[i + 1].offset as usize;
        (a, b)
    };
    let (a1, b1) = span(1);
    let (a2, b2) = span(2);

    // Chunk 1 twice: the copy is reported and left out.
    let mut dup = data[..b1].to_vec();
    dup.extend_from_slice(&data[a1..]);
    let t = read_trace_bytes(dup).unwrap();
    names_offset(&t);
    assert_eq!(t.records, recs);
    match &t.problems[..] {
        [TraceError::Corrupt { offset, why }] => {
            assert_eq!(*offset, b1 as u64);
            assert!(why.contains("repeats"), "{why}");
        }
        p => panic!("{p:?}"),
    }

    // Chunks 1 and 2 swapped: every record kept, the order reported.
    let mut swapped = data[..a1].to_vec();
    swapped.extend_from_slice(&data[a2..b2]);
    swapped.extend_from_slice(&data[a1..b1]);
    swapped.extend_from_slice(&data[b2..]);
    let t = read_trace_bytes(swapped).unwrap();
    names_offset(&t);
    assert_eq!(t.records.len(), recs.len());
    assert!(!t.problems.is_empty());
    assert!(t
        .problems
        .iter()
        .any(|p| p.to_string().contains("out of order")));

    // Chunk 2 cut out cleanly: the gap and the footer's count disagree.
    let mut gap = data[..a2].to_vec();
    gap.extend_from_slice(&data[b2..]);
    let t = read_trace_bytes(gap).unwrap();
    names_offset(&t);
    let lost = full.chunks[2].records as usize;
    assert_eq!(t.records.len(), recs.len() - lost);
    let text: Vec<String> = t.problems.iter().map(|p| p.to_string()).collect();
    assert!(
        text.iter()
            .any(|p| p.contains("chunk 2 is missing") && p.contains(&a2.to_string())),
        "{text:?}"
    );
    assert!(text.iter().any(|p| p.contains("footer counts")), "{text:?}");
}

#[test]
fn a_trace_cut_at_a_chunk_boundary_is_a_problem() {
    let (recs, data, full) = sample();
    let footer = full.chunks.last().unwrap().offset as usize;
    let t = read_trace_bytes(data[..footer].to_vec()).unwrap();
    assert_eq!(t.records, recs);
    assert!(t.footer.is_none());
    match &t.problems[..] {
        [TraceError::Truncated { offset, why }] => {
            assert_eq!(*offset, footer as u64);
            assert!(why.contains("no footer"), "{why}");
        }
        p => panic!("{p:?}"),
    }
}

#[test]
fn a_damaged_header_leaves_the_chunks_readable() {
    let (recs, data, _) = sample();
    for at in [12usize, 16, 25, 40] {
        let mut bad = data.clone();
        bad[at] ^= 0x10;
        let t = read_trace_bytes(bad).unwrap();
        names_offset(&t);
        assert_eq!(t.records, recs, "byte {at}");
        assert!(t.footer.is_some());
        assert_eq!(t.header.page_size, 4096);
        match &t.problems[..] {
            [TraceError::Header { why, .. }] => assert!(why.contains("default header"), "{why}"),
            p => panic!("byte {at}: {p:?}"),
        }
    }
}

#[test]
fn version_1_golden_traces_still_read_cleanly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "swt") {
            let data = std::fs::read(&p).unwrap();
            assert_eq!(&data[8..10], &1u16.to_le_bytes(), "{}", p.display());
            let t = read_trace_bytes(data).unwrap();
            assert!(t.problems.is_empty(), "{}: {:?}", p.display(), t.problems);
            assert!(t.footer.is_some());
            n += 1;
        }
    }
    assert!(n >= 4);
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
    let sb = export_jsonl(&whole, &mut b).unwrap();
    // Read ahead by a thread, and on this one.
    for ahead in [true, false] {
        a.clear();
        let sa = export_jsonl_stream(
            TraceStream::from_bytes_ahead(data.to_vec(), ahead).unwrap(),
            &mut a,
            |_| {},
        );
        assert_eq!(sa.unwrap(), sb, "{what}, ahead {ahead}");
        assert_eq!(a, b, "{what}, ahead {ahead}");
    }
}

#[test]
fn a_stream_dropped_early_stops_its_reading_thread() {
    let dir = tempfile::tempdir().unwrap();
    let data = write(&dir.path().join("t.swt"), &records(300_000));
    for _ in 0..20 {
        let mut s = TraceStream::from_bytes(data.clone()).unwrap();
        let first = s.next_batch().expect("a batch");
        assert!(!first.is_empty());
        // The thread may be blocked handing over the next chunk: the drop
        // must end it (the test would hang otherwise).
        drop(s);
    }
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
fn a_stream_batch_is_one_chunk() {
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
