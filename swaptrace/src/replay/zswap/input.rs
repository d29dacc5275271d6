//! A trace's zswap-relevant events, one per page, and the recording
//! kernel's own counts.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::{ZswapError, ZswapPolicy};
use crate::stats::Percentiles;
use crate::trace::{pages, Footer, Header, Loaded, OutKind, Record, SwapEntry, MAX_FOLIO_PAGES};

/// Where the recording kernel found a swapped-in page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LiveIn {
    Zswap,
    Disk,
    Zero,
    /// No read counted (e.g. a major fault that waited on another task's read).
    Other,
}

/// One page-level event of the replay, in trace order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZswapEvent {
    /// One page swapped out; `how` is what the recording kernel did with it.
    Out {
        ts: u64,
        entry: SwapEntry,
        how: OutKind,
    },
    /// A swap-in that read the page (not a swap-cache hit), with the
    /// readahead window read around it (`swap_cluster_readahead()`'s
    /// aligned block of `window` offsets; 1 = the page alone).
    In {
        ts: u64,
        entry: SwapEntry,
        live: LiveIn,
        window: u32,
        /// A write fault: `should_try_to_free_swap()` frees the slot.
        write: bool,
    },
    /// A page read ahead by VMA readahead (`swap_vma_readahead()`) around
    /// the fault before it: read through zswap_load() if it has a slot.
    Ahead { ts: u64, entry: SwapEntry },
    /// A minor fault without reads: the page was still in the swap cache.
    CacheHit {
        ts: u64,
        entry: SwapEntry,
        write: bool,
    },
    /// Direct or memcg reclaim began (`begin`) or ended.
    Reclaim { ts: u64, begin: bool },
    /// The kernel freed the swap-cache folio of `entry` (`out_freed`).
    Freed { ts: u64, entry: SwapEntry },
    /// The recording kernel wrote `nr` zswap entries back (`shrink_memcg_cb()`).
    Writeback { ts: u64, nr: u32 },
}

impl ZswapEvent {
    pub fn ts(&self) -> u64 {
        match *self {
            ZswapEvent::Out { ts, .. }
            | ZswapEvent::In { ts, .. }
            | ZswapEvent::Ahead { ts, .. }
            | ZswapEvent::CacheHit { ts, .. }
            | ZswapEvent::Reclaim { ts, .. }
            | ZswapEvent::Freed { ts, .. }
            | ZswapEvent::Writeback { ts, .. } => ts,
        }
    }

    pub fn is_writeback(&self) -> bool {
        matches!(self, ZswapEvent::Writeback { .. })
    }
}

/// The recording kernel's own counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ZswapLive {
    /// Swap-out pages, and how they went.
    pub swap_outs: u64,
    pub zswap_stores: u64,
    pub disk_swap_outs: u64,
    pub zero_swap_outs: u64,
    pub unknown_swap_outs: u64,
    pub swap_faults: u64,
    pub faults_without_entry: u64,
    pub cache_hits: u64,
    /// Sum of `zswap_loads` over faults.
    pub zswap_loads: u64,
    /// Faults that read from disk and loaded nothing from zswap.
    pub disk_swapins: u64,
    pub disk_pages_read: u64,
    /// Sum of `ZswapWriteback.nr`.
    pub writebacks: u64,
    /// `ZswapOp` records (exact probes only).
    pub zswap_ops: u64,
    pub store_ok: u64,
    pub store_rejected: u64,
    pub load_found: u64,
    pub load_missed: u64,
    pub reclaim_episodes: u64,
    pub lost: u64,
    pub duration_s: f64,
    /// vmstat deltas over the recording, when header and footer have them.
    pub zswpout: Option<u64>,
    pub zswpin: Option<u64>,
    pub zswpwb: Option<u64>,
    pub pswpin: Option<u64>,
    pub pswpout: Option<u64>,
}

/// A trace's zswap-relevant events, one per page.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ZswapInput {
    pub events: Vec<ZswapEvent>,
    pub page_size: u64,
    /// The memory figure the pool limit is a share of: all of RAM (as
    /// `totalram_pages()`), in pages; None for a bare record slice.
    pub memory_pages: Option<u64>,
    /// Distinct swap entries swapped out: stands in for memory when
    /// `memory_pages` is unknown.
    pub distinct_out_pages: u64,
    /// Whether any `Reclaim { begin: true }` was recorded.
    pub has_reclaim: bool,
    /// Whether any [`ZswapEvent::Writeback`] was recorded.
    pub has_writebacks: bool,
    /// The recording kernel's zswap policy, when the header tells.
    pub kernel_policy: Option<ZswapPolicy>,
    /// Pages read in while a swapped-in page stays resident, as recorded
    /// ([`EventBuilder::resident_pages`]).
    pub resident_pages: Option<u64>,
    /// Swap-outs of more than [`MAX_FOLIO_PAGES`] pages, and swap-outs and
    /// faults with an entry not [`SwapEntry::plausible`]: no kernel makes
    /// them, so they are skipped (a fault's live counts still have it).
    pub bad_records: u64,
    pub live: ZswapLive,
}

impl ZswapInput {
    /// Events from `records`; `page_size` 0 is taken as 4096.
    pub fn from_records(records: &[Record], page_size: u64) -> Result<ZswapInput, ZswapError> {
        let frees = records.iter().any(|r| matches!(r, Record::OutFreed { .. }));
        Self::read_ahead_by(records, page_size, false, frees)
    }

    /// [`from_records`](Self::from_records), reading ahead by virtual
    /// address (`vma`, as `swap_vma_readahead()`) or by swap offset;
    /// `frees`: the records tell when pages left memory.
    pub fn read_ahead_by(
        records: &[Record],
        page_size: u64,
        vma: bool,
        frees: bool,
    ) -> Result<ZswapInput, ZswapError> {
        let mut b = EventBuilder::new(page_size, true)
            .vma_readahead(vma)
            .measure_residency(frees);
        let mut events = Vec::new();
        for r in records {
            b.convert(r, &mut events);
        }
        let distinct_out_pages = b.distinct_out_pages();
        if distinct_out_pages == 0 {
            return Err(ZswapError::NothingToReplay);
        }
        Ok(ZswapInput {
            events,
            page_size: b.page_size,
            memory_pages: None,
            distinct_out_pages,
            has_reclaim: b.has_reclaim,
            has_writebacks: b.has_writebacks,
            kernel_policy: None,
            resident_pages: b.resident_pages(),
            bad_records: b.bad_records,
            live: b.live(),
        })
    }

    /// Events of a loaded trace, with its memory figure and vmstat deltas.
    pub fn from_loaded(t: &Loaded) -> Result<ZswapInput, ZswapError> {
        let vma = uses_vma_readahead(&t.header);
        let mut input = ZswapInput::read_ahead_by(
            &t.records,
            t.header.page_size,
            vma,
            t.header.records_out_freed(),
        )?;
        input.memory_pages = recorded(&t.header, t.footer.as_ref(), &mut input.live);
        input.kernel_policy = kernel_policy(&t.header);
        Ok(input)
    }

    /// Pages of memory the pool limit is a percentage of.
    pub fn memory_figure(&self) -> u64 {
        self.memory_pages.unwrap_or(self.distinct_out_pages)
    }
}

/// Whether the recording kernel read ahead by VMA (`swap_use_vma_readahead()`).
pub(super) fn uses_vma_readahead(h: &Header) -> bool {
    crate::replay::readahead::kernel_policy(h) == "vma"
}

/// The recording kernel's zswap policy: none (no zswap or no header
/// release), `no-shrinker` with the shrinker off or before 6.8, `shrinker`
/// to 6.11, `disk-swapin-tracking` from 6.12.
pub fn kernel_policy(h: &Header) -> Option<ZswapPolicy> {
    let (major, minor) = crate::trace::kernel_version(&h.kernel_release);
    if major == 0 || h.zswap.get("enabled").is_some_and(|v| v.trim() != "Y") {
        return None;
    }
    let on = h
        .zswap
        .get("shrinker_enabled")
        .is_some_and(|v| v.trim() == "Y");
    Some(match (major, minor) {
        _ if !on => ZswapPolicy::NoShrinker,
        (0..=5, _) | (6, 0..=7) => ZswapPolicy::NoShrinker,
        (6, 8..=11) => ZswapPolicy::Shrinker,
        _ => ZswapPolicy::DiskSwapinTracking,
    })
}

/// The memory figure of a recording (None: unknown), and its vmstat
/// deltas put in `live`.
pub(super) fn recorded(h: &Header, f: Option<&Footer>, live: &mut ZswapLive) -> Option<u64> {
    let d = |k: &str| h.vmstat_delta(f, k).map(|d| d.max(0) as u64);
    live.zswpout = d("zswpout");
    live.zswpin = d("zswpin");
    live.zswpwb = d("zswpwb");
    live.pswpin = d("pswpin");
    live.pswpout = d("pswpout");
    // `zswap_max_pages()`: max_pool_percent of all of RAM
    // (`totalram_pages()`), whatever the cgroup's limit.
    (h.mem_total_kib > 0).then(|| h.mem_total_kib * 1024 / h.page_size.max(1))
}

/// Records to events, one record at a time: the one conversion of
/// [`ZswapInput::from_records`] and of the streamed replay, with the live
/// counts and what the replay needs of the whole trace.
pub(super) struct EventBuilder {
    page_size: u64,
    live: ZswapLive,
    pub(super) bad_records: u64,
    pub(super) has_reclaim: bool,
    pub(super) has_writebacks: bool,
    /// Distinct entries swapped out; None: not kept (the memory figure is known).
    distinct: Option<HashSet<SwapEntry>>,
    /// Readahead windows recorded for a fault still to come.
    windows: HashMap<SwapEntry, u32>,
    /// VMA readahead (the recording kernel's): the swap PTEs, (mm, page)
    /// to entry, and each address space's last fault page. None: cluster
    /// readahead, an aligned block of offsets around the fault.
    vma: Option<VmaPages>,
    /// How long a swapped-in page stays resident; None: not measured (the
    /// replay pass of a streamed trace, which has it from the first).
    residency: Option<Residency>,
    frees: bool,
    /// Earliest and latest time of writebacks and zswap ops, and of events.
    others: (u64, u64),
    events: (u64, u64),
}

/// `e` onto `out`, its time into `span`.
fn emit(span: &mut (u64, u64), out: &mut Vec<ZswapEvent>, e: ZswapEvent) {
    *span = (span.0.min(e.ts()), span.1.max(e.ts()));
    out.push(e);
}

impl EventBuilder {
    /// `page_size` 0 is taken as 4096; `distinct`: count distinct entries.
    pub(super) fn new(page_size: u64, distinct: bool) -> EventBuilder {
        EventBuilder {
            page_size: if page_size == 0 { 4096 } else { page_size },
            live: ZswapLive::default(),
            bad_records: 0,
            has_reclaim: false,
            has_writebacks: false,
            distinct: distinct.then(HashSet::new),
            windows: HashMap::new(),
            vma: None,
            residency: None,
            frees: false,
            others: (u64::MAX, 0),
            events: (u64::MAX, 0),
        }
    }

    /// Reads ahead as `swap_vma_readahead()` does: by virtual address.
    pub(super) fn vma_readahead(mut self, on: bool) -> EventBuilder {
        self.vma = on.then(VmaPages::default);
        self
    }

    /// Measures [`resident_pages`](Self::resident_pages), unless the trace
    /// tells when pages left memory (`frees`: [`ZswapEvent::Freed`]).
    pub(super) fn measure_residency(mut self, frees: bool) -> EventBuilder {
        self.residency = (!frees).then(Residency::default);
        self.follow_frees(frees)
    }

    /// Sends [`ZswapEvent::Freed`] for the trace's `out_freed` records.
    pub(super) fn follow_frees(mut self, on: bool) -> EventBuilder {
        self.frees = on;
        self
    }

    /// The median number of pages read in between a page's swap-in and
    /// its next swap-out: how long a swapped-in page stays resident (None
    /// without such a pair, or unmeasured). A page read from disk keeps its
    /// slot, so reclaim drops it clean, unrecorded: this is when.
    pub(super) fn resident_pages(&self) -> Option<u64> {
        self.residency.as_ref()?.stays.at(50.0)
    }

    /// Distinct entries swapped out (0 when not kept).
    pub(super) fn distinct_out_pages(&self) -> u64 {
        self.distinct.as_ref().map_or(0, |d| d.len() as u64)
    }

    /// Whether a swap-out was replayable: [`ZswapError::NothingToReplay`] if not.
    pub(super) fn has_swap_outs(&self) -> bool {
        self.live.swap_outs > 0
    }

    /// The earliest and latest event (0, 0 without events).
    pub(super) fn span(&self) -> (u64, u64) {
        if self.events.0 > self.events.1 {
            (0, 0)
        } else {
            self.events
        }
    }

    /// The live counts so far, with the duration they span.
    pub(super) fn live(&self) -> ZswapLive {
        let mut live = self.live.clone();
        let t_min = self.others.0.min(self.events.0);
        let t_max = self.others.1.max(self.events.1);
        if t_max > t_min {
            live.duration_s = (t_max - t_min) as f64 / 1e9;
        }
        live
    }

    /// One record: its events onto `out` (at most [`MAX_FOLIO_PAGES`]).
    pub(super) fn convert(&mut self, r: &Record, out: &mut Vec<ZswapEvent>) {
        let live = &mut self.live;
        match r {
            Record::SwapOut {
                ts,
                entry,
                nr,
                how,
                mm,
                vaddr,
                ..
            } => {
                // nr 0 as 1; at most a PMD folio of 64 KiB pages.
                let nr = (*nr).max(1) as u64;
                let last = entry.offset.checked_add(nr - 1).map(|offset| SwapEntry {
                    dev: entry.dev,
                    offset,
                });
                if nr > MAX_FOLIO_PAGES as u64 || !last.is_some_and(|l| l.plausible()) {
                    self.bad_records += 1;
                    return;
                }
                live.swap_outs += nr;
                *match how {
                    OutKind::Zswap => &mut live.zswap_stores,
                    OutKind::Io => &mut live.disk_swap_outs,
                    OutKind::Zero => &mut live.zero_swap_outs,
                    OutKind::Unknown => &mut live.unknown_swap_outs,
                } += nr;
                for (i, e) in entry.folio(nr).enumerate() {
                    let i = i as u64;
                    if let Some(d) = &mut self.distinct {
                        d.insert(e);
                    }
                    if let Some(r) = &mut self.residency {
                        if let Some(at) = r.fault_at.remove(&e) {
                            r.stays.add(r.read_in - at);
                        }
                    }
                    if let Some(v) = self.vma.as_mut().filter(|_| *mm != 0) {
                        let vpage = (vaddr / self.page_size).wrapping_add(i);
                        v.ptes.insert((*mm, vpage), e);
                    }
                    let ev = ZswapEvent::Out {
                        ts: *ts,
                        entry: e,
                        how: *how,
                    };
                    emit(&mut self.events, out, ev);
                }
            }
            Record::SwapFault {
                ts,
                entry,
                major,
                pages_read,
                zero_reads,
                zswap_loads,
                mm,
                addr,
                write,
                ..
            } => {
                live.swap_faults += 1;
                live.zswap_loads += *zswap_loads as u64;
                live.disk_pages_read += *pages_read as u64;
                if *pages_read > 0 && *zswap_loads == 0 {
                    live.disk_swapins += 1;
                }
                let no_reads = *pages_read == 0 && *zero_reads == 0 && *zswap_loads == 0;
                if !*major && no_reads {
                    live.cache_hits += 1;
                }
                let Some(entry) = *entry else {
                    live.faults_without_entry += 1;
                    return;
                };
                if !entry.plausible() {
                    self.bad_records += 1;
                    return;
                }
                // The window: recorded by the exact probes, else the
                // pages this fault read, rounded up to a power of two.
                let reads = pages_read + zero_reads + zswap_loads;
                if let Some(r) = &mut self.residency {
                    r.read_in += reads as u64;
                    r.fault_at.insert(entry, r.read_in);
                }
                let window = self
                    .windows
                    .remove(&entry)
                    .unwrap_or_else(|| reads.max(1).next_power_of_two());
                let vpage = addr / self.page_size;
                if let Some(v) = &mut self.vma {
                    v.ptes.remove(&(*mm, vpage));
                }
                let ev = if !*major && no_reads {
                    ZswapEvent::CacheHit {
                        ts: *ts,
                        entry,
                        write: *write,
                    }
                } else {
                    let live = if *zswap_loads > 0 {
                        LiveIn::Zswap
                    } else if *pages_read > 0 {
                        LiveIn::Disk
                    } else if *zero_reads > 0 {
                        LiveIn::Zero
                    } else {
                        LiveIn::Other
                    };
                    ZswapEvent::In {
                        ts: *ts,
                        entry,
                        live,
                        window: if self.vma.is_some() { 1 } else { window },
                        write: *write,
                    }
                };
                emit(&mut self.events, out, ev);
                if let Some(v) = &mut self.vma {
                    if matches!(ev, ZswapEvent::In { .. }) {
                        v.ahead(*ts, *mm, vpage, window, &mut self.events, out);
                    }
                    v.last.insert(*mm, vpage);
                }
            }
            Record::RaWindow { entry, window, .. } => {
                self.windows.insert(*entry, *window);
            }
            Record::Reclaim { ts, begin, .. } => {
                if *begin {
                    live.reclaim_episodes += 1;
                    self.has_reclaim = true;
                }
                let ev = ZswapEvent::Reclaim {
                    ts: *ts,
                    begin: *begin,
                };
                emit(&mut self.events, out, ev);
            }
            Record::ZswapWriteback { ts, nr, .. } => {
                live.writebacks += *nr as u64;
                self.others = (self.others.0.min(*ts), self.others.1.max(*ts));
                if *nr > 0 {
                    self.has_writebacks = true;
                    out.push(ZswapEvent::Writeback { ts: *ts, nr: *nr });
                }
            }
            Record::ZswapOp { ts, load, ok, .. } => {
                live.zswap_ops += 1;
                *match (*load, *ok) {
                    (false, true) => &mut live.store_ok,
                    (false, false) => &mut live.store_rejected,
                    (true, true) => &mut live.load_found,
                    (true, false) => &mut live.load_missed,
                } += 1;
                self.others = (self.others.0.min(*ts), self.others.1.max(*ts));
            }
            Record::Lost { count, .. } => live.lost += count,
            Record::OutFreed { ts, entry, nr } if self.frees && entry.folio_fits(*nr) => {
                // A large folio freed whole frees every page's entry.
                for entry in entry.folio(u64::from((*nr).max(1))) {
                    let ev = ZswapEvent::Freed { ts: *ts, entry };
                    emit(&mut self.events, out, ev);
                }
            }
            Record::Unmapped { mm, start, end, .. } | Record::Zapped { mm, start, end, .. } => {
                if let Some(v) = &mut self.vma {
                    v.unmapped(*mm, start / self.page_size, end.div_ceil(self.page_size));
                }
            }
            Record::Moved {
                mm, from, to, len, ..
            } => {
                if let Some(v) = &mut self.vma {
                    let p = self.page_size;
                    v.moved(*mm, from / p, to / p, len.div_ceil(p));
                }
            }
            _ => {}
        }
    }
}

/// Pages read in by faults so far, at each swapped-in entry's fault, and
/// pages read in between a fault and the entry's next swap-out.
#[derive(Default)]
pub(super) struct Residency {
    read_in: u64,
    fault_at: HashMap<SwapEntry, u64>,
    stays: Percentiles,
}

/// What VMA readahead needs of the trace: the swap PTEs of each address
/// space (from swap-outs, dropped at their fault) and its last fault.
#[derive(Default)]
pub(super) struct VmaPages {
    ptes: HashMap<(u32, u64), SwapEntry>,
    last: HashMap<u32, u64>,
}

impl VmaPages {
    /// Pages `[start, end)` of `mm` were unmapped: their swap PTEs are gone.
    fn unmapped(&mut self, mm: u32, start: u64, end: u64) {
        pages::take_range(&mut self.ptes, mm, start, end);
    }

    /// `mremap()` moved pages `[from, from + len)` of `mm` to `to`.
    fn moved(&mut self, mm: u32, from: u64, to: u64, len: u64) {
        pages::move_range(&mut self.ptes, mm, from, to, len);
    }

    /// `swap_vma_readahead()`: the swap PTEs of the window `swap_vma_ra_win()`
    /// places around page `vpage` (cut to its PMD; VMA bounds unknown here),
    /// the fault's own page excepted.
    fn ahead(
        &self,
        ts: u64,
        mm: u32,
        vpage: u64,
        window: u32,
        span: &mut (u64, u64),
        out: &mut Vec<ZswapEvent>,
    ) {
        if window <= 1 || mm == 0 {
            return;
        }
        let prev = self.last.get(&mm).copied().unwrap_or(0);
        let (start, end) = crate::replay::readahead::ra_range(vpage, prev, window, (0, u64::MAX));
        for p in start..end {
            if p == vpage {
                continue;
            }
            if let Some(&entry) = self.ptes.get(&(mm, p)) {
                emit(span, out, ZswapEvent::Ahead { ts, entry });
            }
        }
    }
}
