//! docs/extending.md followed once: its "Add a readahead policy" blocks are
//! applied to a copy of the workspace, which is built and run. The toy
//! policy `pairs` must replay exactly as `fixed:2`, and the steps must touch
//! two files (the new one and the registry).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// The ```rust blocks of the section, each starting with a
/// `// new file: P` or `// in P, after|before `ANCHOR`:` line.
fn steps(doc: &str) -> Vec<(String, String)> {
    let section = doc
        .split("## Add a readahead policy")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("docs/extending.md has the section");
    let mut out = Vec::new();
    let mut rest = section;
    while let Some(i) = rest.find("```rust\n") {
        let body = &rest[i + 8..];
        let end = body.find("```").expect("closed block");
        let (first, code) = body[..end].split_once('\n').expect("a marker line");
        out.push((first.to_string(), code.to_string()));
        rest = &body[end + 3..];
    }
    out
}

fn copy_tree(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if name == "target" || name == ".git" {
            continue;
        }
        let (src, dst) = (e.path(), to.join(&name));
        if e.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&dst).unwrap();
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// Applies one block; returns the file it touched.
fn apply(root: &Path, marker: &str, code: &str) -> String {
    let marker = marker.trim().trim_start_matches("//").trim();
    if let Some(path) = marker.strip_prefix("new file: ") {
        let p = root.join(path);
        assert!(!p.exists(), "{path} exists already");
        std::fs::write(&p, code).unwrap();
        return path.to_string();
    }
    let spec = marker.strip_prefix("in ").expect("`new file:` or `in`");
    let (path, how) = spec.split_once(", ").expect("in P, after|before `X`:");
    let anchor = how.split('`').nth(1).expect("a quoted anchor");
    let p = root.join(path);
    let text = std::fs::read_to_string(&p).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim() == anchor)
        .unwrap_or_else(|| panic!("`{anchor}` not in {path}"));
    let at = if how.starts_with("after") { at + 1 } else { at };
    lines.splice(at..at, code.lines());
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    path.to_string()
}

#[test]
fn the_readahead_policy_steps_build_and_replay() {
    let ws = workspace();
    let doc = std::fs::read_to_string(ws.join("docs/extending.md")).unwrap();
    let steps = steps(&doc);
    assert_eq!(steps.len(), 3, "the section has three code steps");
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("ws");
    std::fs::create_dir_all(&copy).unwrap();
    copy_tree(&ws, &copy);
    let touched: BTreeSet<String> = steps.iter().map(|(m, c)| apply(&copy, m, c)).collect();
    println!("files touched: {touched:?}");
    assert_eq!(touched.len(), 2, "{touched:?}");

    // Built offline, without the eBPF object; the target directory is kept
    // between runs so that only swaptrace itself is rebuilt.
    let target = ws.join("target/extending-check");
    let st = Command::new(env!("CARGO"))
        .args(["build", "--offline", "-q", "-p", "swaptrace"])
        .args(["--no-default-features", "--bin", "swaptrace"])
        .current_dir(&copy)
        .env("CARGO_TARGET_DIR", &target)
        .status()
        .expect("cargo");
    assert!(st.success(), "the tree with the toy policy does not build");
    let out = Command::new(target.join("debug/swaptrace"))
        .args(["replay", "examples/sample.swt", "--policy", "pairs,fixed:2"])
        .arg("--json")
        .current_dir(&copy)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows: Vec<&serde_json::Value> = v["policies"]
        .as_array()
        .expect("policies")
        .iter()
        .map(|p| &p["metrics"])
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["policy"], "pairs");
    for k in ["pswpin", "pgmajfault", "swap_ra", "swap_ra_hit"] {
        assert!(rows[1][k].as_u64().is_some(), "{k} in {}", rows[1]);
        assert_eq!(rows[0][k], rows[1][k], "{k}: pairs vs fixed:2");
    }
    let help = Command::new(target.join("debug/swaptrace"))
        .args(["replay", "examples/sample.swt", "--policy", "help"])
        .current_dir(&copy)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&help.stdout).contains("pairs"));
}
