//! The layering of `lib.rs`, checked on the sources: a module imports
//! (`crate::<module>`) only modules of a lower layer.

use std::path::Path;

/// Each library module and its layer.
const LAYERS: &[(&str, u8)] = &[
    ("lab", 0),
    ("stats", 0),
    ("trace", 1),
    ("workload", 1),
    ("probe", 2),
    ("replay", 2),
    ("synth", 2),
    ("record", 3),
    ("report", 3),
];

/// The binary's own files, above every layer.
const BINARY: &[&str] = &["main", "cli"];

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|&(_, l)| l)
}

/// The modules named after `crate::` in code (comments skipped), with
/// `crate::{a::x, b}` read as `a` and `b`.
fn imported(text: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                out.extend(group[..end].split(',').map(ident));
            } else {
                out.push(ident(rest));
            }
        }
    }
    out.retain(|m| !m.is_empty() && m != "self");
    out
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).expect("src is readable").flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn imports_point_down_the_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut wrong = Vec::new();
    for path in files {
        let rel = path.strip_prefix(&src).expect("under src");
        let rel_s = rel.to_string_lossy().replace('\\', "/");
        let top = rel_s.split('/').next().unwrap_or("");
        let module = top.strip_suffix(".rs").unwrap_or(top);
        // Test files may use any module (synthetic traces for a model's tests).
        let test_file = rel_s.ends_with("/tests.rs");
        if matches!(module, "lib" | "layers") || BINARY.contains(&module) || test_file {
            continue;
        }
        let Some(own) = layer(module) else {
            wrong.push(format!("{rel_s}: module `{module}` has no layer in LAYERS"));
            continue;
        };
        let text = std::fs::read_to_string(&path).expect("a source file is readable");
        for m in imported(&text) {
            if m == module {
                continue;
            }
            match layer(&m) {
                Some(l) if l < own => {}
                Some(l) => wrong.push(format!(
                    "{rel_s}: `{module}` (layer {own}) imports `{m}` (layer {l})"
                )),
                None => wrong.push(format!("{rel_s}: imports `crate::{m}`, not in LAYERS")),
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn imports_are_read_from_paths_and_groups() {
    let text = "use crate::trace::Record;\n// crate::report in a comment\nuse crate::{lab::x, stats};\nlet v = crate::probe::page_size();";
    assert_eq!(imported(text), ["trace", "lab", "stats", "probe"]);
}
