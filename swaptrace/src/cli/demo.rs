//! `swaptrace demo`: record the built-in workload under memory pressure.

use anyhow::Result;
use std::path::PathBuf;
use swaptrace::workload::Pattern;

#[derive(clap::Args)]
pub struct Args {
    /// The trace to write.
    #[arg(short, long, default_value = "swaptrace-demo.swt")]
    output: PathBuf,
    /// Replace an existing trace.
    #[arg(long)]
    force: bool,
    /// Anonymous memory the workload touches.
    #[arg(long, default_value = "384M", value_parser = super::parse_size_arg)]
    size: u64,
    /// Memory cgroup limit.
    #[arg(long, default_value = "128M", value_parser = super::parse_size_arg)]
    limit: u64,
    /// Size of the temporary swap file.
    #[arg(long, default_value = "1G", value_parser = super::parse_size_arg)]
    swap_size: u64,
    /// Where the temporary swap file is made.
    #[arg(long, default_value = "/var/tmp")]
    swap_dir: PathBuf,
    /// Swap on a non-rotational loop device, so the kernel uses VMA readahead.
    #[arg(long)]
    loop_device: bool,
    /// seq, random, shuffled-blocks:K or strided:K.
    #[arg(long, default_value = "shuffled-blocks:16")]
    pattern: Pattern,
    /// Write every Nth page with zeros (swapped out without I/O); 0 = none.
    #[arg(long, default_value_t = 0)]
    zero_every: u32,
    #[command(flatten)]
    shape: super::workload::Shape,
    /// Print JSON instead of the tables.
    #[arg(long)]
    json: bool,
}

#[cfg(not(feature = "live"))]
pub fn run(_: Args) -> Result<()> {
    super::no_live()
}

#[cfg(feature = "live")]
pub fn run(a: Args) -> Result<()> {
    use anyhow::{bail, Context};
    use swaptrace::workload::WorkloadSpec;
    super::output_policy(&a.output, a.force, &[])?;
    if !a.json {
        println!(
            "demo: {} MiB of {} in a {} MiB memory cgroup, {} MiB temporary swap in {}{}",
            a.size >> 20,
            a.pattern,
            a.limit >> 20,
            a.swap_size >> 20,
            a.swap_dir.display(),
            if a.loop_device {
                " (non-rotational loop device)"
            } else {
                ""
            }
        );
    }
    let exe = std::env::current_exe().context("locating the swaptrace binary")?;
    let r = swaptrace::record::run_demo(
        &exe,
        &swaptrace::record::DemoOptions {
            command: None,
            workload: a.shape.apply(WorkloadSpec {
                size_bytes: a.size,
                pattern: a.pattern,
                seed: 1,
                zero_every: a.zero_every,
                ..WorkloadSpec::default()
            }),
            limit_bytes: a.limit,
            swap_bytes: a.swap_size,
            swap_dir: a.swap_dir,
            output: a.output.clone(),
            loop_device: a.loop_device,
            progress: !a.json,
        },
    )?;
    if r.exit_code != Some(0) {
        bail!("the workload failed: {}", r.command_outcome());
    }
    super::record::print_recorded(&r, a.json)?;
    if !a.json {
        println!("\nswaptrace info {}:", a.output.display());
        super::info::print(&a.output, false)?;
    }
    Ok(())
}
