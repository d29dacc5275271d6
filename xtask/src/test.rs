//! `cargo xtask test`: formatting, clippy (host and eBPF), the offline build,
//! every test, then the exact-probe backends in Debian guests under qemu.

use crate::cmd::{root, run};
use crate::guest;
use anyhow::Result;
use std::process::{Command, ExitCode};

/// `args` go to `cargo test`.
pub fn test(args: &[String]) -> Result<ExitCode> {
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
    Ok(guest::report(guest::guest_test(&guest::Opts::default())))
}
