//! Bytes → the JSON Lines importer → the trace reader: no panic, and what
//! was imported reads back whole and clean (no silent loss).
#![no_main]

use libfuzzer_sys::fuzz_target;
use swaptrace::trace::{import_jsonl, read_trace, OutputPolicy};

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("swaptrace-fuzz-{}.swt", std::process::id()));
    let Ok(report) = import_jsonl(data, &path, &OutputPolicy::replace()) else {
        return;
    };
    let t = read_trace(&path).expect("an imported trace reads");
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    assert_eq!(t.records.len() as u64 + t.skipped, report.records);
    assert!(t.footer.is_some());
});
