//! Developer tasks: `cargo xtask setup | demo | test | bench | guest-test`.
//!
//! `setup` installs what building the eBPF programs needs and skips what is
//! there: the nightly toolchain with rust-src, LLVM 22 development files and
//! bpf-linker. Every other task runs it first.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod guest;

#[derive(Parser)]
#[command(name = "xtask")]
struct Cli {
    #[command(subcommand)]
    cmd: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Install the eBPF toolchain (idempotent).
    Setup,
    /// Set up, build, and record the built-in swap workload on this host.
    Demo {
        /// Passed to `swaptrace demo`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Set up, then formatting, clippy, the offline build and every test.
    Test {
        /// Passed to `cargo test`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Set up, then run the benchmarks (they print figures).
    Bench {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Boot Debian 6.1/6.12 kernels under qemu and run the swaptrace scenarios in them.
    GuestTest(guest::Opts),
}

const APT_PACKAGES: &[&str] = &[
    "llvm-22-dev",
    "libpolly-22-dev",
    "libzstd-dev",
    "zlib1g-dev",
];
const BPF_LINKER_VERSION: &str = "0.13.0";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("xtask: running {cmd:?}");
    let status = cmd
        .current_dir(root())
        .status()
        .with_context(|| format!("starting {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed: {status}");
    }
    Ok(())
}

fn output(cmd: &mut Command) -> Option<String> {
    let out = cmd.stderr(Stdio::null()).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn is_root() -> bool {
    output(Command::new("id").arg("-u")).is_some_and(|s| s.trim() == "0")
}

fn cargo_bin(name: &str) -> PathBuf {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .unwrap_or_else(|| PathBuf::from("/root/.cargo"));
    home.join("bin").join(name)
}

fn setup() -> Result<()> {
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
        .filter(|p| {
            output(Command::new("dpkg-query").args(["-W", "-f=${Status}", p]))
                .is_none_or(|s| !s.contains("install ok installed"))
        })
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
    Ok(())
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    setup()?;
    match cli.cmd {
        Task::Setup => Ok(()),
        Task::Demo { args } => {
            run(Command::new("cargo").args(["build", "--release", "-p", "swaptrace"]))?;
            let bin = root().join("target/release/swaptrace");
            let live = if is_root() {
                run(Command::new(&bin).arg("demo").args(args))
            } else {
                Err(anyhow::anyhow!(
                    "not root: attaching eBPF probes and creating swap need root"
                ))
            };
            if let Err(e) = live {
                // Where recording is impossible, show what a recording gives.
                let sample = root().join("examples/sample.swt");
                let plots = root().join("target/sample-plots");
                eprintln!("xtask: cannot record here ({e:#});");
                eprintln!(
                    "xtask: reporting, replaying and plotting {} instead",
                    sample.display()
                );
                run(Command::new(&bin).arg("info").arg(&sample))?;
                run(Command::new(&bin).arg("replay").arg(&sample))?;
                run(Command::new(&bin)
                    .arg("plot")
                    .arg(&sample)
                    .arg("-o")
                    .arg(&plots))?;
            }
            Ok(())
        }
        Task::Test { args } => {
            run(Command::new("cargo").args(["fmt", "--all", "--", "--check"]))?;
            run(Command::new("cargo").args(["clippy", "--all-targets", "--", "-D", "warnings"]))?;
            run(Command::new("cargo")
                .args(["+nightly", "clippy", "-p", "swaptrace-ebpf"])
                .args(["--target", "bpfel-unknown-none", "-Z", "build-std=core"])
                .args(["--", "-D", "warnings"])
                .env("CARGO_TARGET_DIR", root().join("target/ebpf-clippy")))?;
            // The offline build: no eBPF toolchain needed.
            run(Command::new("cargo").args(["build", "-p", "swaptrace", "--no-default-features"]))?;
            run(Command::new("cargo").args(["test", "--release"]).args(args))?;
            // The exact-probe backends, in Debian 6.1 and 6.12 guests under qemu.
            let guests = guest::guest_test(&guest::Opts {
                kernel: guest::KernelSel::All,
                keep: false,
                mem: "1G".into(),
                size: "400M".into(),
                no_build: false,
                memcg: "256M".into(),
            });
            let (checks, failed) = (
                guest::CHECKS.load(std::sync::atomic::Ordering::Relaxed),
                guest::FAILED.load(std::sync::atomic::Ordering::Relaxed),
            );
            println!("guest-test: {} passed, {failed} failed", checks - failed);
            guests
        }
        Task::Bench { args } => run(Command::new("cargo")
            .args(["bench", "-p", "swaptrace"])
            .args(args)),
        Task::GuestTest(opts) => guest::guest_test(&opts),
    }
}
