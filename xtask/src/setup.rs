//! `cargo xtask setup`: installs what building the eBPF programs needs and
//! skips what is there: the nightly toolchain with rust-src, LLVM 22
//! development files and bpf-linker; cargo-fuzz for the fuzz runs; and
//! Prometheus (prometheus, promtool) for the live test of `top --listen`;
//! DuckDB in target/pyenv for the Parquet test (pyenv.rs).
//! Every other task runs it first.

use crate::cmd::{installed, is_root, output, run};
use anyhow::{bail, Result};
use std::path::PathBuf;
use std::process::Command;

const APT_PACKAGES: &[&str] = &[
    "llvm-22-dev",
    "libpolly-22-dev",
    "libzstd-dev",
    "zlib1g-dev",
];
/// What the live Prometheus test runs (Debian package `prometheus`).
const PROMETHEUS_FILES: &[&str] = &["/usr/bin/prometheus", "/usr/bin/promtool"];
const BPF_LINKER_VERSION: &str = "0.13.0";
const CARGO_FUZZ_VERSION: &str = "0.13.2";

fn cargo_bin(name: &str) -> PathBuf {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .unwrap_or_else(|| PathBuf::from("/root/.cargo"));
    home.join("bin").join(name)
}

pub fn setup() -> Result<()> {
    // 1. nightly with rust-src, for -Z build-std=core on the bpf target.
    let toolchains = output(Command::new("rustup").args(["toolchain", "list"])).unwrap_or_default();
    if toolchains.lines().any(|l| l.starts_with("nightly")) {
        eprintln!("xtask: nightly toolchain: present");
    } else {
        eprintln!("xtask: installing the nightly toolchain");
        run(Command::new("rustup").args([
            "toolchain",
            "install",
            "nightly",
            "--profile",
            "minimal",
        ]))?;
    }
    let comps = output(Command::new("rustup").args([
        "component",
        "list",
        "--toolchain",
        "nightly",
        "--installed",
    ]))
    .unwrap_or_default();
    if comps.lines().any(|l| l.starts_with("rust-src")) {
        eprintln!("xtask: rust-src (nightly): present");
    } else {
        eprintln!("xtask: installing rust-src for nightly");
        run(Command::new("rustup").args([
            "component",
            "add",
            "rust-src",
            "--toolchain",
            "nightly",
        ]))?;
    }
    // 2. LLVM 22 for bpf-linker.
    let missing: Vec<&str> = APT_PACKAGES
        .iter()
        .copied()
        .filter(|p| !installed(p))
        .collect();
    if missing.is_empty() {
        eprintln!("xtask: {}: present", APT_PACKAGES.join(", "));
    } else {
        if !is_root() {
            bail!("missing packages {missing:?}: run `cargo xtask setup` as root, or apt-get install them");
        }
        eprintln!("xtask: installing {}", missing.join(", "));
        run(Command::new("apt-get").args(["update", "-q"]))?;
        run(Command::new("apt-get")
            .args(["install", "-y", "-q", "--no-install-recommends"])
            .args(&missing)
            .env("DEBIAN_FRONTEND", "noninteractive"))?;
    }
    // 3. bpf-linker, built against LLVM 22.
    let have = output(Command::new(cargo_bin("bpf-linker")).arg("--version"))
        .or_else(|| output(Command::new("bpf-linker").arg("--version")));
    match have {
        Some(v) => eprintln!("xtask: bpf-linker: present ({})", v.trim()),
        None => {
            eprintln!("xtask: installing bpf-linker {BPF_LINKER_VERSION} (about 3 minutes)");
            run(Command::new("cargo")
                .args([
                    "install",
                    "bpf-linker",
                    "--locked",
                    "--version",
                    BPF_LINKER_VERSION,
                    "--no-default-features",
                    "--features",
                    "llvm-22",
                ])
                .env("LLVM_PREFIX", "/usr/lib/llvm-22"))?;
        }
    }
    // 4. cargo-fuzz, for the short fuzz runs of `cargo xtask test`.
    let have = output(Command::new(cargo_bin("cargo-fuzz")).arg("--version"))
        .or_else(|| output(Command::new("cargo-fuzz").arg("--version")));
    match have {
        Some(v) => eprintln!("xtask: cargo-fuzz: present ({})", v.trim()),
        None => {
            eprintln!("xtask: installing cargo-fuzz {CARGO_FUZZ_VERSION} (about 2 minutes)");
            run(Command::new("cargo").args([
                "install",
                "cargo-fuzz",
                "--locked",
                "--version",
                CARGO_FUZZ_VERSION,
            ]))?;
        }
    }
    // 5. prometheus and promtool, for the live test of `top --listen`.
    if PROMETHEUS_FILES
        .iter()
        .all(|f| std::path::Path::new(f).exists())
    {
        eprintln!("xtask: prometheus, promtool: present");
    } else if is_root() {
        eprintln!("xtask: installing prometheus (prometheus, promtool)");
        let install = || {
            run(Command::new("apt-get")
                .args([
                    "install",
                    "-y",
                    "-q",
                    "--no-install-recommends",
                    "prometheus",
                ])
                .env("DEBIAN_FRONTEND", "noninteractive"))
        };
        // With the current package lists first; refreshed only if that fails.
        if install().is_err() {
            run(Command::new("apt-get").args(["update", "-q"]))?;
            install()?;
        }
    } else {
        eprintln!("xtask: prometheus missing (not root): the live Prometheus test will say so");
    }
    // 6. DuckDB, the query engine the Parquet export is tested with.
    crate::pyenv::pyenv()
}
