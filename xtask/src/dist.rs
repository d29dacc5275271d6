//! `cargo xtask dist`: the one artifact a fleet copies to its hosts, a
//! static (musl) `swaptrace` with its eBPF object inside, built as the
//! guest suite builds it, and its SHA-256 in `sha256sum -c` form.

use crate::cmd::{capture, root};
use crate::guest;
use anyhow::{ensure, Context, Result};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What `dist` wrote.
pub struct Dist {
    pub path: PathBuf,
    pub size: u64,
    pub sha256: String,
}

/// Builds (or reuses) the static binary, copies it into target/dist/ with
/// `swaptrace.sha256`, and prints path, size and checksum.
pub fn dist() -> Result<Dist> {
    guest::install_static_build()?;
    let built = guest::build_swaptrace()?;
    let bytes = fs::read(&built).with_context(|| format!("reading {}", built.display()))?;
    ensure!(
        has_bpf_object(&bytes),
        "{} holds no eBPF object (an ELF of machine EM_BPF)",
        built.display()
    );
    let dir = root().join("target/dist");
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join("swaptrace");
    // Through a temporary file and a rename: a running copy is not disturbed.
    let tmp = dir.join(".swaptrace.tmp");
    fs::copy(&built, &tmp).with_context(|| format!("copying to {}", tmp.display()))?;
    fs::rename(&tmp, &path).with_context(|| format!("renaming to {}", path.display()))?;
    let line = capture(Command::new("sha256sum").arg("swaptrace").current_dir(&dir))?;
    let sha256 = line.split_whitespace().next().unwrap_or("").to_string();
    ensure!(sha256.len() == 64, "sha256sum said {line:?}");
    fs::write(dir.join("swaptrace.sha256"), &line)?;
    let d = Dist {
        size: bytes.len() as u64,
        path,
        sha256,
    };
    println!("{}", d.path.display());
    println!(
        "  size   {} bytes ({:.1} MiB)",
        d.size,
        d.size as f64 / 1048576.0
    );
    println!("  sha256 {}", d.sha256);
    println!(
        "  check  cd {} && sha256sum -c swaptrace.sha256",
        dir.display()
    );
    Ok(d)
}

/// Does `bin` embed an ELF object for the BPF machine (EM_BPF, 247)?
fn has_bpf_object(bin: &[u8]) -> bool {
    const EM_BPF: u16 = 247;
    bin.windows(4)
        .enumerate()
        .filter(|(_, w)| *w == b"\x7fELF")
        .any(|(i, _)| {
            // e_machine sits at byte 18; EI_DATA (byte 5) gives its order.
            let Some(m) = bin.get(i + 18..i + 20) else {
                return false;
            };
            let m = [m[0], m[1]];
            match bin.get(i + 5) {
                Some(1) => u16::from_le_bytes(m) == EM_BPF,
                Some(2) => u16::from_be_bytes(m) == EM_BPF,
                _ => false,
            }
        })
}

/// The check of `cargo xtask test` (as root): the artifact's `doctor` and a
/// 2 s system-wide `record` exit 0, and the trace has its footer.
pub fn check(d: &Dist) -> Result<()> {
    let out = capture(Command::new(&d.path).arg("doctor"))?;
    eprintln!("xtask: dist doctor: {} lines, exit 0", out.lines().count());
    let dir = std::env::temp_dir().join(format!("swaptrace-dist-{}", std::process::id()));
    fs::create_dir_all(&dir)?;
    let trace = dir.join("dist.swt");
    let result = record_and_read(&d.path, &trace);
    let _ = fs::remove_dir_all(&dir);
    result
}

fn record_and_read(bin: &Path, trace: &Path) -> Result<()> {
    capture(
        Command::new(bin)
            .args(["record", "--quiet", "--duration", "2", "-o"])
            .arg(trace),
    )?;
    let t = swaptrace::trace::read_trace(trace).map_err(|e| anyhow::anyhow!("{e}"))?;
    ensure!(
        t.footer.is_some(),
        "{}: no footer (not finalized); problems: {:?}",
        trace.display(),
        t.problems.iter().map(|p| p.to_string()).collect::<Vec<_>>()
    );
    eprintln!(
        "xtask: dist record --duration 2: exit 0, {} records, footer present",
        t.records.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::has_bpf_object;

    fn elf(data: u8, machine: [u8; 2]) -> Vec<u8> {
        let mut e = vec![0u8; 64];
        e[..4].copy_from_slice(b"\x7fELF");
        e[4] = 2;
        e[5] = data;
        e[18..20].copy_from_slice(&machine);
        e
    }

    #[test]
    fn finds_an_embedded_bpf_elf_only() {
        let host = elf(1, 62u16.to_le_bytes()); // EM_X86_64
        let bpf = elf(1, 247u16.to_le_bytes());
        assert!(!has_bpf_object(&host));
        assert!(has_bpf_object(
            &[host.clone(), b"junk".to_vec(), bpf].concat()
        ));
        assert!(has_bpf_object(&elf(2, 247u16.to_be_bytes())));
        // A magic at the very end, with no room for e_machine.
        assert!(!has_bpf_object(
            &[host, b"\x7fELF\x02\x01".to_vec()].concat()
        ));
    }
}
