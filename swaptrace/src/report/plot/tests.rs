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

/// A chart is written through the output helper: a real PNG in place, and
/// a symlink at its name is never written through (as root it is refused,
/// otherwise replaced), so the file it points to keeps its bytes.
#[test]
fn charts_are_renamed_into_place_never_through_a_symlink() {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = Metrics {
        policy: "cluster".into(),
        pswpin: 10,
        ..Metrics::default()
    };
    let ok = dir.path().join("policies.png");
    policies_png(&ok, "caption", std::slice::from_ref(&m)).expect("chart");
    let bytes = std::fs::read(&ok).expect("png");
    assert_eq!(&bytes[1..4], b"PNG");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, b"keep").expect("victim");
    let link = dir.path().join("link.png");
    std::os::unix::fs::symlink(&victim, &link).expect("symlink");
    let r = policies_png(&link, "caption", &[m]);
    assert_eq!(std::fs::read(&victim).expect("victim"), b"keep");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        assert!(r.is_err(), "a symlink was written through as root");
    } else {
        r.expect("chart over a symlink");
        assert!(!std::fs::symlink_metadata(&link).expect("link").is_symlink());
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).expect("dir").collect();
    assert_eq!(left.len(), 3, "a temporary file was left behind");
}
