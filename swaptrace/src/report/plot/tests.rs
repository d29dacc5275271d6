//! Data-level checks of the charts: x range, legend place, caption.

use super::*;

fn golden(name: &str) -> Loaded {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    crate::trace::read_trace(&p).expect("golden trace")
}

/// swapins.png and heatmap.png run to the end of the recording, past the
/// last fault: far enough to hold the last page swapoff read.
#[test]
fn x_range_holds_the_last_swapoff_read() {
    let t = golden("swapoff.swt");
    let t0 = t.header.monotonic_start_ns;
    let sec = |ts: u64| (ts - t0) as f64 / 1e9;
    let last_read = t
        .records
        .iter()
        .filter_map(|r| match r {
            Record::SwapRead { ts, .. } => Some(sec(*ts)),
            _ => None,
        })
        .fold(0.0, f64::max);
    let last_fault = t
        .records
        .iter()
        .filter_map(|r| match r {
            Record::SwapFault { ts, .. } => Some(sec(*ts)),
            _ => None,
        })
        .fold(0.0, f64::max);
    assert!(
        last_read > last_fault,
        "the golden trace reads after its faults"
    );
    assert!(span_s(&t) >= last_read, "{} < {last_read}", span_s(&t));
    let mut tl = Timeline::new(&t.header);
    tl.add(&t.records);
    let tl = tl.finish(t.footer.as_ref());
    assert_eq!(tl.span_s(), span_s(&t));
    assert_eq!(outside_reads_name(tl.swapoff), "swapoff reads (pages)");
}

/// The legend goes to an empty corner; with none empty the y range
/// grows to make room at the top.
#[test]
fn legend_avoids_the_data() {
    // Points only in the upper right: the legend goes elsewhere.
    let pts = [(9.0, 9.0), (8.0, 9.5)];
    let (pos, y) = legend_place(&pts, 10.0, 10.0);
    assert!(!matches!(pos, SeriesLabelPosition::UpperRight));
    assert_eq!(y, 10.0);
    // A point in every corner: the top is stretched.
    let pts = [(0.0, 0.0), (0.0, 10.0), (10.0, 0.0), (10.0, 10.0)];
    let (_, y) = legend_place(&pts, 10.0, 10.0);
    assert!(y > 10.0);
}

/// Every chart names its trace, kernel, limit and readahead knobs.
#[test]
fn caption_names_the_trace_and_its_knobs() {
    let t = golden("swapoff.swt");
    let c = caption(&t, "swapoff.swt");
    for want in [
        "swapoff.swt",
        "kernel 6.",
        "memory limit",
        "page-cluster 3",
        "vma_ra_enabled true",
    ] {
        assert!(c.contains(want), "{want} missing from {c}");
    }
}
