//! The trace file: a self-describing header, then checksummed chunks of
//! records. Layout: `docs/trace-format.md`.

mod codec;
mod file;
mod jsonl;
mod memory;
pub mod output;
pub mod pages;
#[cfg(feature = "parquet")]
pub mod parquet;
mod reader;
mod stream;
mod summary;
#[cfg(test)]
mod tests;

pub use codec::{decode_records, encode_record};
pub use file::{
    read_trace, read_trace_bytes, ChunkBody, ChunkInfo, Loaded, TraceWriter, CHUNK_RAW_MAX,
    CHUNK_RECORDS_MAX, RECORD_ZSTD_LEVEL, TRACE_MODE,
};
pub use jsonl::{
    export_jsonl, export_jsonl_file, import_jsonl, ExportStats, ImportReport, JsonlError,
};
pub use memory::{MemcgSample, MemorySource, ReplayMemory};
pub use output::{OutputError, OutputPolicy};
pub use reader::{TraceInput, TraceReader, PROBLEMS_MAX};
pub use stream::{export_jsonl_stream, StreamEnd, TraceStream};
pub use summary::{ReadCoverage, Summary};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Bumped on any incompatible change of the layout. Version 2 added chunk
/// sequence numbers; version 1 is still read.
pub const FORMAT_VERSION: u16 = 2;
pub const FORMAT_V1: u16 = 1;
pub const MAGIC: &[u8; 8] = b"SWPTRACE";

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The OS error is in the message, not also a `source()`: a chain
    /// printed whole (`{:#}`) names it once.
    #[error("{path}: {err}")]
    Io { path: String, err: std::io::Error },
    #[error("not a swaptrace trace (bad magic at offset 0)")]
    NotATrace,
    #[error("trace format version {found} is not supported (this build reads {FORMAT_V1} and {FORMAT_VERSION})")]
    Version { found: u16 },
    #[error("corrupt header at offset {offset}: {why}")]
    Header { offset: u64, why: String },
    #[error("truncated chunk at offset {offset}: {why}")]
    Truncated { offset: u64, why: String },
    #[error("corrupt chunk at offset {offset}: {why}")]
    Corrupt { offset: u64, why: String },
    #[error(transparent)]
    Output(#[from] OutputError),
}

/// A swap entry (`swp_entry_t`): device (type) and page offset on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SwapEntry {
    pub dev: u8,
    pub offset: u64,
}

/// Page sizes a trace may have: a power of two from 4 KiB (x86, the
/// smallest arm64 granule) to 1 MiB (above the 256 KiB that PowerPC 44x
/// and Hexagon configure, the largest `PAGE_SHIFT` of any arch).
pub fn page_size_ok(page_size: u64) -> bool {
    page_size.is_power_of_two() && (4096..=1 << 20).contains(&page_size)
}

/// The most pages a swap-out record may hold: a PMD folio of 64 KiB pages
/// (arm64), the largest folio the kernel swaps out whole. A record beyond
/// it cannot come from a kernel and is not replayed.
pub use swaptrace_common::MAX_FOLIO_PAGES;

impl SwapEntry {
    /// Offsets fit in `swp_entry_t` below its type bits (`SWP_TYPE_SHIFT`).
    pub const OFFSET_BITS: u32 = 58;

    /// Whether a kernel can make this entry: a swap type below
    /// `MAX_SWAPFILES` (< 2^`MAX_SWAPFILES_SHIFT` = 32) and an offset below
    /// the type bits. Replay skips any other (a damaged or edited trace).
    pub fn plausible(&self) -> bool {
        self.dev < 32 && self.offset < 1 << Self::OFFSET_BITS
    }

    /// Whether a folio of `nr` pages (0 as 1) from this entry is one a
    /// kernel could make: at most [`MAX_FOLIO_PAGES`], its last entry
    /// [`plausible`](Self::plausible) too.
    pub fn folio_fits(&self, nr: u32) -> bool {
        let last = self.offset.checked_add(u64::from(nr.max(1)) - 1);
        nr <= MAX_FOLIO_PAGES
            && last.is_some_and(|offset| {
                SwapEntry {
                    dev: self.dev,
                    offset,
                }
                .plausible()
            })
    }

    /// The entries of a folio of `nr` pages that starts at this one.
    pub fn folio(self, nr: u64) -> impl Iterator<Item = SwapEntry> {
        (0..nr).map(move |i| SwapEntry {
            dev: self.dev,
            offset: self.offset.saturating_add(i),
        })
    }

    /// Splits `swp_entry_t.val` (arch-independent: type in the top 6 bits).
    pub fn from_val(val: u64) -> SwapEntry {
        SwapEntry {
            dev: (val >> 58) as u8,
            offset: val & ((1 << 58) - 1),
        }
    }
}

/// How a swap-out was done, from the vm event counted just before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutKind {
    /// Block I/O (PSWPOUT).
    Io,
    /// Zero-filled, no I/O (SWPOUT_ZERO).
    Zero,
    /// Stored in zswap (ZSWPOUT).
    Zswap,
    /// No counter seen (e.g. a write that failed or was redirtied).
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadKind {
    Io,
    Zero,
    Zswap,
    /// Seen by the exact swap-read probe alone (before 6.13): any of the above.
    Unknown,
}

/// Where a readahead window was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RaSource {
    /// `last_readahead_pages` at the kretprobe of `swap_cluster_readahead`.
    KprobeLastReadaheadPages,
    /// `last_readahead_pages` at the fexit of `swap_cluster_readahead`.
    FexitLastReadaheadPages,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Syscall {
    Swapon,
    Swapoff,
}

/// Address spaces and tasks are numbered in the trace; kernel pointers never
/// reach the file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    /// First sight of a task.
    Task { tid: u32, pid: u32, comm: String },
    /// First sight of an address space, with the process it was first seen in.
    AddressSpace { mm: u32, pid: u32 },
    SwapOut {
        ts: u64,
        tid: u32,
        /// 0 when the owning VMA could not be resolved.
        mm: u32,
        vaddr: u64,
        entry: SwapEntry,
        nr: u32,
        how: OutKind,
    },
    SwapFault {
        ts: u64,
        dur_ns: u32,
        tid: u32,
        mm: u32,
        addr: u64,
        /// From the swap-out of the same page of the same mm, when recorded.
        entry: Option<SwapEntry>,
        major: bool,
        /// Pages read by I/O for this fault (the readahead window actually read).
        pages_read: u32,
        zero_reads: u32,
        zswap_loads: u32,
        /// A write fault (false also where the recording did not tell).
        #[serde(default)]
        write: bool,
    },
    /// Swap reads outside a fault (swapoff, GUP).
    SwapRead {
        ts: u64,
        tid: u32,
        how: ReadKind,
        nr: u32,
    },
    Reclaim {
        ts: u64,
        tid: u32,
        begin: bool,
        memcg: bool,
        nr_reclaimed: u64,
    },
    KhugepagedSwapin {
        ts: u64,
        tid: u32,
        mm: u32,
        swapped_in: u32,
        referenced: u32,
        ret: i32,
    },
    Syscall {
        ts: u64,
        tid: u32,
        call: Syscall,
        /// None at entry, the return value at exit.
        ret: Option<i64>,
    },
    /// Pages written back from zswap to the swap device; `entry` the page's
    /// swap entry where the probe read it (one page each).
    ZswapWriteback {
        ts: u64,
        tid: u32,
        nr: u32,
        #[serde(default)]
        entry: Option<SwapEntry>,
    },
    /// A readahead window chosen by `swapin_nr_pages()` for a fault on `entry`,
    /// with the readahead hits it was computed from.
    RaWindow {
        ts: u64,
        tid: u32,
        entry: SwapEntry,
        window: u32,
        hits: u32,
        source: RaSource,
    },
    /// A swap-cache lookup at swap-in: hit, and hit on a readahead page.
    CacheLookup {
        ts: u64,
        tid: u32,
        entry: SwapEntry,
        hit: bool,
        ra_hit: bool,
    },
    /// One `swapcache_free_entries()` batch: its latency and entries in order.
    FreeBatch {
        ts: u64,
        tid: u32,
        lat_ns: u32,
        entries: Vec<SwapEntry>,
    },
    /// A zswap store (accepted or rejected) or load (found or not).
    ZswapOp {
        ts: u64,
        tid: u32,
        load: bool,
        ok: bool,
    },
    /// Swap entries freed by zapping page tables (`zap_pte_range()`, at
    /// exit or munmap): the address space's MM_SWAPENTS left after a PTE
    /// table, approximate (the percpu counter's global part; None if
    /// unread); `exiting` when in `exit_mmap()`.
    Zap {
        ts: u64,
        tid: u32,
        mm: u32,
        swap_ents: Option<i64>,
        exiting: bool,
    },
    /// khugepaged scanned a PMD (`huge_memory:mm_khugepaged_scan_pmd`):
    /// referenced, empty and swapped-out (`unmapped`) PTEs, and the verdict
    /// (`status`, named by the header's `thp_scan_status`). `pmd`: the
    /// PMD's address, from the last folio the scan examined (0: unknown,
    /// older traces, or no anonymous folio seen).
    KhugepagedScan {
        ts: u64,
        tid: u32,
        mm: u32,
        referenced: u32,
        none_or_zero: u32,
        unmapped: u32,
        status: i32,
        #[serde(default, skip_serializing_if = "is_zero")]
        pmd: u64,
    },
    /// A collapse attempt ended (`huge_memory:mm_collapse_huge_page`).
    Collapse {
        ts: u64,
        tid: u32,
        mm: u32,
        isolated: bool,
        status: i32,
    },
    /// A swap-cache folio of `entry` was freed (`kmem:mm_page_free`): one
    /// written (to the device, or in newer traces stored: a fault until
    /// then was minor), or one swapped in or read ahead (its slot, if
    /// kept, is read again by the next use). `nr` pages from `entry`: a
    /// large folio freed whole (older traces: 1).
    OutFreed {
        ts: u64,
        entry: SwapEntry,
        #[serde(default = "one", skip_serializing_if = "is_one")]
        nr: u32,
    },
    /// The write of `nr` pages from `entry` (swap-cache folios reclaim
    /// wrote) ended its I/O (`block:block_rq_complete`):
    /// `folio_end_writeback()` cleared their PG_reclaim, the bit of
    /// PG_readahead, which a fault on the folio before then takes for a
    /// readahead hit (`swap_update_readahead()`).
    WriteEnd { ts: u64, entry: SwapEntry, nr: u32 },
    /// Reclaim isolated the swap-cache folio of `entry`, dirty and never
    /// mapped (read ahead from zswap), which it keeps
    /// (`shrink_folio_list()`): MGLRU's `isolate_folio()` cleared its
    /// PG_readahead where that is PG_reclaim.
    Isolated { ts: u64, entry: SwapEntry },
    /// `vm_unmapped_area()` found `[start, end)` of address space `mm`
    /// free, for a new mapping: what the range held before (pages, swap
    /// entries, VMAs) was unmapped since.
    Unmapped {
        ts: u64,
        mm: u32,
        start: u64,
        end: u64,
    },
    /// `madvise(MADV_DONTNEED, _FREE, _REMOVE)` freed the swap entries of
    /// `[start, end)` of address space `mm` (`zap_pte_range()`), and its
    /// pages; its VMAs stay. Seen where the range held swap entries.
    Zapped {
        ts: u64,
        mm: u32,
        start: u64,
        end: u64,
    },
    /// `mremap()` moved `len` bytes of address space `mm` from `from` to
    /// `to`: the pages there, their swap entries and VMAs (`move_vma()`).
    /// Comes after the [`Record::Unmapped`] of the new range.
    Moved {
        ts: u64,
        mm: u32,
        from: u64,
        to: u64,
        len: u64,
    },
    /// `madvise(MADV_WILLNEED)` of `[start, end)` of address space `mm`
    /// read `nr` pages (`how`) into the swap cache: the next swap PTEs of
    /// the range whose folio was not cached, one `read_swap_cache_async()`
    /// each (`swapin_walk_pmd_entry()`), none mapped.
    WillNeed {
        ts: u64,
        tid: u32,
        mm: u32,
        start: u64,
        end: u64,
        how: ReadKind,
        nr: u32,
    },
    /// Events the probe could not deliver (ring buffer full), per record kind.
    Lost { ts: u64, what: String, count: u64 },
    /// A VMA of address space `mm`, `[start, end)`, as a swap-out first saw
    /// it (again when its bounds changed).
    Vma {
        ts: u64,
        mm: u32,
        start: u64,
        end: u64,
    },
}

#[cfg(test)]
impl Record {
    /// A major read fault of `addr` in `mm`, one page read, for tests.
    pub(crate) fn major_fault(ts: u64, mm: u32, addr: u64) -> Record {
        Record::SwapFault {
            ts,
            dur_ns: 0,
            tid: 1,
            mm,
            addr,
            entry: None,
            major: true,
            pages_read: 1,
            zero_reads: 0,
            zswap_loads: 0,
            write: false,
        }
    }
}

impl Record {
    /// The kind's name: the serde tag above (a test checks they agree).
    pub fn kind_name(&self) -> &'static str {
        use swaptrace_common::names;
        match self {
            Record::Task { .. } => names::TASK,
            Record::AddressSpace { .. } => names::ADDRESS_SPACE,
            Record::SwapOut { .. } => names::SWAP_OUT,
            Record::SwapFault { .. } => names::SWAP_FAULT,
            Record::SwapRead { .. } => names::SWAP_READ,
            Record::Reclaim { .. } => names::RECLAIM,
            Record::KhugepagedSwapin { .. } => names::KHUGEPAGED_SWAPIN,
            Record::Syscall { .. } => names::SYSCALL,
            Record::ZswapWriteback { .. } => names::ZSWAP_WRITEBACK,
            Record::RaWindow { .. } => names::RA_WINDOW,
            Record::CacheLookup { .. } => names::CACHE_LOOKUP,
            Record::FreeBatch { .. } => names::FREE_BATCH,
            Record::ZswapOp { .. } => names::ZSWAP_OP,
            Record::Zap { .. } => names::ZAP,
            Record::KhugepagedScan { .. } => names::KHUGEPAGED_SCAN,
            Record::Collapse { .. } => names::COLLAPSE,
            Record::OutFreed { .. } => names::OUT_FREED,
            Record::Isolated { .. } => names::ISOLATED,
            Record::WriteEnd { .. } => names::WRITE_END,
            Record::Unmapped { .. } => names::UNMAPPED,
            Record::Zapped { .. } => names::ZAPPED,
            Record::Moved { .. } => names::MOVED,
            Record::WillNeed { .. } => names::WILLNEED,
            Record::Lost { .. } => names::LOST,
            Record::Vma { .. } => names::VMA,
        }
    }
}

/// How a metric was captured on the recording kernel, or why it was not.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricSource {
    pub metric: String,
    /// `fentry`, `kprobe` or `tracepoint`; None when missing.
    pub backend: Option<String>,
    pub attach: Vec<String>,
    pub missing: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Readahead {
    /// `/proc/sys/vm/page-cluster`: the cluster window cap is 2^page_cluster.
    pub page_cluster: Option<u32>,
    /// `/sys/kernel/mm/swap/vma_ra_enabled`.
    pub vma_ra_enabled: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub format_version: u16,
    pub tool_version: String,
    pub kernel_release: String,
    pub page_size: u64,
    /// CLOCK_MONOTONIC (bpf_ktime_get_ns) at the start of recording.
    pub monotonic_start_ns: u64,
    /// Unix time in ns at the same instant: wall time = this + (ts - monotonic_start_ns).
    pub realtime_start_ns: u64,
    pub mem_total_kib: u64,
    pub swap_devices: Vec<crate::lab::SwapDevice>,
    pub readahead: Readahead,
    pub metrics: Vec<MetricSource>,
    pub vmstat_start: BTreeMap<String, u64>,
    /// What was traced: a command line, a pid, a cgroup, or the whole system.
    pub target: String,
    /// Memory limit of the cgroup the traced command ran in, when one was set.
    #[serde(default)]
    pub memory_limit_bytes: Option<u64>,
    /// /sys/module/zswap/parameters at the start (enabled, max_pool_percent,
    /// accept_threshold_percent, shrinker_enabled, compressor, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub zswap: BTreeMap<String, String>,
    /// /sys/kernel/mm/transparent_hugepage settings at the start: `enabled`,
    /// `khugepaged/max_ptes_swap`, `khugepaged/scan_sleep_millisecs`, …
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub thp: BTreeMap<String, String>,
    /// Names of the khugepaged scan/collapse status codes (`enum scan_result`,
    /// from the tracepoint's format file): 1 "succeeded", 6 "exceed_swap_pte"…
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub thp_scan_status: BTreeMap<i32, String>,
    /// The recording host's name (/proc/sys/kernel/hostname), so that
    /// traces of many hosts can be told apart; absent in older traces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Whether reclaim keeps a dirty swap-cache folio never mapped (read
    /// ahead from zswap, whose load leaves it dirty): `pageout()` activates
    /// it where swap has no `swap_writepage()` (6.18; 6.12 writes it again).
    /// From /proc/kallsyms; absent in older traces: see
    /// [`Header::keeps_unmapped_dirty`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keeps_unmapped_dirty: Option<bool>,
    /// MGLRU on (`/sys/kernel/mm/lru_gen/enabled`) and PG_readahead the bit
    /// of PG_reclaim (BTF): its `isolate_folio()` clears that bit, so a
    /// readahead folio reclaim isolates and keeps is no readahead hit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lru_gen_clears_readahead: Option<bool>,
    /// Whether the recording sent [`Record::WriteEnd`] at the end of each
    /// swap write's I/O (`block:block_rq_complete` attached); absent in
    /// older traces: no.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_ends: Option<bool>,
}

/// The swap-out metric's attach point that also watched the swap cache:
/// folios written (stored ones too), swapped in or read ahead (added to an
/// LRU), and freed.
pub const OUT_FREED_ATTACH: &str =
    "vmscan:mm_vmscan_write_folio + pagemap:mm_lru_insertion + kmem:mm_page_free (stored folios too) + mmap:vm_unmapped_area + maple_tree:ma_write";

/// What the attach point of a recording that watched stored folios says.
const STORED_FREES: &str = "mm_page_free (stored folios too)";

impl Header {
    /// Whether the recording sent [`Record::OutFreed`] for device-written
    /// folios (older traces did not: their swap cache is unknown).
    pub fn records_out_freed(&self) -> bool {
        self.swap_out_attach().any(|a| a.contains("mm_page_free"))
    }

    /// Whether it sent them for folios stored to zswap or zero-filled as
    /// well (older traces watched those only when swapped in before).
    pub fn records_stored_frees(&self) -> bool {
        self.swap_out_attach().any(|a| a.contains(STORED_FREES))
    }

    /// Whether the recording kernel's reclaim keeps dirty swap-cache folios
    /// never mapped; older traces: from 6.18, where it was seen.
    pub fn keeps_unmapped_dirty(&self) -> bool {
        self.keeps_unmapped_dirty
            .unwrap_or_else(|| kernel_version(&self.kernel_release) >= (6, 18))
    }

    /// Which swap types' devices read synchronously
    /// ([`crate::lab::SwapDevice::synchronous`]), indexed by type: all of
    /// them when every device listed is; else by /proc/swaps order, which
    /// is the types' order while no type below a device was freed.
    pub fn synchronous_types(&self) -> Vec<bool> {
        let d = &self.swap_devices;
        if !d.is_empty() && d.iter().all(|d| d.synchronous == Some(true)) {
            return vec![true; 1 << 5];
        }
        d.iter().map(|d| d.synchronous == Some(true)).collect()
    }

    /// Whether MGLRU's isolation cleared the readahead flag of the folios
    /// reclaim kept: [`Header::lru_gen_clears_readahead`], on a kernel
    /// that still clears it there ([`isolation_clears_readahead_in`]).
    pub fn isolation_clears_readahead(&self) -> bool {
        self.lru_gen_clears_readahead == Some(true)
            && isolation_clears_readahead_in(&self.kernel_release)
    }

    fn swap_out_attach(&self) -> impl Iterator<Item = &String> {
        self.metrics
            .iter()
            .filter(|m| m.metric == "swap-out")
            .flat_map(|m| m.attach.iter())
    }
}

/// /sys/kernel/mm/transparent_hugepage settings: `enabled`, `defrag` and
/// `khugepaged/*` (empty without THP).
pub fn thp_settings() -> BTreeMap<String, String> {
    let base = std::path::Path::new("/sys/kernel/mm/transparent_hugepage");
    let mut out = BTreeMap::new();
    for (prefix, dir) in [
        ("", base.to_path_buf()),
        ("khugepaged/", base.join("khugepaged")),
    ] {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if e.path().is_file() {
                if let Ok(v) = std::fs::read_to_string(e.path()) {
                    let name = e.file_name().to_string_lossy().into_owned();
                    out.insert(format!("{prefix}{name}"), v.trim().to_string());
                }
            }
        }
    }
    out
}

/// The zswap module parameters of this kernel (empty without zswap).
pub fn zswap_params() -> BTreeMap<String, String> {
    let dir = std::path::Path::new("/sys/module/zswap/parameters");
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = std::fs::read_to_string(e.path()).ok()?;
            Some((
                e.file_name().to_string_lossy().into_owned(),
                v.trim().to_string(),
            ))
        })
        .collect()
}

/// The swap-related vmstat counters among the header's and footer's
/// snapshots, as `info` and `top` show them (all are kept in the trace).
pub const SWAP_COUNTERS: &[&str] = &[
    "pswpin",
    "pswpout",
    "pgmajfault",
    "swpin_zero",
    "swpout_zero",
    "swap_ra",
    "swap_ra_hit",
    "zswpin",
    "zswpout",
    "zswpwb",
    "nr_vmscan_write",
    "allocstall_normal",
    "allocstall_movable",
    "thp_collapse_alloc",
];

/// (major, minor) of a release such as "6.18.0-1-amd64"; (0, 0) if none.
/// Whether MGLRU's `isolate_folio()` clears PG_reclaim on this release:
/// 6.18 does (faults find kept readahead pages without the flag); 7.3 does
/// not (none do, and clearing it at its recorded isolations cost its
/// random run 87% of its readahead). Taken as before 7.0.
pub fn isolation_clears_readahead_in(release: &str) -> bool {
    kernel_version(release) < (7, 0)
}

pub fn kernel_version(release: &str) -> (u32, u32) {
    let mut it = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

/// Unix time in ns as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn utc(unix_ns: u64) -> String {
    let secs = unix_ns / 1_000_000_000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + (m <= 2) as i64;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

impl Header {
    /// A /proc/vmstat counter's change from this header to `footer` (end -
    /// start), when both have it.
    pub fn vmstat_delta(&self, footer: Option<&Footer>, counter: &str) -> Option<i64> {
        let a = *self.vmstat_start.get(counter)? as i64;
        let b = *footer?.vmstat_end.get(counter)? as i64;
        Some(b - a)
    }

    /// The name of the recording's host: the header's hostname, else the
    /// trace's file name without its extension (a fleet names its files
    /// after its hosts).
    pub fn host(&self, path: &std::path::Path) -> String {
        match &self.hostname {
            Some(h) if !h.is_empty() => h.clone(),
            _ => path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "unknown".into()),
        }
    }

    /// Pages the traced workload could keep in memory: its cgroup limit, or
    /// all of memory.
    pub fn memory_pages(&self) -> usize {
        let bytes = self
            .memory_limit_bytes
            .unwrap_or(self.mem_total_kib.saturating_mul(1024));
        (bytes / self.page_size.max(1)).max(1) as usize
    }
}

/// Written last, in the trailer chunk; absent when recording was cut short.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Footer {
    pub monotonic_end_ns: u64,
    pub vmstat_end: BTreeMap<String, u64>,
    /// Lost events per record kind.
    pub lost: BTreeMap<String, u64>,
    pub records: u64,
    /// Exit status of the traced command.
    pub exit_code: Option<i32>,
    /// The zswap pool (/proc/meminfo `Zswap`, `Zswapped`) once a second,
    /// while it holds anything: its size over time and compression ratio.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zswap_pool: Vec<PoolSample>,
    /// The traced process's footprint (/proc/PID/smaps_rollup) once a second.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub footprint: Vec<Footprint>,
    /// The traced memory cgroup once a second and at the end: what the
    /// replay's memory is worked from ([`ReplayMemory`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memcg: Vec<MemcgSample>,
    /// Page frees the kernel did not run `mm_page_free` for (its recursion
    /// guard: a free in an interrupt while the program ran on that CPU).
    /// Nearly all are of pages never watched; a watched folio among them
    /// stays in the replay's swap cache. Not lost events: none was made.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub frees_unseen: u64,
}

fn one() -> u32 {
    1
}

fn is_one(v: &u32) -> bool {
    *v == 1
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// A process's memory at one instant, KiB (/proc/PID/smaps_rollup).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Footprint {
    pub ts: u64,
    pub pid: u32,
    pub anonymous_kib: u64,
    pub anon_huge_kib: u64,
    pub swap_kib: u64,
}

impl Footprint {
    /// Now, for `pid` (None when it is gone or has no smaps_rollup).
    pub fn now(ts: u64, pid: u32) -> Option<Footprint> {
        let path = format!("/proc/{pid}/smaps_rollup");
        Some(Footprint {
            ts,
            pid,
            anonymous_kib: crate::lab::proc_kib(&path, "Anonymous")?,
            anon_huge_kib: crate::lab::proc_kib(&path, "AnonHugePages").unwrap_or(0),
            swap_kib: crate::lab::proc_kib(&path, "Swap").unwrap_or(0),
        })
    }
}

/// The zswap pool at one instant, system-wide.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolSample {
    pub ts: u64,
    /// Compressed size of the pool, KiB (`Zswap`).
    pub pool_kib: u64,
    /// Pages stored in it, KiB uncompressed (`Zswapped`).
    pub stored_kib: u64,
}

impl PoolSample {
    /// Now, when the kernel has zswap (None without the meminfo fields).
    pub fn now(ts: u64) -> Option<PoolSample> {
        Some(PoolSample {
            ts,
            pool_kib: crate::lab::proc_kib("/proc/meminfo", "Zswap")?,
            stored_kib: crate::lab::proc_kib("/proc/meminfo", "Zswapped")?,
        })
    }
}
