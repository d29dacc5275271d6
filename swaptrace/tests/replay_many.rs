//! `swaptrace replay FILES…|DIR`: one row per (trace, policy), each equal
//! to the single-trace replay of that trace and policy.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_swaptrace");

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

fn json(args: &[&str]) -> Value {
    let out = Command::new(BIN)
        .args(args)
        .output()
        .expect("run swaptrace");
    assert!(
        out.status.success(),
        "swaptrace {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn each_row_equals_the_single_trace_replay_of_its_trace_and_policy() {
    let traces = [golden("swapoff.swt"), golden("zswap.swt")];
    let paths: Vec<&str> = traces.iter().map(|p| p.to_str().unwrap()).collect();
    let rows = json(&["replay", paths[0], paths[1], "--format", "json"]);
    let rows = rows.as_array().unwrap();
    let mut expected = 0;
    for path in &paths {
        let single = json(&["replay", path, "--json"]);
        let policies = single["policies"].as_array().unwrap();
        expected += policies.len();
        let host = Path::new(path).file_stem().unwrap().to_str().unwrap();
        for p in policies {
            let name = &p["metrics"]["policy"];
            let row = rows
                .iter()
                .find(|r| r["trace"] == *path && r["policy"] == *name)
                .unwrap_or_else(|| panic!("no row for {path} {name}"));
            assert_eq!(row["host"], host);
            assert_eq!(row["family"], "readahead");
            assert_eq!(row["kernel"], single_kernel(path));
            let mut compared = 0;
            for src in [p, &p["metrics"]] {
                for (k, v) in src.as_object().unwrap() {
                    if v.is_number() {
                        assert_eq!(&row[k], v, "{path} {name} {k}");
                        compared += 1;
                    }
                }
            }
            assert!(compared >= 10, "{path} {name}: {compared} figures compared");
        }
    }
    assert_eq!(rows.len(), expected, "traces × policies");

    // A directory of the same traces gives the same rows, in parallel.
    let dir = tempfile::tempdir().unwrap();
    for t in &traces {
        std::fs::copy(t, dir.path().join(t.file_name().unwrap())).unwrap();
    }
    let from_dir = json(&["replay", dir.path().to_str().unwrap(), "--json"]);
    assert_eq!(from_dir.as_array().unwrap().len(), expected);
}

fn single_kernel(path: &str) -> Value {
    json(&["info", path, "--json"])["header"]["kernel_release"].clone()
}
