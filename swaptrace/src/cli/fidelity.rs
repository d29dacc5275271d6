//! `swaptrace lab fidelity`: records workload shapes under cluster and VMA
//! readahead (`vma_ra_enabled` toggled and restored, swap on a
//! non-rotational loop device), replays each trace through both policies
//! and prints the own-policy errors and cross-predictions. After `--`, a
//! command of the user's own is the one shape.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use swaptrace::report::fidelity::{self, Run, ShapeSummary};
#[cfg(feature = "live")]
use swaptrace::workload::{Pattern, ReadOrder, WorkloadSpec};

#[derive(clap::Args)]
pub struct Args {
    /// Live runs per shape and policy.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    runs: u32,
    /// The shapes to run (default: all): shuffled, procs, zero, random, vmas, fork, remap, moved, purge, huge.
    #[arg(long, value_delimiter = ',')]
    shapes: Vec<String>,
    /// Scale every shape's memory (and its cgroup limit) by this factor.
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Where the temporary swap files and traces go.
    #[arg(long, default_value = "/var/tmp")]
    dir: PathBuf,
    /// Keep the traces in this directory (replacing earlier ones of the
    /// same name).
    #[arg(long)]
    keep: Option<PathBuf>,
    /// Record nothing: re-score the traces an earlier run kept (--keep) in
    /// this directory, with this build's models (needs no root).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["keep", "command", "scale", "runs"])]
    from: Option<PathBuf>,
    /// Exit 1 when the replay of the kernel's own policy misses pswpin or
    /// pgmajfault by more than this, %, in a run.
    #[arg(long)]
    max_own_pct: Option<f64>,
    /// Exit 1 when a cross-prediction's mean misses the live mean of
    /// pswpin or pgmajfault by more than this, %.
    #[arg(long)]
    max_cross_pct: Option<f64>,
    /// Print JSON instead of the tables.
    #[arg(long)]
    json: bool,
    /// The memory cgroup limit for a command given after `--`, MiB.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u64).range(16..))]
    limit_mib: u64,
    /// Record this command (after `--`) instead of the built-in shapes:
    /// it runs in the memory cgroup of --limit-mib, its output goes to
    /// stderr; a run where it fails (an OOM kill) is left out.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

#[cfg(feature = "live")]
/// A workload shape and the memory cgroup it runs in.
struct Shape {
    name: String,
    about: String,
    spec: WorkloadSpec,
    /// Run instead of the built-in workload.
    command: Option<Vec<String>>,
    limit: u64,
}

#[cfg(feature = "live")]
const MIB: u64 = 1 << 20;

#[cfg(feature = "live")]
fn shapes(scale: f64) -> Vec<Shape> {
    let mb = |m: u64| ((m * MIB) as f64 * scale) as u64 & !0xfff;
    let blocks = Pattern::ShuffledBlocks { block_pages: 16 };
    let base = |size| WorkloadSpec {
        size_bytes: mb(size),
        pattern: blocks,
        seed: 3,
        ..WorkloadSpec::default()
    };
    let shape = |name: &str, about: &str, spec| Shape {
        name: name.into(),
        about: about.into(),
        spec,
        command: None,
        limit: mb(128),
    };
    vec![
        shape(
            "shuffled",
            "one process, 256 MiB in shuffled 16-page blocks, read back in address order, 128 MiB cgroup",
            base(256),
        ),
        shape(
            "procs",
            "two processes writing 128 MiB each together, then reading their own back, 128 MiB cgroup",
            WorkloadSpec {
            procs: 2,
            ..base(128)
        },
        ),
        shape(
            "zero",
            "256 MiB, every second page zero-filled, 128 MiB cgroup",
            WorkloadSpec {
            zero_every: 2,
            ..base(256)
        },
        ),
        shape(
            "random",
            "192 MiB written and read twice in random page order, 128 MiB cgroup",
            WorkloadSpec {
            pattern: Pattern::Random,
            read_order: ReadOrder::Random,
            passes: 2,
            ..base(192)
        },
        ),
        shape(
            "vmas",
            "256 MiB over 4 mappings (VMAs), read back in address order, so the 4 interleave, 128 MiB cgroup",
            WorkloadSpec {
            regions: 4,
            ..base(256)
        },
        ),
        shape(
            "fork",
            "192 MiB written, then read by a forked child (shared pages), 128 MiB cgroup",
            WorkloadSpec {
            fork_read: true,
            ..base(192)
        },
        ),
        shape(
            "remap",
            "3 rounds of 192 MiB, each on a new mapping at the addresses the last one unmapped, 128 MiB cgroup",
            WorkloadSpec {
            rounds: 3,
            ..base(192)
        },
        ),
        shape(
            "moved",
            "192 MiB written, then moved 3 times by mremap() as realloc() grows a block, read back, 128 MiB cgroup",
            WorkloadSpec {
            moves: 3,
            ..base(192)
        },
        ),
        shape(
            "purge",
            "256 MiB written, then the first half of every 32 pages given back (madvise MADV_DONTNEED, an allocator's purge), swapped-out pages among them, read back, 128 MiB cgroup",
            WorkloadSpec {
            purge: 32,
            ..base(256)
        },
        ),
        shape(
            "huge",
            "256 MiB in transparent huge pages (MADV_HUGEPAGE), which reclaim writes to swap whole, read back in address order, 128 MiB cgroup",
            WorkloadSpec {
            huge: true,
            ..base(256)
        },
        ),
    ]
}

/// The shape of a command given after `--`: its program's name, and no
/// other shape may be asked for.
#[cfg(feature = "live")]
fn command_shape(a: &Args) -> Result<Option<Shape>> {
    let Some(program) = a.command.first() else {
        return Ok(None);
    };
    if !a.shapes.is_empty() {
        bail!("--shapes chooses among the built-in shapes; a command after -- is the only shape");
    }
    let name = std::path::Path::new(program)
        .file_name()
        .map_or_else(|| program.clone(), |n| n.to_string_lossy().into_owned());
    Ok(Some(Shape {
        about: format!("`{}`, {} MiB cgroup", a.command.join(" "), a.limit_mib),
        name,
        spec: WorkloadSpec::default(),
        command: Some(a.command.clone()),
        limit: a.limit_mib * MIB,
    }))
}

const POLICIES: [&str; 2] = ["cluster", "vma"];

/// The built-in shapes, in table order.
const SHAPES: [&str; 10] = [
    "shuffled", "procs", "zero", "random", "vmas", "fork", "remap", "moved", "purge", "huge",
];

pub fn run(a: Args) -> Result<()> {
    match &a.from {
        Some(dir) => rescore(dir, &a),
        None => record(a),
    }
}

#[cfg(not(feature = "live"))]
fn record(_: Args) -> Result<()> {
    super::no_live()
}

/// Re-scores kept traces, `SHAPE-POLICY-N.swt`, grouped by shape (the
/// policy the kernel ran is read from each trace's header).
fn rescore(dir: &Path, a: &Args) -> Result<()> {
    let mut by_shape: Vec<(String, Vec<PathBuf>)> = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| dir.display().to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "swt"))
        .collect();
    files.sort();
    for f in files {
        let stem = f
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        let shape = shape_of(&stem).to_string();
        if !a.shapes.is_empty() && !a.shapes.contains(&shape) {
            continue;
        }
        match by_shape.iter_mut().find(|(s, _)| *s == shape) {
            Some((_, v)) => v.push(f),
            None => by_shape.push((shape, vec![f])),
        }
    }
    if by_shape.is_empty() {
        bail!("no kept traces (SHAPE-POLICY-N.swt) in {}", dir.display());
    }
    // The built-in shapes first, in their order; others by name.
    by_shape.sort_by_key(|(s, _)| SHAPES.iter().position(|b| b == s).unwrap_or(SHAPES.len()));
    let mut summaries = Vec::new();
    for (shape, traces) in &by_shape {
        let runs = traces
            .iter()
            .map(|t| replay_run(t, None).with_context(|| t.display().to_string()))
            .collect::<Result<Vec<_>>>()?;
        let about = format!("{} kept traces in {}", runs.len(), dir.display());
        summaries.push(fidelity::summarise(shape, &about, &runs, &POLICIES));
    }
    print_and_check(&summaries, a)
}

/// The shape of a kept trace's name `SHAPE-POLICY-N` (the name itself
/// when it has no such suffix).
fn shape_of(stem: &str) -> &str {
    let mut parts = stem.rsplitn(3, '-');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(n), Some(p), Some(shape))
            if n.bytes().all(|b| b.is_ascii_digit()) && POLICIES.contains(&p) =>
        {
            shape
        }
        _ => stem,
    }
}

fn print_and_check(summaries: &[ShapeSummary], a: &Args) -> Result<()> {
    if a.json {
        super::print_json(&serde_json::json!({ "shapes": summaries }))?;
    } else {
        print!("{}", fidelity::fidelity_text(summaries));
    }
    check_bounds(summaries, a.max_own_pct, a.max_cross_pct)
}

#[cfg(feature = "live")]
fn record(a: Args) -> Result<()> {
    use swaptrace::lab::{self, Knob};
    use swaptrace::record::{run_demo, DemoOptions};
    let all = match command_shape(&a)? {
        Some(s) => vec![s],
        None => shapes(a.scale),
    };
    lab::require_root()?;
    for s in &a.shapes {
        if !all.iter().any(|sh| sh.name == *s) {
            bail!("unknown shape {s:?} (shapes: {})", SHAPES.join(", "));
        }
    }
    let chosen: Vec<&Shape> = all
        .iter()
        .filter(|s| a.shapes.is_empty() || a.shapes.contains(&s.name))
        .collect();
    if let Some(k) = &a.keep {
        std::fs::create_dir_all(k).with_context(|| k.display().to_string())?;
    }
    let exe = std::env::current_exe().context("locating the swaptrace binary")?;
    let total = chosen.len() as u64 * u64::from(a.runs) * POLICIES.len() as u64;
    let mut progress = super::progress::Progress::items("fidelity runs");
    let mut done = 0;
    let mut summaries = Vec::new();
    let mut failed = Vec::new();
    for shape in chosen {
        let mut runs = Vec::new();
        for i in 0..a.runs {
            for kp in POLICIES {
                progress.set(done, total);
                let name = format!("{}-{kp}-{i}.swt", shape.name);
                let out = a.keep.as_ref().unwrap_or(&a.dir).join(&name);
                let r = {
                    let _knob = Knob::set(
                        "/sys/kernel/mm/swap/vma_ra_enabled",
                        if kp == "vma" { "true" } else { "false" },
                    )?;
                    run_demo(
                        &exe,
                        &DemoOptions {
                            workload: shape.spec.clone(),
                            command: shape.command.clone(),
                            limit_bytes: shape.limit,
                            swap_bytes: 1 << 30,
                            swap_dir: a.dir.clone(),
                            output: out.clone(),
                            loop_device: true,
                            progress: false,
                        },
                    )?
                };
                done += 1;
                if let Some(sig) = r.stopped_by {
                    // Ctrl-C stops the experiment, not one run of it.
                    std::fs::remove_file(&out).with_context(|| out.display().to_string())?;
                    bail!(
                        "interrupted by {sig} in {name}, its trace removed: {} of {total} runs \
                         done; swap, the cgroup and vma_ra_enabled restored",
                        done - 1
                    );
                }
                if r.exit_code != Some(0) {
                    // An OOM kill under thrashing: the run is left out, the
                    // others stand. A kept trace is renamed so that --from
                    // passes over it.
                    let what = format!("{name}: the workload failed: {}", r.command_outcome());
                    let kept = a.keep.is_some().then(|| out.with_extension("swt.failed"));
                    match &kept {
                        Some(k) => std::fs::rename(&out, k),
                        None => std::fs::remove_file(&out),
                    }
                    .with_context(|| out.display().to_string())?;
                    eprintln!(
                        "swaptrace: {what}; run left out{}",
                        kept.map_or_else(String::new, |k| format!(
                            ", trace kept as {}",
                            k.display()
                        ))
                    );
                    failed.push(what);
                    continue;
                }
                runs.push(replay_run(&out, Some(kp)).with_context(|| name.clone())?);
                if a.keep.is_none() {
                    std::fs::remove_file(&out).with_context(|| out.display().to_string())?;
                }
            }
        }
        summaries.push(fidelity::summarise(
            &shape.name,
            &shape.about,
            &runs,
            &POLICIES,
        ));
    }
    progress.set(total, total);
    drop(progress);
    print_and_check(&summaries, &a)?;
    if !failed.is_empty() {
        bail!(
            "{} of {total} runs failed and were left out: {}",
            failed.len(),
            failed.join("; ")
        );
    }
    Ok(())
}

/// Replays `trace` through both policies, as `replay --policy
/// cluster,vma` does (the memory the recording tells); the kernel must
/// have run `kernel_policy` when one is given.
fn replay_run(trace: &Path, kernel_policy: Option<&str>) -> Result<Run> {
    use swaptrace::replay::{readahead, ReplayRequest};
    let t = swaptrace::trace::read_trace(trace)?;
    let k = swaptrace::report::kernel_counts(&t).context("the trace has no vmstat counts")?;
    let seen = swaptrace::replay::kernel_policy(&t.header);
    if let Some(kp) = kernel_policy.filter(|&kp| kp != seen) {
        bail!("the kernel ran {seen}, not {kp} (is swap non-rotational?)");
    }
    if !POLICIES.contains(&seen) {
        bail!(
            "the kernel ran {seen}, which is neither {}",
            POLICIES.join(" nor ")
        );
    }
    let r = readahead::run(
        &t,
        &ReplayRequest {
            policies: Some(&POLICIES.join(",")),
            params: &[],
            memory_pages: None,
            device: None,
        },
    )?;
    if let Some(n) = r.coverage.and_then(|c| c.note()) {
        eprintln!("warning: {}: {n}", trace.display());
    }
    Ok(Run::new(seen, k, &r.results, r.memory.pages))
}

/// The counters the bounds apply to: the I/O and the major faults (the
/// readahead counters are printed; they can be a few hundred pages).
const BOUNDED: [&str; 2] = ["pswpin", "pgmajfault"];

/// Fails when an error is beyond the bounds asked for.
fn check_bounds(s: &[ShapeSummary], own: Option<f64>, cross: Option<f64>) -> Result<()> {
    let mut bad = Vec::new();
    for sh in s {
        if let Some(max) = own {
            for o in sh
                .own
                .iter()
                .filter(|o| BOUNDED.contains(&o.counter) && o.worst_pct > max)
            {
                bad.push(format!(
                    "{}: {} on its own runs, {} off by {:.1}% (bound {max}%)",
                    sh.shape, o.policy, o.counter, o.worst_pct
                ));
            }
        }
        if let Some(max) = cross {
            for c in sh.cross.iter().filter(|c| BOUNDED.contains(&c.counter)) {
                if c.error_pct.is_none_or(|e| e.abs() > max) {
                    bad.push(format!(
                        "{}: {} predicted from {} runs, {} off by {} (bound {max}%)",
                        sh.shape,
                        c.policy,
                        c.from,
                        c.counter,
                        c.error_pct.map_or("-".into(), |e| format!("{e:.1}%"))
                    ));
                }
            }
        }
    }
    if bad.is_empty() {
        Ok(())
    } else {
        bail!("beyond the bounds asked for:\n  {}", bad.join("\n  "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    #[test]
    fn the_help_names_every_shape() {
        let cmd = Cli::command();
        let help = cmd
            .get_arguments()
            .find(|a| a.get_id() == "shapes")
            .and_then(|a| a.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default();
        for s in SHAPES {
            assert!(help.contains(s), "--shapes help lacks {s}: {help}");
        }
    }
}
