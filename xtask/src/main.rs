//! Developer tasks: `cargo xtask setup | demo | test | bench [--jobs] | guest-test`.

use anyhow::Result;
use clap::{Parser, Subcommand};
use std::process::{Command, ExitCode};

mod cmd;
mod demo;
mod guest;
mod pyenv;
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
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Boot Debian 6.1/6.12 kernels under qemu and run the swaptrace scenarios in them.
    GuestTest(guest::Opts),
}

fn main() -> Result<ExitCode> {
    let cli = Cli::parse();
    // Every task needs the eBPF toolchain.
    setup::setup()?;
    match cli.cmd {
        Task::Setup => Ok(ExitCode::SUCCESS),
        Task::Demo { args } => demo::demo(&args).map(|()| ExitCode::SUCCESS),
        Task::Test { args } => test::test(&args),
        Task::Bench { jobs, args } => cmd::run(
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
        Task::GuestTest(opts) => Ok(guest::report(guest::guest_test(&opts))),
    }
}
