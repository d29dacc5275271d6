//! `swaptrace record`: attach the probes and write a trace.

use anyhow::Result;
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// The trace to write (.swt).
    #[arg(short, long)]
    output: PathBuf,
    /// Replace an existing trace.
    #[arg(long)]
    force: bool,
    /// Stop after this long, e.g. 30s, 2m, 500ms [default: until the
    /// command exits, or Ctrl-C].
    #[arg(short, long, value_parser = super::parse_duration)]
    duration: Option<Duration>,
    /// Only tasks of this memory cgroup (v1 directory) and below; CMD starts in it.
    #[arg(long)]
    cgroup: Option<PathBuf>,
    /// Only this process; it must exist when `record` starts.
    #[arg(long)]
    pid: Option<u32>,
    /// Ring buffer size (power of two from 4K to 2G) [default: 16M].
    #[arg(long, value_parser = super::parse_size_arg)]
    ring_size: Option<u64>,
    /// Use kprobes where fentry would do (to compare the backends).
    #[arg(long)]
    no_fentry: bool,
    /// Tracepoints only, neither fentry nor kprobes, as on a locked-down
    /// host (to compare the backends on one that allows them).
    #[arg(long, conflicts_with = "no_fentry")]
    tracepoints: bool,
    /// Attach each swap-path program twice, so that a run the kernel skips
    /// (another task preempted inside it on that CPU) is recorded by its
    /// twin: auto where the kernel may preempt programs (`doctor` says), never
    /// (cheaper, loses events when tasks swap at once), or always.
    #[arg(long, value_enum, default_value = "auto")]
    twins: Twins,
    /// Print JSON instead of the tables.
    #[arg(long)]
    json: bool,
    /// Nothing on stderr while recording (no "recording …" line, no live line).
    #[arg(short, long)]
    quiet: bool,
    /// Show the eBPF side's anomalies on stderr (a failed kernel read, an
    /// unexpected layout, a dropped event). Off, they cost nothing.
    #[arg(short, long)]
    verbose: bool,
    /// Command to run and trace.
    #[arg(last = true)]
    command: Vec<String>,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Twins {
    Auto,
    Always,
    Never,
}

/// Refuses a pid with no /proc entry before anything is attached (and
/// before any root or BPF check), as perf and bpftrace do.
pub(super) fn check_pid(pid: Option<u32>) -> Result<()> {
    match pid {
        Some(p) if !std::path::Path::new(&format!("/proc/{p}")).exists() => {
            anyhow::bail!("--pid {p}: no such process (/proc/{p} does not exist)")
        }
        _ => Ok(()),
    }
}

pub fn run(a: Args) -> Result<()> {
    check_pid(a.pid)?;
    super::output_policy(&a.output, a.force, &[])?;
    run_checked(a)
}

#[cfg(not(feature = "live"))]
fn run_checked(_: Args) -> Result<()> {
    super::no_live()
}

#[cfg(feature = "live")]
fn run_checked(a: Args) -> Result<()> {
    if a.duration.is_none() && a.command.is_empty() && !a.quiet {
        eprintln!("recording until Ctrl-C (give --duration or -- CMD to stop by itself)");
    }
    let ring_bytes = a
        .ring_size
        .map(|b| {
            if b.is_power_of_two() && b >= 4096 && b <= u32::MAX as u64 {
                Ok(b as u32)
            } else {
                Err(anyhow::anyhow!(
                    "--ring-size {b}: must be a power of two between 4K and 2G"
                ))
            }
        })
        .transpose()?;
    let r = swaptrace::record::record(&swaptrace::record::RecordOptions {
        output: a.output,
        duration: a.duration,
        command: a.command,
        cgroup: a.cgroup,
        pid: a.pid,
        ring_bytes,
        no_fentry: a.no_fentry,
        tracepoints_only: a.tracepoints,
        twins: match a.twins {
            Twins::Auto => None,
            Twins::Always => Some(swaptrace::probe::Twins::All),
            Twins::Never => Some(swaptrace::probe::Twins::None),
        },
        progress: !a.json,
        quiet: a.quiet,
        verbose: a.verbose,
        stdout_to_stderr: a.json,
        ..Default::default()
    })?;
    print_recorded(&r, a.json)
}

/// What a recording captured, against /proc/vmstat over the same span.
#[cfg(feature = "live")]
pub fn print_recorded(r: &swaptrace::record::Recorded, json: bool) -> Result<()> {
    use swaptrace::report;
    let seen = report::Seen::from_attach(r.attached.iter().map(String::as_str));
    let check = report::vmstat_check(&r.summary, &r.vmstat_delta, seen);
    if json {
        return super::print_json(&serde_json::json!({ "recorded": r, "vmstat_check": check }));
    }
    println!(
        "{}",
        report::recorded_line(
            r.records,
            r.elapsed_s,
            &r.path.display().to_string(),
            r.bytes
        )
    );
    print!("{}", report::recorded_text(&r.summary));
    if let Some(code) = r.exit_code {
        println!("command exited with {code}");
    }
    println!("\nagainst /proc/vmstat over the same span (system-wide):");
    print!("{}", report::check_text(&check));
    for (p, why) in &r.skipped {
        println!("not attached: {p}: {why}");
    }
    let delta = |c: &str| r.vmstat_delta.get(c).copied();
    if let Some(n) = swaptrace::trace::ReadCoverage::of(&r.summary, delta).and_then(|c| c.note()) {
        println!("warning: {n}");
    }
    Ok(())
}
