//! `cargo xtask demo`: records the built-in swap workload here, or, where
//! that needs root it does not have, reports, replays and plots the sample.
//! `cargo xtask fidelity`: the replay's fidelity on workload shapes.

use crate::cmd::{is_root, root, run};
use anyhow::Result;
use std::process::Command;

pub fn demo(args: &[String]) -> Result<()> {
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

/// Builds and runs `swaptrace lab fidelity ARGS` (root).
pub fn fidelity(args: &[String]) -> Result<()> {
    if !is_root() {
        anyhow::bail!("fidelity records live runs: it needs root");
    }
    run(Command::new("cargo").args(["build", "--release", "-p", "swaptrace"]))?;
    run(Command::new(root().join("target/release/swaptrace"))
        .args(["lab", "fidelity"])
        .args(args))
}
