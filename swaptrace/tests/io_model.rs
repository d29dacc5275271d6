//! `replay`'s modelled I/O time: fitted to the trace's own major faults by
//! default, labelled as a model, printed beside the measured time, and a
//! `--device` preset on request.

use std::process::Command;

const EXE: &str = env!("CARGO_BIN_EXE_swaptrace");
const SAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/sample.swt");
const ZSWAP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/zswap.swt");

fn replay(args: &[&str]) -> String {
    let o = Command::new(EXE)
        .arg("replay")
        .args(args)
        .output()
        .expect("running swaptrace");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(args: &[&str]) -> serde_json::Value {
    let mut a = args.to_vec();
    a.push("--json");
    serde_json::from_str(&replay(&a)).expect("JSON")
}

#[test]
fn the_default_model_is_fitted_and_shown_beside_the_measured_time() {
    let out = replay(&[SAMPLE]);
    let header = out.lines().next().unwrap_or_default();
    assert!(header.ends_with(" MODEL_IO_MS"), "{out}");
    assert!(
        out.contains(
            "MODEL_IO_MS: a model, not a measurement: fitted to this trace's major faults"
        ),
        "{out}"
    );
    assert!(out.contains(", R² 0.99"), "{out}");
    assert!(
        out.contains("measured: 7178 major faults took 1135.69 ms in all"),
        "{out}"
    );
    assert!(out.contains("in a 1.84 s trace"), "{out}");
    let j = json(&[SAMPLE]);
    let m = &j["io_model"]["model"];
    assert_eq!(m["source"], "fit", "{j}");
    let req = m["request_ms"].as_f64().unwrap_or(-1.0);
    let page = m["page_ms"].as_f64().unwrap_or(-1.0);
    // The sample's faults: about 36 µs per fault and 5 µs per page.
    assert!((0.02..0.05).contains(&req), "{m}");
    assert!((0.002..0.008).contains(&page), "{m}");
    assert!(m["faults"].as_u64().unwrap_or(0) > 7000, "{m}");
    assert_eq!(j["device"]["name"], "fit");
    assert_eq!(j["io_model"]["measured"]["major_faults"], 7178);
}

#[test]
fn device_still_picks_a_preset() {
    let out = replay(&[SAMPLE, "--device", "hdd"]);
    assert!(
        out.contains("the `hdd` preset's round figures: 8.00 ms per request + 0.0300 ms per page"),
        "{out}"
    );
    assert!(out.contains("measured: 7178 major faults"), "{out}");
    let j = json(&[SAMPLE, "--device", "hdd"]);
    assert_eq!(j["io_model"]["model"]["source"], "preset");
    assert_eq!(j["device"]["request_us"], 8000.0);
}

#[test]
fn a_trace_without_disk_reads_falls_back_with_a_note() {
    // zswap.swt's major faults all load from zswap: no reads to fit.
    let out = replay(&[ZSWAP]);
    assert!(
        out.contains("the `ssd` preset's round figures")
            && out.contains("No fit to this trace's faults: 0 major faults read from swap"),
        "{out}"
    );
    let j = json(&[ZSWAP]);
    assert_eq!(j["io_model"]["model"]["source"], "fallback");
    assert_eq!(j["device"]["name"], "ssd");
}

#[test]
fn device_help_names_the_default() {
    let o = Command::new(EXE)
        .args(["replay", "--help"])
        .output()
        .expect("running swaptrace");
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(
        help.contains("Default: per-request and per-page costs fitted to the trace's major faults"),
        "{help}"
    );
}
