//! `swaptrace info`: a trace's header, counts per record kind, vmstat deltas.

use crate::trace::{
    utc, Footer, Header, Loaded, ReadCoverage, Record, Summary, TraceStream, SWAP_COUNTERS,
};
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt::Write;

pub fn summary(t: &Loaded) -> Summary {
    TraceInfo::of(t).summary
}

/// What `info` shows of a trace: its header and footer and its records
/// counted, without the records (built from a stream in bounded memory).
#[derive(Debug, Default)]
pub struct TraceInfo {
    pub header: Header,
    pub footer: Option<Footer>,
    pub chunks: usize,
    pub kinds: BTreeMap<&'static str, u64>,
    pub skipped: u64,
    pub summary: Summary,
    pub problems: Vec<String>,
}

impl TraceInfo {
    /// Counts `batch` by kind a run at a time (most records repeat the
    /// kind before them), and into the summary.
    fn add(&mut self, batch: &[Record]) {
        let mut run: Option<(&'static str, u64)> = None;
        for r in batch {
            let kind = r.kind_name();
            match &mut run {
                Some((k, n)) if std::ptr::eq(*k, kind) || *k == kind => *n += 1,
                _ => {
                    if let Some((k, n)) = run.replace((kind, 1)) {
                        *self.kinds.entry(k).or_default() += n;
                    }
                }
            }
            self.summary.add(r);
        }
        if let Some((k, n)) = run {
            *self.kinds.entry(k).or_default() += n;
        }
    }

    pub fn of(t: &Loaded) -> TraceInfo {
        let mut i = TraceInfo {
            header: t.header.clone(),
            footer: t.footer.clone(),
            chunks: t.chunks.len(),
            skipped: t.skipped,
            problems: t.problems.iter().map(|p| p.to_string()).collect(),
            ..TraceInfo::default()
        };
        i.add(&t.records);
        i
    }

    /// Reads `s` to its end, one batch at a time; `each` sees every batch
    /// (for progress).
    pub fn stream(mut s: TraceStream, mut each: impl FnMut(&TraceStream)) -> TraceInfo {
        let mut i = TraceInfo {
            header: s.header().clone(),
            ..TraceInfo::default()
        };
        while let Some(batch) = s.next_batch() {
            i.add(&batch);
            s.recycle(batch);
            each(&s);
        }
        let end = s.finish();
        i.footer = end.footer;
        i.chunks = end.chunks;
        i.skipped = end.skipped;
        i.problems = end.problems.iter().map(|p| p.to_string()).collect();
        i
    }

    /// What of the kernel's swap-ins the records hold (None without vmstat).
    pub fn coverage(&self) -> Option<ReadCoverage> {
        let delta = |c: &str| self.header.vmstat_delta(self.footer.as_ref(), c);
        ReadCoverage::of(&self.summary, delta)
    }

    pub fn json(&self, path: &str) -> serde_json::Value {
        json!({
            "path": path,
            "header": self.header,
            "footer": self.footer,
            "finalized": self.footer.is_some(),
            "chunks": self.chunks,
            "records": self.kinds,
            "unknown_records_skipped": self.skipped,
            "summary": self.summary,
            "reads_recorded": self.coverage().map(|c| c.json()),
            "problems": self.problems,
        })
    }
}

pub fn info_json(t: &Loaded, path: &str) -> serde_json::Value {
    TraceInfo::of(t).json(path)
}

pub fn info_text(t: &Loaded, path: &str, file_bytes: u64) -> String {
    TraceInfo::of(t).text(path, file_bytes)
}

impl TraceInfo {
    pub fn text(&self, path: &str, file_bytes: u64) -> String {
        let t = self;
        let h = &t.header;
        let mut o = String::new();
        let state = if t.footer.is_some() {
            "finalized"
        } else {
            "NOT finalized (recording cut short)"
        };
        let _ = writeln!(
            o,
            "trace       {path} ({file_bytes} bytes, {} chunks, {state})",
            t.chunks
        );
        let _ = writeln!(
            o,
            "format      v{}, written by swaptrace {}",
            h.format_version, h.tool_version
        );
        let _ = writeln!(
            o,
            "kernel      {}, page size {}",
            h.kernel_release, h.page_size
        );
        let dur = t
            .footer
            .as_ref()
            .map(|f| {
                format!(
                    ", {:.1} s",
                    f.monotonic_end_ns.saturating_sub(h.monotonic_start_ns) as f64 / 1e9
                )
            })
            .unwrap_or_default();
        let _ = writeln!(o, "recorded    {}{dur}", utc(h.realtime_start_ns));
        let _ = writeln!(o, "target      {}", h.target);
        if let Some(code) = t.footer.as_ref().and_then(|f| f.exit_code) {
            let _ = writeln!(o, "exit code   {code}");
        }
        // The limit replay sizes memory from, when the recording had one; the
        // host's RAM otherwise (and said to be the host's).
        let _ = match h.memory_limit_bytes {
            Some(b) => writeln!(
                o,
                "memory      limit {} MiB (the traced cgroup's; replay uses it), host {} MiB",
                b >> 20,
                h.mem_total_kib / 1024
            ),
            None => writeln!(
                o,
                "memory      no cgroup limit; host {} MiB (replay uses all of it)",
                h.mem_total_kib / 1024
            ),
        };
        if h.swap_devices.is_empty() {
            let _ = writeln!(o, "swap        none");
        }
        for d in &h.swap_devices {
            let rot = match d.rotational {
                Some(true) => "rotational",
                Some(false) => "non-rotational",
                None => "rotational unknown",
            };
            let sync = if d.synchronous == Some(true) {
                ", synchronous: faults on unshared pages read them alone, past the swap cache"
            } else {
                ""
            };
            let _ = writeln!(
                o,
                "swap        {} ({}, {} MiB, prio {}, {rot}{sync})",
                d.path.display(),
                d.kind,
                d.size_kib / 1024,
                d.priority
            );
        }
        let ra = &h.readahead;
        let _ = writeln!(
            o,
            "readahead   page-cluster {}, vma_ra_enabled {}",
            ra.page_cluster
                .map(|c| format!("{c} (max {} pages)", 1u64 << c.min(20)))
                .unwrap_or_else(|| "?".into()),
            ra.vma_ra_enabled
                .map(|v| v.to_string())
                .unwrap_or_else(|| "?".into())
        );
        let _ = writeln!(
            o,
            "\n{:<18} {:<11} ATTACH / WHY MISSING",
            "METRIC", "BACKEND"
        );
        if h.metrics.is_empty() {
            let _ = writeln!(o, "(the header lists no metrics)");
        }
        for m in &h.metrics {
            let (b, a) = match (&m.backend, &m.missing) {
                (Some(b), _) => (b.as_str(), m.attach.join(", ")),
                (None, Some(why)) => ("-", why.clone()),
                (None, None) => ("-", String::new()),
            };
            let _ = writeln!(o, "{:<18} {:<11} {a}", m.metric, b);
        }
        let _ = writeln!(o, "\n{:<18} {:>12}", "RECORDS", "COUNT");
        let kinds = &t.kinds;
        if kinds.is_empty() && t.skipped == 0 {
            let _ = writeln!(o, "(none: the trace holds only its header and footer)");
        }
        for (k, n) in kinds {
            let _ = writeln!(o, "{k:<18} {n:>12}");
        }
        if t.skipped > 0 {
            let _ = writeln!(o, "{:<18} {:>12}", "(unknown kinds)", t.skipped);
        }
        let s = &t.summary;
        let _ = writeln!(
            o,
            "\nswap-ins    {} faults ({} major, {} minor), {} with a recorded swap-out entry",
            s.faults,
            s.faults_major,
            s.faults - s.faults_major,
            s.faults_joined
        );
        let _ = writeln!(
            o,
            "reads       {} pages by I/O, {} zero pages, {} from zswap",
            s.pswpin(),
            s.swpin_zero(),
            s.fault_zswap_loads + s.other_reads_zswap
        );
        let _ = writeln!(
            o,
            "swap-outs   {} pages: {} I/O, {} zero, {} zswap, {} other",
            s.swap_out_pages, s.swap_out_io, s.swap_out_zero, s.swap_out_zswap, s.swap_out_unknown
        );
        let _ = writeln!(o, "lost        {} events", s.lost_total());
        if let Some(n) = t.footer.as_ref().map(|f| f.frees_unseen).filter(|&n| n > 0) {
            let _ = writeln!(
                o,
                "unseen      {n} page frees (mm_page_free skipped by the kernel's recursion guard)"
            );
        }
        if let Some(n) = t.coverage().and_then(|c| c.note()) {
            let _ = writeln!(o, "warning     {n}");
        }
        if let Some(f) = &t.footer {
            let _ = writeln!(
                o,
                "\n{:<20} {:>14} {:>14} {:>12}",
                "VMSTAT", "START", "END", "DELTA"
            );
            for c in SWAP_COUNTERS {
                let (Some(a), Some(b)) = (h.vmstat_start.get(*c), f.vmstat_end.get(*c)) else {
                    continue;
                };
                let _ = writeln!(o, "{c:<20} {a:>14} {b:>14} {:>12}", *b as i64 - *a as i64);
            }
        }
        for p in &t.problems {
            let _ = writeln!(o, "problem     {p}");
        }
        o
    }
}
