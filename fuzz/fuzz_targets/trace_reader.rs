//! Bytes → the trace reader: no panic, bounded chunks, every problem names
//! an offset inside the input, and the streamed read gives what the whole
//! read gives.
#![no_main]

use libfuzzer_sys::fuzz_target;
use swaptrace::trace::{
    read_trace_bytes, TraceError, TraceStream, CHUNK_RECORDS_MAX, PROBLEMS_MAX,
};

fuzz_target!(|data: &[u8]| {
    let len = data.len() as u64;
    let Ok(t) = read_trace_bytes(data.to_vec()) else {
        return;
    };
    assert!(t.problems.len() as u64 <= PROBLEMS_MAX + 1);
    for c in &t.chunks {
        assert!(c.records <= CHUNK_RECORDS_MAX);
        assert!(c.offset < len);
    }
    for p in &t.problems {
        match p {
            TraceError::Header { offset, .. }
            | TraceError::Truncated { offset, .. }
            | TraceError::Corrupt { offset, .. } => assert!(*offset <= len, "{p}"),
            other => panic!("a problem without an offset: {other}"),
        }
    }
    let mut s = TraceStream::from_bytes(data.to_vec()).expect("opens as read_trace did");
    let mut records = Vec::new();
    while let Some(batch) = s.next_batch() {
        assert!(batch.len() <= CHUNK_RECORDS_MAX as usize);
        records.extend(batch);
    }
    let end = s.finish();
    assert_eq!(records, t.records);
    assert_eq!(end.footer, t.footer);
    let says = |p: &[TraceError]| p.iter().map(|e| e.to_string()).collect::<Vec<_>>();
    assert_eq!(says(&end.problems), says(&t.problems));
});
