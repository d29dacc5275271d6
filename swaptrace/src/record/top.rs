//! `swaptrace top`: the probes of `record`, summed per interval and shown as
//! it goes (bcc's `argdist -i` / `funclatency -i`), instead of written.

use super::live::{attach, Attached, RecordError};
use super::prometheus::{Histogram, FREE_LATENCY_BUCKETS};
use super::ring::drain;
use super::Recorder;
use crate::lab::{self, VmStat};
use crate::probe::{self, KernelFacts, ProbeConfig};
use crate::stats::{CountTable, Log2Hist, RA_WINDOW_TITLE};
use crate::trace::{utc, Record, Summary, SWAP_COUNTERS};
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::PathBuf;
use std::time::Duration;
use swaptrace_common::kind;

pub struct TopOptions {
    pub interval: Duration,
    /// Stop after this many intervals.
    pub count: Option<u64>,
    pub pid: Option<u32>,
    pub cgroup: Option<PathBuf>,
    /// Sections to show (empty: all): faults, pages-read, ra-window,
    /// swap-out, free-latency, khugepaged, zswap, reclaim, vmstat.
    pub metrics: Vec<String>,
}

/// What one interval saw.
pub struct Interval {
    pub index: u64,
    /// Unix time at the interval's end, s.
    pub end_unix_s: f64,
    pub seconds: f64,
    pub summary: Summary,
    /// Readahead windows (exact probes), argdist style.
    pub windows: CountTable,
    /// Pages read by I/O per major fault.
    pub pages_read: CountTable,
    /// Free-batch latency, µs (exact probes).
    pub free_latency: Log2Hist,
    /// Free-batch latency, s, in the buckets of `top --listen`.
    pub free_latency_s: Histogram,
    /// Lost events in this interval.
    pub lost: u64,
    /// The same, by the record they would have been (every kind, 0 or more).
    pub lost_by: BTreeMap<String, u64>,
    /// The kernel's counters over the same interval.
    pub vmstat: BTreeMap<String, i64>,
}

impl Interval {
    fn new(index: u64) -> Interval {
        Interval {
            index,
            end_unix_s: 0.0,
            seconds: 0.0,
            summary: Summary::default(),
            windows: CountTable::new("$retval"),
            pages_read: CountTable::new("pages_read"),
            free_latency: Log2Hist::new("usecs"),
            free_latency_s: Histogram::new(FREE_LATENCY_BUCKETS),
            lost: 0,
            lost_by: BTreeMap::new(),
            vmstat: BTreeMap::new(),
        }
    }

    fn add(&mut self, r: &Record) {
        self.summary.add(r);
        match r {
            Record::RaWindow { window, .. } => self.windows.add(*window as u64, 1),
            Record::SwapFault {
                major: true,
                pages_read,
                ..
            } => self.pages_read.add(*pages_read as u64, 1),
            Record::FreeBatch { lat_ns, .. } => {
                self.free_latency.add(*lat_ns as u64 / 1000);
                self.free_latency_s.observe(*lat_ns as f64 * 1e-9);
            }
            _ => {}
        }
    }

    fn shows(metrics: &[String], m: &str) -> bool {
        metrics.is_empty() || metrics.iter().any(|x| x == m)
    }

    /// The human view of the interval.
    pub fn text(&self, metrics: &[String]) -> String {
        let s = &self.summary;
        let mut o = String::new();
        let t = utc((self.end_unix_s * 1e9) as u64);
        let _ = writeln!(o, "{t} (interval {}, {:.2} s)", self.index, self.seconds);
        if Self::shows(metrics, "faults") {
            let _ = writeln!(
                o,
                "  swap-in faults {:>8} (major {}, minor {}); pages read {} (zero {}, zswap {})",
                s.faults,
                s.faults_major,
                s.faults - s.faults_major,
                s.fault_pages_read + s.other_reads_io,
                s.fault_zero_reads + s.other_reads_zero,
                s.fault_zswap_loads + s.other_reads_zswap,
            );
        }
        if Self::shows(metrics, "swap-out") {
            let _ = writeln!(
                o,
                "  swap-outs      {:>8} pages (I/O {}, zero {}, zswap {})",
                s.swap_out_pages, s.swap_out_io, s.swap_out_zero, s.swap_out_zswap
            );
        }
        if Self::shows(metrics, "reclaim") {
            let _ = writeln!(
                o,
                "  reclaim        {:>8} direct, {} memcg",
                s.reclaim_direct, s.reclaim_memcg
            );
        }
        if Self::shows(metrics, "khugepaged") {
            let _ = writeln!(
                o,
                "  khugepaged     {:>8} swap-ins, {} scans, {} collapses",
                s.khugepaged_swapins, s.khugepaged_scans, s.collapses_ok
            );
        }
        if Self::shows(metrics, "zswap") {
            let _ = writeln!(
                o,
                "  zswap          stores {} (rejected {}), loads {} (missed {}), writebacks {}",
                s.zswap_stores.max(s.swap_out_zswap),
                s.zswap_stores_rejected,
                s.zswap_loads.max(s.fault_zswap_loads),
                s.zswap_loads_missed,
                s.zswap_writebacks
            );
        }
        let _ = writeln!(o, "  lost           {:>8}", self.lost);
        if Self::shows(metrics, "vmstat") {
            let v: Vec<String> = SWAP_COUNTERS
                .iter()
                .filter_map(|k| {
                    self.vmstat
                        .get(*k)
                        .filter(|&&d| d != 0)
                        .map(|d| format!("{k} {d}"))
                })
                .collect();
            let _ = writeln!(o, "  vmstat (all)   {}", v.join(", "));
        }
        if Self::shows(metrics, "ra-window") && self.windows.total() > 0 {
            let _ = writeln!(o, "{RA_WINDOW_TITLE}");
            let _ = write!(o, "{}", self.windows);
        }
        if Self::shows(metrics, "pages-read") && self.pages_read.total() > 0 {
            let _ = writeln!(o, "pages read by I/O per major swap fault");
            let _ = write!(o, "{}", self.pages_read);
        }
        if Self::shows(metrics, "free-latency") && self.free_latency.total() > 0 {
            let _ = writeln!(o, "swapcache_free_entries() latency");
            let _ = write!(o, "{}", self.free_latency);
        }
        o
    }

    /// One JSON object per interval, with explicit bucket bounds.
    pub fn json(&self) -> serde_json::Value {
        let counts = |c: &CountTable| {
            c.counts
                .iter()
                .map(|(v, n)| json!({"value": v, "count": n}))
                .collect::<Vec<_>>()
        };
        json!({
            "interval": self.index,
            "end_unix_s": self.end_unix_s,
            "seconds": self.seconds,
            "summary": self.summary,
            "ra_window": counts(&self.windows),
            "pages_read_per_major_fault": counts(&self.pages_read),
            "free_latency_us": self.free_latency.to_json(),
            "lost": self.lost,
            "vmstat": self.vmstat,
        })
    }
}

/// Attaches, then calls `show` at the end of every interval until `count`
/// intervals, SIGINT or SIGTERM; detaches on return.
/// The sections `top --metric` may name, in display order.
pub const TOP_SECTIONS: &[&str] = &[
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

pub fn top(opts: &TopOptions, show: impl FnMut(&Interval)) -> Result<u64, RecordError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| RecordError::Io {
            what: "tokio runtime".into(),
            source,
        })?;
    rt.block_on(top_async(opts, show))
}

async fn top_async(opts: &TopOptions, mut show: impl FnMut(&Interval)) -> Result<u64, RecordError> {
    lab::require_root()?;
    lab::journal::restore_dead_reporting();
    if opts.interval < Duration::from_millis(10) {
        return Err(RecordError::Io {
            what: "--interval".into(),
            source: std::io::Error::other("at least 10ms"),
        });
    }
    let mut facts = KernelFacts::gather();
    let cfg = ProbeConfig {
        filter_pid: opts.pid,
        filter_cgroup: opts
            .cgroup
            .as_deref()
            .map(super::live::cgroup_inode)
            .transpose()?,
        ring_bytes: None,
        log_level: 0,
        twins: facts.twins_wanted(),
    };
    let Attached {
        probe,
        mut fd,
        mut sigint,
        mut sigterm,
        ..
    } = attach(&mut facts, &cfg, super::live::Exact::All)?;
    let mut rec = Recorder::new(probe::page_size());
    let mut out = Vec::with_capacity(4096);
    let mut tick =
        tokio::time::interval_at(tokio::time::Instant::now() + opts.interval, opts.interval);
    let mut cur = Interval::new(1);
    let mut vm = VmStat::read().ok();
    let mut lost_before = probe.stats().map(|s| s.lost).unwrap_or_default();
    let mut started = tokio::time::Instant::now();
    let mut shown = 0;
    loop {
        tokio::select! {
            guard = fd.readable_mut() => {
                let mut guard = match guard {
                    Ok(g) => g,
                    Err(source) => return Err(RecordError::Io { what: "ring buffer poll".into(), source }),
                };
                if !drain(guard.get_inner_mut(), &mut rec, &mut out) {
                    guard.clear_ready();
                }
                for r in out.drain(..) { cur.add(&r); }
            }
            _ = sigint.recv() => break,
            _ = sigterm.recv() => break,
            _ = tick.tick() => {
                let _ = drain(fd.get_mut(), &mut rec, &mut out);
                for r in out.drain(..) { cur.add(&r); }
                let now_vm = VmStat::read().ok();
                if let (Some(a), Some(b)) = (&vm, &now_vm) {
                    cur.vmstat = a.delta(b);
                }
                vm = now_vm;
                let lost_now = probe.stats().map(|s| s.lost).unwrap_or(lost_before);
                for (k, (now, before)) in lost_now.iter().zip(&lost_before).enumerate() {
                    let d = now.saturating_sub(*before);
                    let name = kind::name(k as u8);
                    if name != "unknown" || d > 0 {
                        cur.lost += d;
                        *cur.lost_by.entry(name.to_string()).or_default() += d;
                    }
                }
                lost_before = lost_now;
                let now = tokio::time::Instant::now();
                cur.seconds = (now - started).as_secs_f64();
                started = now;
                cur.end_unix_s = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs_f64())
                    .unwrap_or(0.0);
                show(&cur);
                shown += 1;
                cur = Interval::new(shown + 1);
                if opts.count.is_some_and(|c| shown >= c) {
                    break;
                }
            }
        }
    }
    Ok(shown)
}
