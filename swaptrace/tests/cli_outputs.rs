//! Outputs and damaged inputs on the command line (issue 18, defects 8 and
//! 10): no output over an input, no overwrite without --force, no write
//! through a symlink, mode 0600, nothing left behind; every reading command
//! warns about a trace cut at a chunk boundary and --strict makes it fail.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
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

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn synth(out: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["synth", "-o", s(out), "--pages", "4096"];
    args.extend_from_slice(extra);
    run(&args)
}

/// No temporary file is left in `dir`.
fn no_temp_files(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.ends_with(".tmp"), "left behind: {name}");
    }
}

#[test]
fn an_output_is_never_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("s.swt");
    assert_eq!(synth(&t, &[]).0, 0);
    let before = std::fs::read(&t).unwrap();
    for force in [false, true] {
        let mut args = vec!["export", s(&t), "-o", s(&t)];
        if force {
            args.push("--force");
        }
        let (code, _, err) = run(&args);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("also an input"), "{err}");
        assert_eq!(std::fs::read(&t).unwrap(), before);
    }
    // The same file by another name.
    let j = dir.path().join("in.jsonl");
    assert_eq!(run(&["export", s(&t), "-o", s(&j)]).0, 0);
    let jsonl = std::fs::read(&j).unwrap();
    let other = dir.path().join("./in.jsonl");
    let (code, _, err) = run(&["import", s(&j), "-o", s(&other), "--force"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("also an input"), "{err}");
    assert_eq!(std::fs::read(&j).unwrap(), jsonl);
    no_temp_files(dir.path());
}

#[test]
fn an_existing_trace_is_replaced_only_with_force_and_traces_are_private() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("s.swt");
    assert_eq!(synth(&t, &[]).0, 0);
    assert_eq!(
        std::fs::metadata(&t).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let before = std::fs::read(&t).unwrap();
    let (code, _, err) = synth(&t, &["--seed", "2"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("--force"), "{err}");
    assert_eq!(std::fs::read(&t).unwrap(), before);
    let ino = std::fs::metadata(&t).unwrap().ino();
    let (code, _, err) = synth(&t, &["--seed", "2", "--force"]);
    assert_eq!(code, 0, "{err}");
    assert_ne!(std::fs::read(&t).unwrap(), before);
    // Renamed into place, not rewritten in place.
    assert_ne!(std::fs::metadata(&t).unwrap().ino(), ino);
    let j = dir.path().join("t.jsonl");
    assert_eq!(run(&["export", s(&t), "-o", s(&j)]).0, 0);
    let i = dir.path().join("i.swt");
    assert_eq!(run(&["import", s(&j), "-o", s(&i)]).0, 0);
    assert_eq!(
        std::fs::metadata(&i).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(run(&["import", s(&j), "-o", s(&i)]).0, 1);
    assert_eq!(run(&["export", s(&t), "-o", s(&j)]).0, 1);
    no_temp_files(dir.path());
}

#[test]
fn a_symlink_is_never_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let link = dir.path().join("planted.swt");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let (code, _, err) = synth(&link, &["--force"]);
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("symbolic link"), "{err}");
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
    } else {
        // The link itself is replaced by the new trace.
        assert_eq!(code, 0, "{err}");
        assert!(std::fs::symlink_metadata(&link).unwrap().is_file());
    }
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    no_temp_files(dir.path());
}

#[test]
fn a_trace_cut_at_a_chunk_boundary_is_reported_by_every_reader() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full.swt");
    assert_eq!(synth(&full, &[]).0, 0);
    let t = swaptrace::trace::read_trace(&full).unwrap();
    let footer = t.chunks.last().unwrap().offset;
    let data = std::fs::read(&full).unwrap();
    let cut = dir.path().join("cut.swt");
    std::fs::write(&cut, &data[..footer as usize]).unwrap();
    let out = dir.path().join("cut.jsonl");
    let cases: Vec<Vec<&str>> = vec![
        vec!["info", s(&cut)],
        vec!["replay", s(&cut)],
        vec!["hist", s(&cut), "--metric", "ra-window"],
        vec!["compare", s(&full), s(&cut)],
        vec!["export", s(&cut), "-o", s(&out), "--force"],
    ];
    for args in cases {
        let (_, _, err) = run(&args);
        assert!(err.contains("no footer"), "{args:?}: {err}");
        assert!(err.contains(&format!("offset {footer}")), "{args:?}: {err}");
        let mut strict = args.clone();
        strict.push("--strict");
        let (code, _, err) = run(&strict);
        assert_eq!(code, 1, "{strict:?}: {err}");
        assert!(err.contains("--strict"), "{strict:?}: {err}");
    }
    // Under --strict, export wrote nothing; without it, the whole file.
    let (code, _, _) = run(&["--strict", "export", s(&cut), "-o", s(&out), "--force"]);
    assert_eq!(code, 1);
    no_temp_files(dir.path());
    let (code, _, err) = run(&["export", s(&cut), "-o", s(&out), "--force"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.exists());
    // The clean trace passes --strict.
    assert_eq!(run(&["--strict", "info", s(&full)]).0, 0);
}
