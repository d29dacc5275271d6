//! `cargo xtask test`: formatting, clippy (host and eBPF), the offline build,
//! every test, the static artifact of `dist` run here (as root), a short run
//! of each fuzz target, then the exact-probe backends in Debian guests
//! under qemu.

use crate::cmd::{free_bytes, is_root, root, run};
use crate::{dist, guest};
use anyhow::Result;
use std::process::{Command, ExitCode};

/// What a full run writes under target/ at its peak (builds, guest images
/// and kernels), with a margin: about 9 GiB was measured.
const DISK_NEEDED: u64 = 12 << 30;

/// `args` go to `cargo test`.
pub fn test(args: &[String]) -> Result<ExitCode> {
    // A full disk shows up as a linker's bus error: say it first.
    match free_bytes(&root()) {
        Some(free) if free < DISK_NEEDED => eprintln!(
            "xtask: warning: {:.1} GiB free where this run writes about {} GiB: \
             a build may fail with \"No space left on device\"",
            free as f64 / (1u64 << 30) as f64,
            DISK_NEEDED >> 30
        ),
        Some(free) => eprintln!("xtask: {:.1} GiB free", free as f64 / (1u64 << 30) as f64),
        None => {}
    }
    run(Command::new("cargo").args(["fmt", "--all", "--", "--check"]))?;
    run(Command::new("cargo").args(["clippy", "--all-targets", "--", "-D", "warnings"]))?;
    run(Command::new("cargo")
        .args(["+nightly", "clippy", "-p", "swaptrace-ebpf"])
        .args(["--target", "bpfel-unknown-none", "-Z", "build-std=core"])
        .args(["--", "-D", "warnings"])
        .env("CARGO_TARGET_DIR", root().join("target/ebpf-clippy")))?;
    // The offline build: no eBPF toolchain needed.
    run(Command::new("cargo").args(["build", "-p", "swaptrace", "--no-default-features"]))?;
    // The live tests are #[ignore]d so that a run without root reports
    // them as not run; as root they run here (one test binary at a time,
    // serialised inside each by the live-test lock).
    let mut test_args = args.to_vec();
    if is_root() {
        if !test_args.iter().any(|a| a == "--") {
            test_args.push("--".into());
        }
        test_args.push("--include-ignored".into());
    } else {
        eprintln!("xtask: not root: the live tests (#[ignore]d) do not run");
    }
    run(Command::new("cargo")
        .args(["test", "--release"])
        .args(&test_args))?;
    // The artifact a fleet deploys: its doctor and a short record here. The
    // guest stage below boots this very build (no second build).
    let built = if is_root() {
        let d = dist::dist()?;
        dist::check(&d)?;
        true
    } else {
        eprintln!("xtask: not root: the dist artifact is not run");
        false
    };
    // The replay's fidelity, short: one run per shape and policy; the
    // kernel's own policy within 5% on I/O and major faults (it replays
    // within 1.2% on every shape; a model that loses track, as of memory
    // unmapped and mapped again, is off by 6% and more). The targets and
    // the full table: `cargo xtask fidelity`.
    if built {
        run(Command::new(root().join("target/dist/swaptrace")).args([
            "lab",
            "fidelity",
            "--runs",
            "1",
            "--max-own-pct",
            "5",
        ]))?;
    } else {
        eprintln!("xtask: not root: the fidelity runs do not run");
    }
    // A short run of each fuzz target (fuzz/): no panic, hang or
    // allocation over the RSS limit on hostile traces and JSON Lines.
    fuzz_short()?;
    // The exact-probe backends, in Debian 6.1, 6.12, 6.18 and 7.3 guests under qemu.
    let opts = guest::Opts {
        no_build: built,
        ..guest::Opts::default()
    };
    Ok(guest::report(guest::guest_test(&opts)))
}

/// The cargo-fuzz targets of fuzz/Cargo.toml, with their seed directory
/// under fuzz/seeds.
pub const FUZZ_TARGETS: &[(&str, &str)] = &[
    ("trace_reader", "trace"),
    ("jsonl_import", "jsonl"),
    ("replay_input", "trace"),
];

/// 20 s of each fuzz target (nightly), from its corpus (fuzz/corpus, kept
/// between runs) and the committed seeds.
fn fuzz_short() -> Result<()> {
    for (t, seeds) in FUZZ_TARGETS {
        let corpus = root().join("fuzz/corpus").join(t);
        std::fs::create_dir_all(&corpus)?;
        run(Command::new("cargo")
            .args(["+nightly", "fuzz", "run", "-O", t])
            .arg("--target-dir")
            .arg(root().join("target/fuzz"))
            .arg(&corpus)
            .arg(root().join("fuzz/seeds").join(seeds))
            .args([
                "--",
                "-max_total_time=20",
                "-rss_limit_mb=512",
                "-timeout=10",
            ])
            .current_dir(root()))?;
    }
    Ok(())
}
