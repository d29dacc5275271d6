//! `swaptrace synth`: a synthetic trace, no root needed.

use anyhow::{bail, Result};
use std::path::PathBuf;
use swaptrace::synth::{self, SynthPattern, SynthSpec};

#[derive(clap::Args)]
pub struct Args {
    /// The trace to write.
    #[arg(short, long)]
    output: PathBuf,
    /// Replace an existing trace.
    #[arg(long)]
    force: bool,
    /// seq, random, strided:K, shuffled-blocks:K or multi:P (P processes).
    #[arg(long, default_value = "shuffled-blocks:16")]
    pattern: SynthPattern,
    /// Distinct pages (swap entries), at most 2^24.
    #[arg(long, default_value_t = 65536,
          value_parser = clap::value_parser!(u64).range(1..=synth::MAX_PAGES))]
    pages: u64,
    /// Faults (default: one pass over the pages), at most 2^30.
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=synth::MAX_FAULTS))]
    faults: Option<u64>,
    /// Seed of the pseudo-random order.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Memory the replay assumes, in pages (default: a quarter of the
    /// pages), at most 2^40.
    #[arg(long,
          value_parser = clap::value_parser!(u64).range(1..=synth::MAX_MEMORY_PAGES))]
    memory_pages: Option<u64>,
    /// Instead: free batches of 64 of PAGES entries over this many swap
    /// devices (`replay --family free`).
    #[arg(long)]
    free_devices: Option<u8>,
    /// With --free-devices: consecutive entries on one device.
    #[arg(long, default_value_t = 8)]
    interleave: usize,
}

pub fn run(a: Args) -> Result<()> {
    let spec = SynthSpec {
        pattern: a.pattern,
        pages: a.pages,
        faults: a.faults.unwrap_or(a.pages),
        seed: a.seed,
        memory_pages: a.memory_pages.unwrap_or((a.pages / 4).max(1)),
    };
    spec.check()?;
    let policy = super::output_policy(&a.output, a.force, &[])?;
    let n = match a.free_devices {
        Some(0) => bail!("--free-devices must be at least 1"),
        Some(devices) => {
            let records = swaptrace::replay::free::synth_free(
                devices,
                a.pages as usize,
                swaptrace::replay::free::SWAP_BATCH,
                a.interleave,
                a.seed,
            );
            let mut h = synth::header(&spec);
            h.target = format!(
                "synthetic: {} freed entries over {devices} devices, runs of {}",
                a.pages, a.interleave
            );
            synth::write_records(&h, records, &a.output, &policy)?
        }
        None => synth::write(&spec, &a.output, &policy)?,
    };
    println!("wrote {n} records to {}", a.output.display());
    Ok(())
}
