//! Trace file format: round trip, recovery from truncation and corruption,
//! refusal of non-traces.

use swaptrace::trace::{
    read_trace, Footer, Header, OutKind, Record, SwapEntry, TraceError, TraceWriter,
};

fn header() -> Header {
    Header {
        format_version: swaptrace::trace::FORMAT_VERSION,
        kernel_release: "6.18.0-test".into(),
        page_size: 4096,
        target: "test".into(),
        ..Header::default()
    }
}

/// Enough swap-outs and faults for several chunks, with a xorshift mix of
/// addresses so chunks do not compress to nothing.
fn records(n: u64) -> Vec<Record> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut out = Vec::new();
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let page = 0x7f00_0000 + (x % 100_000);
        let entry = SwapEntry {
            dev: (i % 2) as u8,
            offset: i,
        };
        out.push(Record::SwapOut {
            ts: i * 1000,
            tid: 100 + (i % 3) as u32,
            mm: 1,
            vaddr: page << 12,
            entry,
            nr: 1,
            how: OutKind::Io,
        });
        out.push(Record::SwapFault {
            ts: i * 1000 + 500,
            dur_ns: (x % 50_000) as u32,
            tid: 7,
            mm: 1,
            addr: (page << 12) | (x & 0xfff),
            entry: Some(entry),
            major: x & 1 == 0,
            pages_read: (x % 9) as u32,
            zero_reads: 0,
            zswap_loads: 0,
            write: false,
        });
    }
    out
}

fn write(path: &std::path::Path, recs: &[Record]) -> u64 {
    let mut w = TraceWriter::create(path, &header()).unwrap();
    for r in recs {
        w.push(r).unwrap();
    }
    w.finish(&Footer {
        records: recs.len() as u64,
        ..Footer::default()
    })
    .unwrap()
}

#[test]
fn round_trip_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.swt");
    let recs = records(60_000);
    let bytes = write(&path, &recs);
    let t = read_trace(&path).unwrap();
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    assert_eq!(t.header, header());
    assert_eq!(t.records, recs);
    assert_eq!(t.footer.unwrap().records, recs.len() as u64);
    assert!(
        t.chunks.len() > 3,
        "want several chunks, got {}",
        t.chunks.len()
    );
    eprintln!(
        "{} records in {} bytes: {:.2} bytes/record",
        recs.len(),
        bytes,
        bytes as f64 / recs.len() as f64
    );
}

#[test]
fn truncated_file_keeps_every_complete_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.swt");
    let recs = records(60_000);
    write(&path, &recs);
    let full = read_trace(&path).unwrap();
    let data = std::fs::read(&path).unwrap();
    // Cut inside the third records chunk.
    let third = full.chunks[2];
    let cut = third.offset as usize + 30;
    std::fs::write(&path, &data[..cut]).unwrap();
    let t = read_trace(&path).unwrap();
    let want: u32 = full.chunks[..2].iter().map(|c| c.records).sum();
    assert_eq!(t.records.len(), want as usize);
    assert_eq!(t.records[..], recs[..want as usize]);
    assert!(t.footer.is_none());
    // The cut chunk, then the missing footer (at the end of the file).
    match &t.problems[..] {
        [TraceError::Truncated { offset, .. }, TraceError::Truncated { offset: end, why }] => {
            assert_eq!(*offset, third.offset);
            assert_eq!(*end, cut as u64);
            assert!(why.contains("no footer"), "{why}");
        }
        p => panic!("want one truncation at {}, got {p:?}", third.offset),
    }
}

#[test]
fn flipped_byte_is_reported_with_its_offset_and_the_rest_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.swt");
    let recs = records(60_000);
    write(&path, &recs);
    let full = read_trace(&path).unwrap();
    let mut data = std::fs::read(&path).unwrap();
    let second = full.chunks[1];
    data[second.offset as usize + 100] ^= 0x40;
    std::fs::write(&path, &data).unwrap();
    let t = read_trace(&path).unwrap();
    match &t.problems[..] {
        [TraceError::Corrupt { offset, why }] => {
            assert_eq!(*offset, second.offset);
            assert!(why.contains("checksum"), "{why}");
        }
        p => panic!("want one corrupt chunk, got {p:?}"),
    }
    let lost = second.records as usize;
    assert_eq!(t.records.len(), recs.len() - lost);
    assert!(t.footer.is_some());
    let msg = t.problems[0].to_string();
    assert!(msg.contains(&second.offset.to_string()), "{msg}");
}

#[test]
fn damaged_chunk_header_resyncs_to_the_next_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.swt");
    write(&path, &records(60_000));
    let full = read_trace(&path).unwrap();
    let mut data = std::fs::read(&path).unwrap();
    let second = full.chunks[1];
    data[second.offset as usize] = b'X';
    std::fs::write(&path, &data).unwrap();
    let t = read_trace(&path).unwrap();
    assert_eq!(t.problems.len(), 1, "{:?}", t.problems);
    assert_eq!(t.chunks.len(), full.chunks.len() - 1);
    assert!(t.footer.is_some());
}

#[test]
fn random_bytes_and_other_files_are_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("noise");
    let mut x = 12345u64;
    let noise: Vec<u8> = (0..10_000)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            (x >> 33) as u8
        })
        .collect();
    std::fs::write(&path, &noise).unwrap();
    let e = read_trace(&path).unwrap_err();
    assert!(matches!(e, TraceError::NotATrace), "{e}");
    assert!(e.to_string().contains("not a swaptrace trace"));

    std::fs::write(&path, b"").unwrap();
    assert!(matches!(read_trace(&path), Err(TraceError::NotATrace)));

    // Right magic, future version.
    let mut v = b"SWPTRACE".to_vec();
    v.extend_from_slice(&99u16.to_le_bytes());
    v.extend_from_slice(&[0; 10]);
    std::fs::write(&path, &v).unwrap();
    assert!(matches!(
        read_trace(&path),
        Err(TraceError::Version { found: 99 })
    ));

    let e = read_trace(&dir.path().join("missing")).unwrap_err();
    assert!(e.to_string().contains("missing"), "{e}");
}

#[test]
fn every_prefix_of_a_small_trace_reads_without_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.swt");
    let recs = records(50);
    write(&path, &recs);
    let data = std::fs::read(&path).unwrap();
    let cut = dir.path().join("cut.swt");
    for n in 0..data.len() {
        std::fs::write(&cut, &data[..n]).unwrap();
        if let Ok(t) = read_trace(&cut) {
            assert!(t.records.len() <= recs.len());
        }
    }
}
