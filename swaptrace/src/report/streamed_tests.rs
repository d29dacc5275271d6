//! Families replayed from a load that kept only the records they read
//! ([`Family::reads`]) give the same JSON as from the whole trace.

use crate::replay::{ReplayRequest, FAMILIES};
use crate::trace::{read_trace, TraceStream};
use std::path::PathBuf;

fn traces() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut v = vec![root.join("../examples/sample.swt")];
    for n in ["free", "khugepaged", "swapoff", "zswap"] {
        v.push(root.join(format!("tests/golden/{n}.swt")));
    }
    v
}

#[test]
fn a_filtered_load_replays_like_the_whole_trace() {
    let req = ReplayRequest {
        policies: Some("all"),
        params: &[],
        memory_pages: None,
        device: None,
    };
    let mut dropped = 0;
    let mut compared = 0;
    for path in traces() {
        let whole = read_trace(&path).expect("trace");
        for f in FAMILIES.iter().skip(1) {
            let kept = TraceStream::open(&path)
                .expect("trace")
                .load_where(|r| f.reads(r), |_| {});
            assert_eq!(kept.header, whole.header);
            assert_eq!(kept.footer, whole.footer);
            dropped += whole.records.len() - kept.records.len();
            let (a, b) = (f.run(&whole, &req), f.run(&kept, &req));
            match (a, b) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(
                        super::replayed_json(&whole, &a),
                        super::replayed_json(&kept, &b),
                        "{} on {}",
                        f.name(),
                        path.display()
                    );
                    compared += 1;
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                (a, b) => panic!(
                    "{} on {}: {:?} vs {:?}",
                    f.name(),
                    path.display(),
                    a.err().map(|e| e.to_string()),
                    b.err().map(|e| e.to_string())
                ),
            }
        }
    }
    assert!(compared >= 6, "only {compared} replays compared");
    assert!(dropped > 0, "the filter kept every record");
}
