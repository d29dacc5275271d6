//! README's command synopsis kept honest against the clap definitions: the
//! block between `<!-- synopsis:begin -->` and `<!-- synopsis:end -->` is
//! what `swaptrace __synopsis` prints (`cargo xtask readme` rewrites it), and
//! every `swaptrace …` line of README's other shell blocks uses only flags
//! its command has.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

const EXE: &str = env!("CARGO_BIN_EXE_swaptrace");
const README: &str = include_str!("../../README.md");
const BEGIN: &str = "<!-- synopsis:begin -->\n";
const END: &str = "<!-- synopsis:end -->";

fn synopsis() -> String {
    let o = Command::new(EXE)
        .arg("__synopsis")
        .output()
        .expect("running swaptrace");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).expect("UTF-8")
}

/// README's block between the markers.
fn readme_block() -> &'static str {
    let a = README
        .find(BEGIN)
        .expect("README has the synopsis begin marker")
        + BEGIN.len();
    let b = README[a..]
        .find(END)
        .expect("README has the synopsis end marker");
    &README[a..a + b]
}

/// The long flags of a line (`--name`, from `[--name VALUE]`,
/// `-o|--output` or `--param=…`), up to a comment or a bare `--`.
fn long_flags(line: &str) -> Vec<String> {
    let mut v = Vec::new();
    for tok in line.split_whitespace() {
        if tok.starts_with('#') {
            break;
        }
        let t = tok.trim_start_matches('[');
        if t == "--" {
            break;
        }
        for part in t.split('|') {
            if let Some(rest) = part.strip_prefix("--") {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                if !name.is_empty() {
                    v.push(format!("--{name}"));
                }
            }
        }
    }
    v
}

/// Command path (`swaptrace lab swap`) → its long flags, from the lines of
/// a synopsis. The first line (`swaptrace [--strict] COMMAND`) gives the
/// global flags, under "swaptrace".
fn commands(synopsis: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut m = BTreeMap::new();
    for line in synopsis.lines().filter(|l| l.starts_with("swaptrace")) {
        let path: Vec<&str> = line
            .split_whitespace()
            .take_while(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
            .collect();
        m.insert(path.join(" "), long_flags(line).into_iter().collect());
    }
    m
}

/// (command, flag) pairs, and (command, "") for the command itself.
fn pairs(m: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<(String, String)> {
    m.iter()
        .flat_map(|(c, fl)| {
            std::iter::once((c.clone(), String::new()))
                .chain(fl.iter().map(move |f| (c.clone(), f.clone())))
        })
        .collect()
}

#[test]
fn readme_synopsis_matches_the_clap_definitions() {
    let generated = synopsis();
    let clap = pairs(&commands(&generated));
    let block = readme_block();
    let readme = pairs(&commands(block));
    let show = |s: BTreeSet<&(String, String)>| {
        s.into_iter()
            .map(|(c, f)| format!("{c} {f}").trim_end().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    // Commands and flags first, so a failure names what is missing.
    assert!(
        clap == readme,
        "README's synopsis is out of date (run `cargo xtask readme`):\n  \
         in clap, not in README: {}\n  in README, not in clap: {}",
        show(clap.difference(&readme).collect()),
        show(readme.difference(&clap).collect())
    );
    // The ones the issue found missing.
    for (c, f) in [
        ("swaptrace demo", "--swap-dir"),
        ("swaptrace demo", "--pattern"),
        ("swaptrace record", "--no-fentry"),
    ] {
        assert!(clap.contains(&(c.into(), f.into())), "{c} {f}");
    }
    assert!(block.contains("zap-interval"), "{block}");
    // Then the text: value names, possible values, order.
    assert_eq!(
        block,
        format!("```sh\n{generated}```\n"),
        "README's synopsis block differs from `swaptrace __synopsis` (run `cargo xtask readme`)"
    );
}

#[test]
fn readme_invocations_use_only_flags_their_command_has() {
    let cmds = commands(&synopsis());
    let global = cmds.get("swaptrace").cloned().unwrap_or_default();
    assert!(global.contains("--strict"), "{cmds:?}");
    let outside = README.replace(readme_block(), "");
    let mut in_fence = false;
    let mut checked = 0;
    let mut bad = Vec::new();
    for line in outside.lines() {
        if line.starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence || !line.starts_with("swaptrace ") {
            continue;
        }
        // The longest command path the line starts with.
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(flags) = (2..=3)
            .rev()
            .find_map(|n| cmds.get(&words.get(..n)?.join(" ")))
        else {
            bad.push(format!("no such command: {line}"));
            continue;
        };
        for f in long_flags(line) {
            if !flags.contains(&f) && !global.contains(&f) && f != "--help" {
                bad.push(format!("{f} in: {line}"));
            }
        }
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} README lines checked");
    assert!(
        bad.is_empty(),
        "README uses flags clap does not have:\n{}",
        bad.join("\n")
    );
}

#[test]
fn long_flags_are_read_from_each_form() {
    assert_eq!(
        long_flags(
            "swaptrace x -o|--output F [--a B] [--pid P | --cgroup D] --k=v [-- --no] # --c"
        ),
        ["--output", "--a", "--pid", "--cgroup", "--k"]
    );
}
