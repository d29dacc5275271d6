//! The `swaptrace` command line: a thin layer over the library.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;
use swaptrace::probe::{self, KernelFacts};
use swaptrace::report;
use swaptrace::trace::read_trace;
use swaptrace::workload::{self, parse_size, Pattern, WorkloadSpec};

#[derive(Parser)]
#[command(
    name = "swaptrace",
    version,
    about = "Record the Linux swap path with eBPF; replay it offline"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Which probe captures each metric on this kernel, and why not when none.
    Doctor {
        #[arg(long)]
        json: bool,
    },
    /// Attach and record a trace until DURATION, the command's exit, or Ctrl-C.
    Record {
        #[arg(short, long)]
        output: PathBuf,
        /// e.g. 30s, 2m, 500ms.
        #[arg(short, long, value_parser = parse_duration)]
        duration: Option<Duration>,
        /// Only tasks of this memory cgroup (v1 directory) and below; CMD starts in it.
        #[arg(long)]
        cgroup: Option<PathBuf>,
        /// Only this process.
        #[arg(long)]
        pid: Option<u32>,
        /// Ring buffer size (power of two), e.g. 16M.
        #[arg(long, value_parser = parse_size_arg)]
        ring_size: Option<u64>,
        /// Use kprobes where fentry would do (to compare the backends).
        #[arg(long)]
        no_fentry: bool,
        #[arg(long)]
        json: bool,
        /// Command to run and trace.
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Attach as `record` does and print, every interval, what it just saw:
    /// faults, pages read, swap-outs, reclaim, khugepaged, zswap, lost
    /// events, the readahead window table and free latency where the kernel
    /// allows exact probes. Stops on Ctrl-C or after --count intervals.
    Top {
        #[arg(short, long, default_value = "1s", value_parser = parse_duration)]
        interval: Duration,
        #[arg(short, long)]
        count: Option<u64>,
        #[arg(long, conflicts_with = "cgroup")]
        pid: Option<u32>,
        /// Only tasks of this memory cgroup (v1 directory) and below.
        #[arg(long)]
        cgroup: Option<PathBuf>,
        /// Only these sections: faults, pages-read, ra-window, swap-out,
        /// free-latency, khugepaged, zswap, reclaim, vmstat.
        #[arg(long, value_delimiter = ',')]
        metric: Vec<String>,
        /// One JSON object per interval, one per line.
        #[arg(long)]
        json: bool,
    },
    /// A trace's header and its records, counted per kind.
    Info {
        trace: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// One metric of a trace: argdist-style counts or a log2 latency histogram.
    Hist {
        trace: PathBuf,
        #[arg(long, value_enum)]
        metric: report::HistMetric,
        /// Only events during swapoff, or only outside it.
        #[arg(long, value_enum, default_value = "all")]
        during: report::During,
        /// With ra-window and --policy: the replayed policies' windows too,
        /// side by side.
        #[command(flatten)]
        replay: ReplayArgs,
        #[arg(long)]
        json: bool,
    },
    /// Replay a trace through a family of policies and compare them with
    /// what the kernel did: readahead (swap-ins) or free (swap entry frees).
    Replay {
        trace: PathBuf,
        #[arg(long, value_enum, default_value = "readahead")]
        family: Family,
        #[command(flatten)]
        replay: ReplayArgs,
        #[arg(long)]
        json: bool,
    },
    /// Draw PNG charts: readahead windows (live and per policy), swap-ins
    /// over time, time × swap offset, and the policies compared.
    Plot {
        trace: PathBuf,
        #[arg(short, long)]
        output: PathBuf,
        /// readahead: windows, swap-ins, heatmap, policies; zswap: the
        /// pool and disk swap-ins over time per policy.
        #[arg(long, value_enum, default_value = "readahead")]
        family: Family,
        #[command(flatten)]
        replay: ReplayArgs,
    },
    /// Two traces side by side for a patch description: counters with the
    /// change in %, the readahead window table, latency percentiles.
    Compare {
        a: PathBuf,
        b: PathBuf,
        /// Names of the two columns, e.g. A=vanilla,B=patched.
        #[arg(long, default_value = "A=A,B=B")]
        label: String,
        /// Only these metrics (comma-separated): runtime, pswpin, pswpout,
        /// pgmajfault, swap_ra, swap_ra_hit, zswpin, zswpout, zswpwb,
        /// khugepaged-swapin, ra-window, fault-latency, free-latency, …
        #[arg(long, value_delimiter = ',')]
        metric: Vec<String>,
        /// Also draw the A/B charts into this directory.
        #[arg(long)]
        plot: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Write a trace as JSON Lines: the header, one object per record, the
    /// footer (schema: docs/jsonl.md).
    Export {
        trace: PathBuf,
        #[arg(long, default_value = "jsonl")]
        format: String,
        /// Output file (default: standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Turn a JSON Lines stream (docs/jsonl.md) into a trace; bad lines are
    /// reported with their line number and skipped.
    Import {
        input: PathBuf,
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Write a synthetic trace: pages swapped out in PATTERN order, then
    /// faulted back in address order (no root needed).
    Synth {
        #[arg(short, long)]
        output: PathBuf,
        /// seq, random, strided:K, shuffled-blocks:K or multi:P (P processes).
        #[arg(long, default_value = "shuffled-blocks:16")]
        pattern: swaptrace::synth::SynthPattern,
        /// Distinct pages (swap entries).
        #[arg(long, default_value_t = 65536)]
        pages: u64,
        /// Faults (default: one pass over the pages).
        #[arg(long)]
        faults: Option<u64>,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Memory the replay assumes, in pages (default: a quarter of the pages).
        #[arg(long)]
        memory_pages: Option<u64>,
        /// Instead: free batches of 64 of PAGES entries over this many swap
        /// devices (`replay --family free`).
        #[arg(long)]
        free_devices: Option<u8>,
        /// With --free-devices: consecutive entries on one device.
        #[arg(long, default_value_t = 8)]
        interleave: usize,
    },
    /// The built-in swap workload: touch SIZE of anonymous memory in PATTERN
    /// order, then read it back in address order, checking every page.
    Workload {
        #[arg(long, default_value = "384M", value_parser = parse_size_arg)]
        size: u64,
        /// seq, random, shuffled-blocks:K or strided:K.
        #[arg(long, default_value = "shuffled-blocks:16")]
        pattern: Pattern,
        #[arg(long, default_value_t = 1)]
        passes: u32,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Write every Nth page with zeros (swapped out without I/O); 0 = none.
        #[arg(long, default_value_t = 0)]
        zero_every: u32,
        /// After writing, print "holding" and keep the memory until SIGTERM/SIGINT.
        #[arg(long)]
        hold: bool,
        /// After writing, push the region out to swap (MADV_PAGEOUT).
        #[arg(long)]
        pageout: bool,
        /// Fill 1/N of each page with random bytes (pages compress ~N:1).
        #[arg(long, default_value_t = 0)]
        fill: u32,
        /// The read passes skip one page in every N (seed 004's test).
        #[arg(long, default_value_t = 0)]
        skip_every: u32,
        /// madvise(MADV_HUGEPAGE) the region before the read passes.
        #[arg(long)]
        thp: bool,
        /// After the read passes, print "holding" and keep the memory.
        #[arg(long)]
        hold_after: bool,
        #[arg(long)]
        json: bool,
    },
    /// Record the built-in workload in a memory cgroup with a temporary swap
    /// file (both removed after), then show what was recorded.
    Demo {
        #[arg(short, long, default_value = "swaptrace-demo.swt")]
        output: PathBuf,
        #[arg(long, default_value = "384M", value_parser = parse_size_arg)]
        size: u64,
        /// Memory cgroup limit.
        #[arg(long, default_value = "128M", value_parser = parse_size_arg)]
        limit: u64,
        #[arg(long, default_value = "1G", value_parser = parse_size_arg)]
        swap_size: u64,
        #[arg(long, default_value = "/var/tmp")]
        swap_dir: PathBuf,
        /// Swap on a non-rotational loop device, so the kernel uses VMA readahead.
        #[arg(long)]
        loop_device: bool,
        #[arg(long, default_value = "shuffled-blocks:16")]
        pattern: Pattern,
        /// Write every Nth page with zeros (swapped out without I/O); 0 = none.
        #[arg(long, default_value_t = 0)]
        zero_every: u32,
        #[arg(long)]
        json: bool,
    },
}

/// How to replay: shared by `replay` and `hist`.
#[derive(clap::Args)]
struct ReplayArgs {
    /// Comma-separated: cluster, vma, none, fixed:N, leap, oracle, or `all`
    /// (the default of `replay`).
    #[arg(long)]
    policy: Option<String>,
    /// page-cluster=N overrides the recorded /proc/sys/vm/page-cluster;
    /// request-us=F and page-us=F override the device model's costs.
    #[arg(long = "param")]
    params: Vec<String>,
    /// Swap-backed pages memory holds (default: the traced cgroup's limit,
    /// else all memory).
    #[arg(long)]
    memory_pages: Option<usize>,
    /// Device model for the modelled I/O time: nvme, ssd, hdd, zram
    /// (default: hdd when a recorded swap device is rotational, else ssd).
    #[arg(long)]
    device: Option<String>,
}

/// Which policies `replay` models.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Family {
    /// Swap readahead: cluster, vma, none, fixed:N, leap, oracle (and the
    /// swapoff variants).
    Readahead,
    /// Freeing swap entries in batches (seed 001): unsorted, sorted,
    /// per-device, batch:N; --param lock-ns=F, entry-ns=F.
    Free,
    /// The zswap pool and its shrinker (seed 003): no-shrinker, shrinker,
    /// shrinker-second-chance, disk-swapin-tracking; --param pool-pages=N,
    /// max-pool-percent=P, ratio=F, accept-threshold=P, shrinker-interval=N,
    /// priority=N, buckets=N.
    Zswap,
    /// khugepaged's swap-ins for collapse (seed 004): always,
    /// allocstall-per-pmd, allocstall-at-sleep, referenced-half,
    /// max-ptes-swap:N; --param pressure=direct|any, pressure-window-ms=N,
    /// page-us=F, request-us=F, sleep-gap-ms=N.
    Khugepaged,
}

/// What `run_policies` replayed.
struct Replayed {
    results: Vec<swaptrace::replay::Metrics>,
    unknown_faults: u64,
    unknown_swapoffs: u64,
    device: swaptrace::replay::DeviceModel,
}

fn parse_size_arg(s: &str) -> Result<u64, String> {
    parse_size(s).map_err(|e| e.to_string())
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, mul) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = s.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("invalid duration {s:?}: use e.g. 30s, 2m, 500ms"))?;
    if !(v.is_finite() && v > 0.0) {
        return Err(format!("invalid duration {s:?}: must be positive"));
    }
    Ok(Duration::from_secs_f64(v * mul))
}

fn main() {
    // Exit quietly when the reader of stdout goes away (`| head`), as CLI tools do.
    // SAFETY: restoring the default disposition of SIGPIPE before any threads.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    if let Err(e) = run(Cli::parse()) {
        eprintln!("swaptrace: {e:#}");
        std::process::exit(1);
    }
}

fn print_json(v: &impl serde::Serialize) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

fn run(cli: Cli) -> Result<()> {
    match cli.cmd {
        Cmd::Doctor { json } => doctor(json),
        Cmd::Info { trace, json } => {
            let t = read_trace(&trace).with_context(|| format!("reading {}", trace.display()))?;
            let path = trace.display().to_string();
            if json {
                print_json(&report::info_json(&t, &path))
            } else {
                let bytes = std::fs::metadata(&trace).map(|m| m.len()).unwrap_or(0);
                print!("{}", report::info_text(&t, &path, bytes));
                Ok(())
            }
        }
        Cmd::Hist {
            trace,
            metric,
            during,
            replay,
            json,
        } => {
            let t = read_trace(&trace).with_context(|| format!("reading {}", trace.display()))?;
            for p in &t.problems {
                eprintln!("warning: {p}");
            }
            let Some(policy) = &replay.policy else {
                let h = report::histogram(&t, metric, during)?;
                return if json {
                    print_json(&h.json())
                } else {
                    print!("{}", h.text());
                    Ok(())
                };
            };
            if metric != report::HistMetric::RaWindow {
                bail!("--policy goes with --metric ra-window");
            }
            // The live windows when the trace has them (exact probes).
            let mut columns: Vec<(String, std::collections::BTreeMap<u64, u64>)> = Vec::new();
            if let Ok(h) = report::histogram(&t, metric, during) {
                if let Some(c) = h.count {
                    columns.push(("live".into(), c.counts));
                }
            }
            for m in run_policies(&t, policy, &replay)?.results {
                columns.push((m.policy.clone(), report::replayed_windows(&m, during)));
            }
            if json {
                print_json(&report::window_columns_json(&columns))
            } else {
                print!("{}", report::window_columns_text(&columns));
                Ok(())
            }
        }
        Cmd::Replay {
            trace,
            family,
            replay: args,
            json,
        } => match family {
            Family::Readahead => replay(trace, &args, json),
            Family::Free => replay_free(trace, &args, json),
            Family::Zswap => replay_zswap(trace, &args, json),
            Family::Khugepaged => replay_khugepaged(trace, &args, json),
        },
        Cmd::Plot {
            trace,
            output,
            family,
            replay,
        } => plot(trace, output, family, &replay),
        Cmd::Compare {
            a,
            b,
            label,
            metric,
            plot,
            json,
        } => compare(a, b, &label, &metric, plot, json),
        Cmd::Export {
            trace,
            format,
            output,
        } => {
            if format != "jsonl" {
                bail!("--format {format}: only jsonl is supported");
            }
            let stats = match output {
                Some(path) => {
                    let f = std::fs::File::create(&path)
                        .with_context(|| format!("creating {}", path.display()))?;
                    swaptrace::trace::export_jsonl_file(&trace, std::io::BufWriter::new(f))?
                }
                None => swaptrace::trace::export_jsonl_file(
                    &trace,
                    std::io::BufWriter::new(std::io::stdout().lock()),
                )?,
            };
            for p in &stats.problems {
                eprintln!("warning: {p}");
            }
            eprintln!("exported {} records", stats.records);
            Ok(())
        }
        Cmd::Import { input, output } => {
            let f = std::fs::File::open(&input)
                .with_context(|| format!("opening {}", input.display()))?;
            let r = swaptrace::trace::import_jsonl(std::io::BufReader::new(f), &output)?;
            for (line, why) in &r.bad_lines {
                eprintln!("{}:{line}: {why}", input.display());
            }
            if r.bad_lines_omitted > 0 {
                eprintln!("… and {} more bad lines", r.bad_lines_omitted);
            }
            if r.header_synthesized {
                eprintln!("note: no header line: a minimal header was written");
            }
            if r.out_of_order > 0 {
                eprintln!(
                    "note: {} records earlier than the one before",
                    r.out_of_order
                );
            }
            println!(
                "imported {} records into {} ({} bad lines skipped)",
                r.records,
                output.display(),
                r.bad_line_count()
            );
            Ok(())
        }
        Cmd::Synth {
            output,
            pattern,
            pages,
            faults,
            seed,
            memory_pages,
            free_devices,
            interleave,
        } => {
            if pages == 0 {
                bail!("--pages must be at least 1");
            }
            let spec = swaptrace::synth::SynthSpec {
                pattern,
                pages,
                faults: faults.unwrap_or(pages),
                seed,
                memory_pages: memory_pages.unwrap_or((pages / 4).max(1)),
            };
            let n = match free_devices {
                Some(0) => bail!("--free-devices must be at least 1"),
                Some(devices) => {
                    let records = swaptrace::replay::free::synth_free(
                        devices,
                        pages as usize,
                        swaptrace::replay::free::SWAP_BATCH,
                        interleave,
                        seed,
                    );
                    let mut h = swaptrace::synth::header(&spec);
                    h.target = format!(
                        "synthetic: {pages} freed entries over {devices} devices, runs of {interleave}"
                    );
                    swaptrace::synth::write_records(&h, records, &output)?
                }
                None => swaptrace::synth::write(&spec, &output)?,
            };
            println!("wrote {n} records to {}", output.display());
            Ok(())
        }
        Cmd::Workload {
            size,
            pattern,
            passes,
            seed,
            zero_every,
            hold,
            pageout,
            fill,
            skip_every,
            thp,
            hold_after,
            json,
        } => {
            let spec = WorkloadSpec {
                size_bytes: size,
                pattern,
                passes,
                seed,
                zero_every,
                hold,
                pageout,
                fill,
                skip_every,
                thp,
                hold_after,
            };
            let r = workload::run(&spec)?;
            if json {
                print_json(&r)
            } else {
                println!(
                    "{} pages ({pattern}) written in {:.2}s, read back in {:.2}s; {} major, {} minor faults",
                    r.pages,
                    r.elapsed_write.as_secs_f64(),
                    r.elapsed_read.as_secs_f64(),
                    r.maj_faults,
                    r.min_faults
                );
                Ok(())
            }
        }
        Cmd::Record {
            output,
            duration,
            cgroup,
            pid,
            ring_size,
            no_fentry,
            json,
            command,
        } => record(
            output, duration, cgroup, pid, ring_size, no_fentry, json, command,
        ),
        Cmd::Top {
            interval,
            count,
            pid,
            cgroup,
            metric,
            json,
        } => top(interval, count, pid, cgroup, metric, json),
        Cmd::Demo {
            output,
            size,
            limit,
            swap_size,
            swap_dir,
            loop_device,
            pattern,
            zero_every,
            json,
        } => demo(
            output,
            WorkloadSpec {
                size_bytes: size,
                pattern,
                passes: 1,
                seed: 1,
                zero_every,
                ..WorkloadSpec::default()
            },
            limit,
            swap_size,
            swap_dir,
            loop_device,
            json,
        ),
    }
}

fn replay(trace: PathBuf, args: &ReplayArgs, json: bool) -> Result<()> {
    let t = read_trace(&trace).with_context(|| format!("reading {}", trace.display()))?;
    for p in &t.problems {
        eprintln!("warning: {p}");
    }
    let policy = args.policy.as_deref().unwrap_or("all");
    let r = run_policies(&t, policy, args)?;
    let kernel = report::kernel_counts(&t);
    let kp = swaptrace::replay::kernel_policy(&t.header);
    if json {
        print_json(&report::replay_json(
            &r.results,
            kernel.as_ref(),
            kp,
            &r.device,
        ))
    } else {
        if r.unknown_faults > 0 {
            eprintln!(
                "note: {} faults without a recorded swap-out entry are not replayed",
                r.unknown_faults
            );
        }
        if r.unknown_swapoffs > 0 {
            eprintln!(
                "note: {} swapoffs of a device the trace cannot tell are not replayed",
                r.unknown_swapoffs
            );
        }
        print!(
            "{}",
            report::replay_text(&r.results, kernel.as_ref(), kp, &r.device)
        );
        Ok(())
    }
}

fn compare(
    a: PathBuf,
    b: PathBuf,
    label: &str,
    metrics: &[String],
    plot: Option<PathBuf>,
    json: bool,
) -> Result<()> {
    let mut labels = ("A".to_string(), "B".to_string());
    for part in label.split(',') {
        match part.split_once('=') {
            Some(("A", v)) => labels.0 = v.to_string(),
            Some(("B", v)) => labels.1 = v.to_string(),
            _ => bail!("--label {label}: expected A=NAME,B=NAME"),
        }
    }
    let load = |p: &PathBuf| {
        let t = read_trace(p).with_context(|| format!("reading {}", p.display()))?;
        for w in &t.problems {
            eprintln!("warning: {}: {w}", p.display());
        }
        anyhow::Ok(t)
    };
    let (ta, tb) = (load(&a)?, load(&b)?);
    let c = report::compare(&ta, &tb, labels, metrics);
    if let Some(dir) = plot {
        compare_plots(&dir, &ta, &tb, &c)?;
    }
    if json {
        print_json(&c.json())
    } else {
        print!("{}", c.text());
        Ok(())
    }
}

#[cfg(feature = "plot")]
fn compare_plots(
    dir: &std::path::Path,
    a: &swaptrace::trace::Loaded,
    b: &swaptrace::trace::Loaded,
    c: &report::Comparison,
) -> Result<()> {
    for f in report::compare_png(dir, a, b, c)? {
        println!("wrote {}", f.display());
    }
    Ok(())
}

#[cfg(not(feature = "plot"))]
fn compare_plots(
    _: &std::path::Path,
    _: &swaptrace::trace::Loaded,
    _: &swaptrace::trace::Loaded,
    _: &report::Comparison,
) -> Result<()> {
    bail!("this swaptrace was built without the `plot` feature")
}

fn replay_khugepaged(trace: PathBuf, args: &ReplayArgs, json: bool) -> Result<()> {
    use swaptrace::replay::khugepaged::{
        khp_json, khp_text, replay_khugepaged, KhpInput, KhpLive, KhpParams, KhpPolicy,
    };
    let t = read_trace(&trace).with_context(|| format!("reading {}", trace.display()))?;
    for p in &t.problems {
        eprintln!("warning: {p}");
    }
    let params: Vec<&str> = args.params.iter().map(String::as_str).collect();
    let params = KhpParams::parse(&params)?;
    let policies = match args.policy.as_deref() {
        None | Some("all") => {
            let mut p = KhpPolicy::defaults();
            p.push(KhpPolicy::MaxPtesSwap(512));
            p
        }
        Some(list) => KhpPolicy::parse_list(&list.split(',').map(str::trim).collect::<Vec<_>>())?,
    };
    let input = KhpInput::from_loaded(&t)?;
    let live = KhpLive::from_input(&input, &params);
    let results = replay_khugepaged(&input, &policies, &params);
    let footprint = t
        .footer
        .as_ref()
        .map(|f| f.footprint.as_slice())
        .unwrap_or(&[]);
    if json {
        let mut v = khp_json(&live, &results);
        v["footprint"] = serde_json::json!(footprint);
        print_json(&v)
    } else {
        print!("{}", khp_text(&live, &results));
        print!("{}", report::footprint_text(footprint));
        Ok(())
    }
}

fn replay_zswap(trace: PathBuf, args: &ReplayArgs, json: bool) -> Result<()> {
    use swaptrace::replay::zswap::{zswap_json, zswap_text};
    let t = read_trace(&trace).with_context(|| format!("reading {}", trace.display()))?;
    for p in &t.problems {
        eprintln!("warning: {p}");
    }
    let (input, results) = zswap_results(&t, args)?;
    if json {
        print_json(&zswap_json(&input.live, &results))
    } else {
        print!("{}", zswap_text(&input.live, &results));
        Ok(())
    }
}

/// The zswap policies replayed on `t`, the pool's compression ratio taken
/// from the trace's pool samples unless `--param ratio=` is given.
fn zswap_results(
    t: &swaptrace::trace::Loaded,
    args: &ReplayArgs,
) -> Result<(
    swaptrace::replay::zswap::ZswapInput,
    Vec<swaptrace::replay::zswap::ZswapMetrics>,
)> {
    use swaptrace::replay::zswap::{replay_zswap, ZswapInput, ZswapParams, ZswapPolicy};
    // The recording kernel's zswap settings, then the user's.
    let mut params = ZswapParams::from_trace(t);
    for p in &args.params {
        params.set(p)?;
    }
    let policies = match args.policy.as_deref() {
        None | Some("all") => ZswapPolicy::all(),
        Some(list) => ZswapPolicy::parse_list(&list.split(',').map(str::trim).collect::<Vec<_>>())?,
    };
    let input = ZswapInput::from_loaded(t)?;
    let results = replay_zswap(&input, &policies, &params);
    Ok((input, results))
}

fn replay_free(trace: PathBuf, args: &ReplayArgs, json: bool) -> Result<()> {
    use swaptrace::replay::free::{
        free_json, free_text, replay_free, FreeCost, FreeError, FreeInput, FreePolicy, LiveFree,
    };
    let t = read_trace(&trace).with_context(|| format!("reading {}", trace.display()))?;
    for p in &t.problems {
        eprintln!("warning: {p}");
    }
    let mut cost = FreeCost::default();
    for p in &args.params {
        let v = |v: &str| {
            v.parse::<f64>()
                .with_context(|| format!("--param {p}: a cost in ns"))
        };
        match p.split_once('=') {
            Some(("lock-ns", x)) => cost.lock_ns = v(x)?,
            Some(("entry-ns", x)) => cost.entry_ns = v(x)?,
            _ => bail!("--param {p}: known parameters of --family free: lock-ns=F, entry-ns=F"),
        }
    }
    let cost = FreeCost::new(cost.lock_ns, cost.entry_ns)?;
    let policies = match args.policy.as_deref() {
        None | Some("all") => FreePolicy::defaults(),
        Some(list) => list
            .split(',')
            .map(|n| FreePolicy::from_name(n.trim()))
            .collect::<Result<_, _>>()?,
    };
    let input = match FreeInput::from_loaded(&t) {
        Ok(i) => i,
        Err(FreeError::NoBatches) => {
            let spans = report::zap_spans(&t.records);
            if json {
                print_json(&serde_json::json!({ "free_batches": 0, "zaps": spans }))?;
            } else if !spans.is_empty() {
                println!("swap entries freed by zapping page tables (exit, munmap):");
                print!("{}", report::zap_text(&spans));
            }
            bail!("{}", FreeError::NoBatches);
        }
        Err(e) => return Err(e.into()),
    };
    let live = LiveFree::from_input(&input);
    let results = replay_free(&input, &policies, cost);
    if json {
        print_json(&free_json(&live, &results))
    } else {
        print!("{}", free_text(&live, &results));
        Ok(())
    }
}

/// Replays `t` through the named policies (`all`: the standard set, with
/// the pre-5.8 swapoff variants when the trace has a swapoff).
fn run_policies(t: &swaptrace::trace::Loaded, policy: &str, args: &ReplayArgs) -> Result<Replayed> {
    use swaptrace::replay::{
        policy_by_name, replay_all, DeviceModel, Event, ReplayInput, SwapoffMode,
    };
    let pages = args.memory_pages.unwrap_or_else(|| t.header.memory_pages());
    let mut input = ReplayInput::from_trace(t, pages)?;
    let mut device = match &args.device {
        Some(d) => DeviceModel::by_name(d)?,
        None => DeviceModel::for_trace(&t.header),
    };
    for p in &args.params {
        let cost = |v: &str| {
            v.parse::<f64>()
                .ok()
                .filter(|c| c.is_finite() && *c >= 0.0)
                .with_context(|| format!("--param {p}: a cost in µs, 0 or more"))
        };
        match p.split_once('=') {
            Some(("page-cluster", v)) => {
                input.page_cluster = v
                    .parse()
                    .ok()
                    .filter(|&c: &u32| c <= 10)
                    .with_context(|| format!("--param {p}: page-cluster is 0 to 10"))?
            }
            Some(("request-us", v)) => device.request_us = cost(v)?,
            Some(("page-us", v)) => device.page_us = cost(v)?,
            _ => bail!("--param {p}: known parameters: page-cluster=N, request-us=F, page-us=F"),
        }
    }
    let mut owned: Vec<String> = Vec::new();
    let names: Vec<&str> = if policy == "all" {
        let mut all = vec!["cluster", "vma", "none", "fixed:8", "leap", "oracle"];
        if input
            .events
            .iter()
            .any(|e| matches!(e, Event::Swapoff { .. }))
        {
            // The other kernels' swapoff next to this one's (plain names).
            let other: Vec<&str> = [
                (SwapoffMode::Readahead, "no-swapoff-fix"),
                (SwapoffMode::LookupStats, "swapoff-fix"),
                (SwapoffMode::LookupNoStats, "swapoff-nostats"),
            ]
            .into_iter()
            .filter(|(m, _)| *m != input.swapoff_mode)
            .map(|(_, s)| s)
            .collect();
            for b in ["cluster", "vma"] {
                owned.extend(other.iter().map(|s| format!("{b}-{s}")));
            }
            all.splice(2..2, owned.iter().map(String::as_str));
        }
        all
    } else {
        policy.split(',').map(str::trim).collect()
    };
    let policies = names
        .iter()
        .map(|n| policy_by_name(n, &input))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Replayed {
        results: replay_all(&input, policies),
        unknown_faults: input.unknown_faults,
        unknown_swapoffs: input.unknown_swapoffs,
        device,
    })
}

#[cfg(feature = "plot")]
fn plot(trace: PathBuf, output: PathBuf, family: Family, replay: &ReplayArgs) -> Result<()> {
    let t = read_trace(&trace).with_context(|| format!("reading {}", trace.display()))?;
    for p in &t.problems {
        eprintln!("warning: {p}");
    }
    match family {
        Family::Readahead => {}
        Family::Zswap => {
            let (_, results) = zswap_results(&t, replay)?;
            for f in report::zswap_png(&output, &t, &results)? {
                println!("wrote {}", f.display());
            }
            return Ok(());
        }
        Family::Khugepaged => bail!("--family khugepaged has no charts yet; `replay --family khugepaged` shows it"),
        Family::Free => bail!("--family free has no charts; `hist --metric free-latency` and `replay --family free` show it"),
    }
    let policy = replay.policy.as_deref().unwrap_or("all");
    let results = match run_policies(&t, policy, replay) {
        Ok(r) => r.results,
        Err(e) => {
            eprintln!("note: no replay ({e:#}); plotting the trace alone");
            Vec::new()
        }
    };
    let live = report::histogram(&t, report::HistMetric::RaWindow, report::During::All)
        .ok()
        .and_then(|h| h.count)
        .map(|c| c.counts);
    for f in report::plot_all(&t, live.as_ref(), &results, &output)? {
        println!("wrote {}", f.display());
    }
    Ok(())
}

#[cfg(not(feature = "plot"))]
fn plot(_: PathBuf, _: PathBuf, _: Family, _: &ReplayArgs) -> Result<()> {
    bail!("this swaptrace was built without the `plot` feature")
}

fn doctor(json: bool) -> Result<()> {
    #[allow(unused_mut)]
    let mut facts = KernelFacts::gather();
    #[cfg(feature = "live")]
    {
        match probe::Probe::load(&facts, &probe::ProbeConfig::default()) {
            Ok(mut p) => facts.fentry = p.trial_fentry(),
            Err(e) => facts.fentry = probe::Trial::NotTried(e.to_string()),
        }
    }
    #[cfg(not(feature = "live"))]
    {
        facts.fentry = probe::Trial::NotTried("built without the `live` feature".into());
    }
    let plans = probe::plan(&facts);
    if json {
        print_json(&report::doctor_json(&facts, &plans))
    } else {
        print!("{}", report::doctor_text(&facts, &plans));
        Ok(())
    }
}

#[cfg(not(feature = "live"))]
fn no_live() -> Result<()> {
    bail!("this swaptrace was built without the `live` feature: it can read traces but not record them")
}

#[cfg(not(feature = "live"))]
#[allow(clippy::too_many_arguments)]
fn record(
    _: PathBuf,
    _: Option<Duration>,
    _: Option<PathBuf>,
    _: Option<u32>,
    _: Option<u64>,
    _: bool,
    _: bool,
    _: Vec<String>,
) -> Result<()> {
    no_live()
}

#[cfg(not(feature = "live"))]
fn top(
    _: Duration,
    _: Option<u64>,
    _: Option<u32>,
    _: Option<PathBuf>,
    _: Vec<String>,
    _: bool,
) -> Result<()> {
    no_live()
}

#[cfg(feature = "live")]
fn top(
    interval: Duration,
    count: Option<u64>,
    pid: Option<u32>,
    cgroup: Option<PathBuf>,
    metrics: Vec<String>,
    json: bool,
) -> Result<()> {
    use std::io::Write;
    const SECTIONS: &[&str] = &[
        "faults",
        "pages-read",
        "ra-window",
        "swap-out",
        "free-latency",
        "khugepaged",
        "zswap",
        "reclaim",
        "vmstat",
    ];
    if let Some(m) = metrics.iter().find(|m| !SECTIONS.contains(&m.as_str())) {
        bail!("--metric {m}: known: {}", SECTIONS.join(", "));
    }
    let opts = swaptrace::record::TopOptions {
        interval,
        count,
        pid,
        cgroup,
        metrics: metrics.clone(),
    };
    if !json {
        eprintln!("attaching; an interval every {interval:?}, Ctrl-C to stop");
    }
    swaptrace::record::top(&opts, |iv| {
        let mut o = std::io::stdout().lock();
        let _ = if json {
            writeln!(o, "{}", iv.json())
        } else {
            writeln!(o, "{}", iv.text(&metrics))
        };
        let _ = o.flush();
    })?;
    Ok(())
}

#[cfg(not(feature = "live"))]
#[allow(clippy::too_many_arguments)]
fn demo(_: PathBuf, _: WorkloadSpec, _: u64, _: u64, _: PathBuf, _: bool, _: bool) -> Result<()> {
    no_live()
}

#[cfg(feature = "live")]
fn print_recorded(r: &swaptrace::record::Recorded, json: bool) -> Result<()> {
    let check = report::vmstat_check(&r.summary, &r.vmstat_delta);
    if json {
        return print_json(&serde_json::json!({ "recorded": r, "vmstat_check": check }));
    }
    let s = &r.summary;
    println!(
        "recorded {} records in {:.1}s to {} ({} bytes, {:.1} bytes/record)",
        r.records,
        r.elapsed_s,
        r.path.display(),
        r.bytes,
        r.bytes as f64 / r.records.max(1) as f64
    );
    let lost = |k: &str| s.lost.get(k).copied().unwrap_or(0);
    println!("{:<20} {:>10} {:>8}", "METRIC", "EVENTS", "LOST");
    for (m, n, k) in [
        ("swap-out", s.swap_outs, "swap_out"),
        ("swap-fault", s.faults, "swap_fault"),
        (
            "swap-read (outside faults)",
            s.other_reads_io + s.other_reads_zero + s.other_reads_zswap,
            "swap_read",
        ),
        ("reclaim", s.reclaim_direct + s.reclaim_memcg, "reclaim"),
        (
            "khugepaged-swapin",
            s.khugepaged_swapins,
            "khugepaged_swapin",
        ),
        ("zswap-writeback", s.zswap_writebacks, "zswap_writeback"),
        ("swapoff", s.swapoff_calls, "syscall"),
        ("ra-window", s.ra_windows, "ra_window"),
        ("swap-cache-lookup", s.cache_lookups, "cache_lookup"),
        ("free-batch", s.free_batches, "free_batch"),
        ("zswap-op", s.zswap_stores + s.zswap_loads, "zswap_op"),
    ] {
        println!("{m:<20} {n:>10} {:>8}", lost(k));
    }
    println!(
        "faults: {} major, {} minor, {} joined to their swap-out entry; pages read {}",
        s.faults_major,
        s.faults - s.faults_major,
        s.faults_joined,
        s.pswpin()
    );
    if let Some(code) = r.exit_code {
        println!("command exited with {code}");
    }
    println!("\nagainst /proc/vmstat over the same span (system-wide):");
    print!("{}", report::check_text(&check));
    for (p, why) in &r.skipped {
        println!("not attached: {p}: {why}");
    }
    Ok(())
}

#[cfg(feature = "live")]
#[allow(clippy::too_many_arguments)]
fn record(
    output: PathBuf,
    duration: Option<Duration>,
    cgroup: Option<PathBuf>,
    pid: Option<u32>,
    ring_size: Option<u64>,
    no_fentry: bool,
    json: bool,
    command: Vec<String>,
) -> Result<()> {
    if duration.is_none() && command.is_empty() {
        eprintln!("recording until Ctrl-C (give --duration or -- CMD to stop by itself)");
    }
    let ring_bytes = ring_size
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
        output,
        duration,
        command,
        cgroup,
        pid,
        ring_bytes,
        no_fentry,
        progress: !json,
        ..Default::default()
    })?;
    print_recorded(&r, json)
}

#[cfg(feature = "live")]
#[allow(clippy::too_many_arguments)]
fn demo(
    output: PathBuf,
    workload: WorkloadSpec,
    limit: u64,
    swap_size: u64,
    swap_dir: PathBuf,
    loop_device: bool,
    json: bool,
) -> Result<()> {
    if !json {
        println!(
            "demo: {} MiB of {} in a {} MiB memory cgroup, {} MiB temporary swap in {}{}",
            workload.size_bytes >> 20,
            workload.pattern,
            limit >> 20,
            swap_size >> 20,
            swap_dir.display(),
            if loop_device {
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
            workload,
            limit_bytes: limit,
            swap_bytes: swap_size,
            swap_dir,
            output: output.clone(),
            loop_device,
            progress: !json,
        },
    )?;
    if r.exit_code != Some(0) {
        bail!(
            "the workload failed (exit {:?}; an OOM kill if the limit is too small)",
            r.exit_code
        );
    }
    print_recorded(&r, json)?;
    if !json {
        println!("\nswaptrace info {}:", output.display());
        let t = read_trace(&output)?;
        let bytes = std::fs::metadata(&output).map(|m| m.len()).unwrap_or(0);
        print!(
            "{}",
            report::info_text(&t, &output.display().to_string(), bytes)
        );
    }
    Ok(())
}
