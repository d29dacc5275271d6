//! Developer tasks: `cargo xtask setup | demo | fidelity | test | bench [--jobs | --scale] | dist | guest-test | readme`.

use anyhow::Result;
use clap::{Parser, Subcommand};
use std::process::{Command, ExitCode};

mod cmd;
mod demo;
mod dist;
mod guest;
mod pyenv;
mod readme;
mod scale;
mod setup;
mod test;

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
    /// Set up, build, and run `swaptrace lab fidelity` (root): workload
    /// shapes recorded under cluster and VMA readahead, each trace replayed
    /// through both policies, own-policy errors and cross-predictions.
    Fidelity {
        /// Passed to `swaptrace lab fidelity` (--runs, --shapes, --json…).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Set up, then formatting, clippy, the offline build and every test.
    Test {
        /// Passed to `cargo test`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Set up, then run the benchmarks (they print figures). With --jobs,
    /// only the recording-overhead jobs (dd, page faults, swap, demo) against
    /// nothing and bpftrace, with bpf_stats per program (needs root).
    Bench {
        /// Only the `record_jobs` bench (env RUNS, JOBS, SWAPTRACE_BIN).
        #[arg(long)]
        jobs: bool,
        /// Instead: synthesize a trace of --events events into target/ and
        /// time synth, info, export and replay of it (peak RSS, fault
        /// events/s per policy per core); no eBPF toolchain needed.
        #[arg(long)]
        scale: bool,
        /// With --scale: events in the synthetic trace.
        #[arg(long, default_value_t = 200_000_000)]
        events: u64,
        /// With --scale: distinct swapped pages (2 Mi: 8 GiB swapped out,
        /// a quarter of it the replay's memory).
        #[arg(long, default_value_t = 1 << 21)]
        pages: u64,
        /// With --scale: also `cargo bench --bench replay` on as many faults.
        #[arg(long)]
        with_bench: bool,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Build the static (musl) swaptrace with its eBPF object into
    /// target/dist/, with its SHA-256.
    Dist,
    /// Boot Debian 6.1/6.12 kernels under qemu and run the swaptrace scenarios in them.
    GuestTest(guest::Opts),
    /// Rewrite README's synopsis block from the clap definitions.
    Readme,
}

fn main() -> Result<ExitCode> {
    let cli = Cli::parse();
    if let Task::Bench {
        scale: true,
        events,
        pages,
        with_bench,
        ..
    } = cli.cmd
    {
        return scale::scale(events, pages, with_bench).map(|()| ExitCode::SUCCESS);
    }
    // Every other task but `readme` needs the eBPF toolchain.
    if !matches!(cli.cmd, Task::Readme) {
        setup::setup()?;
    }
    match cli.cmd {
        Task::Setup => Ok(ExitCode::SUCCESS),
        Task::Demo { args } => demo::demo(&args).map(|()| ExitCode::SUCCESS),
        Task::Fidelity { args } => demo::fidelity(&args).map(|()| ExitCode::SUCCESS),
        Task::Test { args } => test::test(&args),
        Task::Bench { jobs, args, .. } => cmd::run(
            Command::new("cargo")
                .args(["bench", "-p", "swaptrace"])
                .args(if jobs {
                    &["--bench", "record_jobs"][..]
                } else {
                    &[]
                })
                .args(args),
        )
        .map(|()| ExitCode::SUCCESS),
        Task::Dist => dist::dist().map(|_| ExitCode::SUCCESS),
        Task::GuestTest(opts) => Ok(guest::report(guest::guest_test(&opts))),
        Task::Readme => readme::readme().map(|()| ExitCode::SUCCESS),
    }
}
