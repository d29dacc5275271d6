//! The command line's output, as issue 21 asked for it: charts that cover
//! the trace, `compare` with knobs, units, split latencies and repeated
//! runs, the table words defined, messages that say what the trace recorded.
//! (Kept apart from tests/cli.rs, which is near the 800-line limit.)

use std::process::Command;

const EXE: &str = env!("CARGO_BIN_EXE_swaptrace");

fn run(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(EXE).args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `plot` of the golden swapoff trace writes every chart, each a real
/// picture (not an empty canvas).
#[cfg(feature = "plot")]
#[test]
fn plot_writes_every_chart_of_a_swapoff_trace() {
    let t = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/swapoff.swt");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("charts");
    let (code, so, err) = run(&[
        "plot",
        t,
        "-o",
        out.to_str().unwrap(),
        "--policy",
        "cluster,cluster-swapoff-fix,cluster-no-swapoff-fix",
    ]);
    assert_eq!(code, 0, "{err}");
    for f in ["windows.png", "swapins.png", "heatmap.png", "policies.png"] {
        let p = out.join(f);
        let n = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
        assert!(n > 20_000, "{f}: {n} bytes");
        assert!(so.contains(f), "{so}");
    }
}

/// `compare A B` names the knobs that differ, gives runtime its unit,
/// splits fault latency into major faults and swap-cache hits, and prints
/// the live window table (pages read per major fault) for both sides.
#[test]
fn compare_shows_knobs_units_split_latency_and_windows() {
    let s = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/sample.swt");
    let o = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/swapoff.swt");
    let (code, out, err) = run(&["compare", o, s]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("* memory limit"), "{out}");
    assert!(out.contains("  page-cluster"), "{out}");
    assert!(out.contains("* swap devices"), "{out}");
    assert!(out.contains("runtime (s)"), "{out}");
    assert!(out.contains("fault latency, major faults"), "{out}");
    assert!(out.contains("fault latency, swap-cache hits"), "{out}");
    assert!(out.contains("pages read per major fault"), "{out}");
    assert!(out.contains("$retval = 8"), "{out}");
}

/// `compare A1 A2 -- B1 B2`: mean ± stddev per side and the change with
/// its spread, in the table and the JSON; options after `--` are refused.
#[test]
fn compare_repeated_runs_prints_mean_and_spread() {
    let s = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/sample.swt");
    let o = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/swapoff.swt");
    let (code, out, err) = run(&["compare", "--json", o, s, "--", s, s]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["runs"], serde_json::json!([2, 2]));
    let row = v["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "pswpin")
        .cloned()
        .unwrap();
    // A: 6436 and 35175 pages; B: 35175 twice.
    assert_eq!(row["a"], 20805.5);
    assert_eq!(row["b"], 35175.0);
    assert!(row["a_stddev"].as_f64().unwrap() > 20_000.0, "{row}");
    assert_eq!(row["b_stddev"], 0.0);
    assert!(row["change_spread_pct"].as_f64().unwrap() > 0.0, "{row}");
    let (code, out, err) = run(&["compare", o, s, "--", s, s]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("runs: A 2, B 2"), "{out}");
    assert!(out.contains(" ± "), "{out}");
    let (code, _, err) = run(&["compare", o, "--", s, "--json"]);
    assert_eq!(code, 1);
    assert!(err.contains("put options before"), "{err}");
    let (code, _, err) = run(&["compare", o]);
    assert_eq!(code, 1);
    assert!(err.contains("A1 A2"), "{err}");
}

/// The table words are defined in `replay --help`, in the glossary it
/// points to and in README; the oracle's MODE 8 beside SWAP_RA 0 in the
/// swapoff table is explained under it.
#[test]
fn table_words_are_defined_and_the_oracle_swapoff_row_explained() {
    let (code, help, err) = run(&["replay", "--help"]);
    assert_eq!(code, 0, "{err}");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let glossary = std::fs::read_to_string(format!("{root}/docs/extending.md")).unwrap();
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    assert!(help.contains("Words the tables use"), "{help}");
    for w in ["ACCURACY", "COVERAGE", "POLLUTION", "TIMELINESS", "MODE"] {
        assert!(help.contains(&format!("  {w} ")), "{w} not in --help");
        assert!(
            glossary.contains(&format!("| {w} |")),
            "{w} not in the glossary"
        );
        assert!(readme.contains(w), "{w} not in README");
    }
    let t = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/swapoff.swt");
    let (code, out, err) = run(&["replay", t, "--policy", "cluster,oracle"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("oracle allowed a window but read none ahead"),
        "{out}"
    );
}

/// `info` shows the cgroup limit replay uses; zswap on a trace recorded
/// with zswap off says so and what the pool is sized from; khugepaged with
/// no scans names the recorded THP mode; free without batches exits 0 with
/// a note when it showed the zap batches, 1 when it had nothing to show.
#[test]
fn small_messages_say_what_the_trace_recorded() {
    let g = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden");
    let s = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/sample.swt");
    let (code, out, err) = run(&["info", s]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("memory      limit 64 MiB"), "{out}");
    let (code, out, err) = run(&["replay", &format!("{g}/swapoff.swt"), "--family", "zswap"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("zswap was off when this trace was recorded"),
        "{out}"
    );
    assert!(out.contains("of the host's"), "{out}");
    let (code, out, err) = run(&["replay", &format!("{g}/zswap.swt"), "--family", "zswap"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("zswap was off"), "{out}");
    assert!(out.contains("--param pool-pages="), "{out}");
    let (code, _, err) = run(&[
        "replay",
        &format!("{g}/swapoff.swt"),
        "--family",
        "khugepaged",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("was `madvise`"), "{err}");
    assert!(!err.contains("only with"), "{err}");
    let (code, out, err) = run(&["replay", &format!("{g}/zswap.swt"), "--family", "free"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("zapping page tables"), "{out}");
    assert!(err.contains("note: the trace has no free batches"), "{err}");
    let (code, _, err) = run(&["replay", s, "--family", "free"]);
    assert_eq!(code, 1, "{err}");
}
