//! Replay output pinned by golden files: for the shipped sample trace and
//! small traces recorded on a 6.18 host (tests/golden/*.swt), the JSON each
//! replay family prints, written by the build before the replay families
//! were redesigned. A change that moves these numbers must say why and
//! rewrite the files (`SWAPTRACE_BLESS=1 cargo test --test golden`).

use std::path::{Path, PathBuf};
use std::process::Command;

const EXE: &str = env!("CARGO_BIN_EXE_swaptrace");

fn golden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// One row of cases.tsv: trace, arguments, expected stdout file (`-`: none),
/// exit code. Arguments starting with HIST run `hist` instead of `replay`.
struct Case {
    trace: String,
    args: Vec<String>,
    out: Option<String>,
    code: i32,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(golden().join("cases.tsv")).expect("cases.tsv");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 4, "bad cases.tsv line {l:?}");
            Case {
                trace: f[0].to_string(),
                args: f[1].split(' ').map(str::to_string).collect(),
                out: (f[2] != "-").then(|| f[2].to_string()),
                code: f[3].parse().expect("exit code"),
            }
        })
        .collect()
}

#[test]
fn replay_json_is_unchanged() {
    let dir = golden();
    let bless = std::env::var_os("SWAPTRACE_BLESS").is_some();
    let all = cases();
    assert!(all.len() >= 20, "cases.tsv lists {} cases", all.len());
    let mut bad = Vec::new();
    for c in &all {
        let mut cmd = Command::new(EXE);
        let args: Vec<&str> = c.args.iter().map(String::as_str).collect();
        match args.split_first() {
            Some((&"HIST", rest)) => cmd.arg("hist").arg(&c.trace).args(rest),
            _ => cmd.arg("replay").arg(&c.trace).args(&args),
        };
        let o = cmd.current_dir(&dir).output().expect("running swaptrace");
        let code = o.status.code().unwrap_or(-1);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            !stderr.contains("panicked"),
            "{} {:?}: {stderr}",
            c.trace,
            c.args
        );
        let what = format!("{} {}", c.trace, c.args.join(" "));
        if code != c.code {
            bad.push(format!(
                "{what}: exit {code}, expected {}: {stderr}",
                c.code
            ));
        }
        match &c.out {
            Some(f) if bless => std::fs::write(dir.join(f), &o.stdout).expect("bless"),
            Some(f) => {
                let want = std::fs::read(dir.join(f)).expect("golden file");
                if want != o.stdout {
                    bad.push(format!("{what}: stdout differs from {f}"));
                }
            }
            None if !o.stdout.is_empty() => bad.push(format!("{what}: unexpected stdout")),
            None => {}
        }
    }
    assert!(
        bad.is_empty(),
        "{} problems in {} cases:\n{}",
        bad.len(),
        all.len(),
        bad.join("\n")
    );
}
