//! Turning probe events into trace records: address spaces and tasks are
//! numbered, kernel pointers dropped, and each swap-in fault is joined to the
//! swap-out of the same page of the same address space to learn its entry.

#[cfg(feature = "live")]
mod demo;
#[cfg(feature = "live")]
mod live;
mod metrics_server;
#[cfg(feature = "live")]
mod pagemap;
pub mod prometheus;
#[cfg(feature = "live")]
mod ring;
mod swapped;
#[cfg(feature = "live")]
mod swapwatch;
#[cfg(feature = "live")]
mod top;

#[cfg(feature = "live")]
pub use demo::{run_demo, workload_command, DemoOptions};
#[cfg(feature = "live")]
pub use live::{describe_exit, monotonic_ns, record, RecordError, RecordOptions, Recorded};
pub use metrics_server::{respond, MetricsServer, ServeError};
#[cfg(feature = "live")]
pub use top::{top, Interval, TopOptions, TOP_SECTIONS};

use crate::replay::readahead::MixHasher;
/// [`Recorder::summary`]'s type, at home in `trace`.
use crate::trace::{pages, Summary};
use crate::trace::{OutKind, RaSource, ReadKind, Record, SwapEntry, Syscall};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::BuildHasherDefault;
use swaptrace_common::{
    exact, exact2, flag, kind, read_kind, zap_range, FreeBatchEvent, RawEvent, UNMAPPED_CLEARED,
};

/// Most entries taken from one range free: a swap cluster (SWAPFILE_CLUSTER,
/// 512) twice over, against a corrupt count.
const RANGE_MAX: u32 = 1024;

/// The event-to-record state machine.
#[derive(Default)]
pub struct Recorder {
    mms: HashMap<u64, u32>,
    tasks: HashSet<u32>,
    /// (mm, virtual page) -> entry of its last recorded swap-out.
    slots: HashMap<(u32, u64), Held>,
    page_shift: u32,
    /// (mm, VMA start) -> its end, as last recorded.
    vmas: BTreeMap<(u32, u64), u64>,
    /// Kernel mm -> the mm it was forked from, and back.
    forked_from: HashMap<u64, u64>,
    forks: HashMap<u64, Vec<u64>>,
    /// mm -> its last `mremap()` move: (ts, from, to, len).
    moves: HashMap<u32, (u64, u64, u64, u64)>,
    /// mm -> the byte range its swap-outs, faults and VMAs recorded span:
    /// what a replay may hold of it.
    extent: HashMap<u32, (u64, u64)>,
    /// mm -> the range of its last zap record (a call zaps a PTE table at
    /// a time, each an event), until a swap-out or fault there.
    zapped: HashMap<u32, (u32, u64, u64)>,
    /// Slots of pages a read fault mapped, which keeps the slot: reclaim
    /// dropping the clean folio ([`Record::OutFreed`]) puts the entry back
    /// in the page table without a write. Followed from the first GUP
    /// fault on (a map insert per fault that GUP-free programs need not
    /// pay): before it, such pages are not taken for swapped out.
    kept: HashMap<SwapEntry, (u32, u64), Mix>,
    gup_seen: bool,
    /// mm -> how many times it exited (an mm's number is its kernel
    /// pointer's, which a new process may take).
    lives: HashMap<u32, u32, Mix>,
    /// tid -> its last GUP fault: (mm, range's first page, end, the page).
    gup: HashMap<u32, (u32, u64, u64, u64)>,
    /// The pages of [`Recorder::slots`] swapped out in their mm's life,
    /// by region.
    swapped: swapped::Regions,
    /// Kernel mm -> a process of it (a fault's, a call's).
    pids: HashMap<u64, u32, Mix>,
    /// The last [`kind::OUT_ALT`]: (kernel mm, entry, the other address).
    alt: Option<(u64, u64, u64)>,
    /// Reads the page table where a swap-out's page offset has two VMAs.
    ptes: Option<Box<dyn PteReader>>,
    /// Swap-outs with a second VMA, and those whose page table put the page
    /// there.
    pub alt_outs: (u64, u64),
    pub summary: Summary,
}

/// A process's page table, as `/proc/PID/pagemap` shows it.
pub trait PteReader: Send {
    /// The swap entry the PTE of `vaddr` in process `pid` holds: None where
    /// it holds none, or the table cannot be read (the process is gone).
    fn swap_entry(&mut self, pid: u32, vaddr: u64) -> Option<SwapEntry>;
}

type Mix = BuildHasherDefault<MixHasher>;

/// A page's last recorded swap entry.
#[derive(Clone, Copy, Debug)]
struct Held {
    entry: SwapEntry,
    /// Its PTE holds the entry (swapped out, not faulted, zapped or
    /// unmapped since): where a GUP fault ([`exact2::GUP`]) of a range may
    /// be. In the `life` of its mm.
    swapped: bool,
    life: u32,
}

impl Held {
    /// Swapped out in its mm's life `life` (the current one).
    fn out(&self, life: u32) -> bool {
        self.swapped && self.life == life
    }
}

/// How long after a move's start a swap-out may still name the old VMA.
/// The move is sent as `mremap()` begins; until it has moved the page tables
/// and unmapped the old VMA, reclaim may find that VMA on the anon_vma and
/// name the page by its old address (a 256 MiB move took about 1 ms).
const MOVE_WINDOW_NS: u64 = 1_000_000_000;

/// How many forks up a swap-in looks for the swap-out of a shared page.
const FORK_DEPTH: usize = 8;

fn comm(c: &[u8; 16]) -> String {
    let end = c.iter().position(|&b| b == 0).unwrap_or(c.len());
    String::from_utf8_lossy(&c[..end]).into_owned()
}

impl Recorder {
    pub fn new(page_size: u64) -> Recorder {
        Recorder {
            page_shift: page_size.max(1).trailing_zeros(),
            ..Recorder::default()
        }
    }

    /// Where a swap-out's page offset has two VMAs ([`kind::OUT_ALT`]),
    /// `ptes` tells which one maps the page.
    pub fn set_pte_reader(&mut self, ptes: Box<dyn PteReader>) {
        self.ptes = Some(ptes);
    }

    /// The address of `ev`'s page: the second VMA's, `alt`, where the page
    /// table holds the entry there and not at the first's
    /// (`page_vma_mapped_walk()` of the kernel's rmap walk).
    fn out_address(&mut self, ev: &RawEvent, alt: u64) -> Option<u64> {
        self.alt_outs.0 += 1;
        let pid = *self.pids.get(&ev.mm)?;
        let ptes = self.ptes.as_mut()?;
        let entry = SwapEntry::from_val(ev.entry);
        let at = |p: &mut Box<dyn PteReader>, a| p.swap_entry(pid, a) == Some(entry);
        if at(ptes, ev.addr) || !at(ptes, alt) {
            return None;
        }
        self.alt_outs.1 += 1;
        Some(alt)
    }

    fn mm(&mut self, ptr: u64, pid: u32, out: &mut Vec<Record>) -> u32 {
        if ptr == 0 {
            return 0;
        }
        if pid != 0 && self.pids.get(&ptr) != Some(&pid) {
            self.pids.insert(ptr, pid);
        }
        let next = self.mms.len() as u32 + 1;
        *self.mms.entry(ptr).or_insert_with(|| {
            out.push(Record::AddressSpace { mm: next, pid });
            next
        })
    }

    /// The entry of a page shared through fork (copy-on-write): the
    /// swap-out was resolved to another address space of the family (the
    /// first VMA on the anon_vma), an ancestor's or a child's.
    fn shared_entry(&self, mm: u64, vpage: u64) -> Option<SwapEntry> {
        let at = |m: &u64| {
            let id = *self.mms.get(m)?;
            self.slots.get(&(id, vpage)).map(|h| h.entry)
        };
        let mut m = mm;
        for _ in 0..FORK_DEPTH {
            let Some(p) = self.forked_from.get(&m) else {
                break;
            };
            if let Some(e) = at(p) {
                return Some(e);
            }
            m = *p;
        }
        self.forks.get(&mm)?.iter().find_map(at)
    }

    /// `mremap()` moved `[from, from + len)` to `to`: the joins of its pages
    /// move with them. Its VMAs are forgotten, so that the next swap-out
    /// there records the moved VMA's bounds.
    fn moved(&mut self, mm: u32, from: u64, to: u64, len: u64) {
        let shift = self.page_shift;
        let (from_p, to_p) = (from >> shift, to >> shift);
        let life = self.life(mm);
        let taken = pages::take_range(
            &mut self.slots,
            mm,
            from_p,
            from_p.saturating_add(len >> shift),
        );
        for (p, h) in &taken {
            if h.out(life) {
                self.swapped.remove(mm, *p);
            }
        }
        for (p, h) in taken {
            let q = p - from_p + to_p;
            if self.slots.insert((mm, q), h).is_some_and(|o| o.out(life)) {
                self.swapped.remove(mm, q);
            }
            if h.out(life) {
                self.swapped.add(mm, q);
            }
        }
        self.forget_vmas(mm, from, from + len);
    }

    /// Bytes `[start, end)` of `mm` no longer hold swap entries (zapped,
    /// unmapped). Only the regions that hold swapped-out pages are visited.
    fn unswap(&mut self, mm: u32, start: u64, end: u64) {
        let (start, end) = self.held(mm, start, end);
        let (first, end) = (start >> self.page_shift, end.div_ceil(1 << self.page_shift));
        let life = self.life(mm);
        let spans: Vec<_> = self.swapped.spans(mm, first, end).collect();
        for p in spans.into_iter().flat_map(|(a, b)| a..b) {
            self.mapped(mm, p, life);
        }
    }

    /// Page `page` of `mm` holds its swap entry no more (faulted, zapped,
    /// unmapped): the entry it was joined to, if any.
    fn mapped(&mut self, mm: u32, page: u64, life: u32) -> Option<SwapEntry> {
        let h = self.slots.get_mut(&(mm, page))?;
        if h.out(life) {
            self.swapped.remove(mm, page);
        }
        h.swapped = false;
        Some(h.entry)
    }

    /// `mm` exited (`exit_mmap()`): nothing it held is swapped out.
    fn exited(&mut self, mm: u32) {
        *self.lives.entry(mm).or_default() += 1;
        self.swapped.clear(mm);
    }

    fn life(&self, mm: u32) -> u32 {
        self.lives.get(&mm).copied().unwrap_or(0)
    }

    /// The swap-cache folio of `entry` freed: a page that a read fault
    /// mapped, keeping the slot, went back to it (reclaim dropped the clean
    /// folio): its PTE holds the entry again.
    fn freed(&mut self, entry: SwapEntry, nr: u32) {
        if self.kept.is_empty() {
            return;
        }
        for e in entry.folio(nr.max(1) as u64) {
            if let Some(page) = self.kept.remove(&e) {
                let life = self.life(page.0);
                if let Some(h) = self.slots.get_mut(&page).filter(|h| h.entry == e) {
                    let was = h.out(life);
                    h.swapped = true;
                    if !was && h.out(life) {
                        self.swapped.add(page.0, page.1);
                    }
                }
            }
        }
    }

    /// A fault mapped `(mm, page)`: a read fault keeps its slot `entry`
    /// (until reclaim drops the clean folio: [`Recorder::freed`]), a write
    /// fault frees it.
    fn kept(&mut self, mm: u32, page: u64, entry: Option<SwapEntry>, write: bool) {
        if !self.gup_seen {
            return;
        }
        match entry {
            Some(e) if !write => {
                self.kept.insert(e, (mm, page));
            }
            Some(e) if self.kept.get(&e) == Some(&(mm, page)) => {
                self.kept.remove(&e);
            }
            _ => {}
        }
    }

    /// The page a GUP fault of `tid` swapped in: GUP faults its call's
    /// range `[first, end)` in ascending order, so the first page still
    /// swapped out after the task's last one (from the range's start for
    /// a new call). None if the trace holds no such page.
    fn gup_page(&mut self, tid: u32, mm: u32, first: u64, end: u64) -> Option<u64> {
        let from = match self.gup.get(&tid) {
            Some(&(m, f, e, last)) if (m, f, e) == (mm, first, end) => last + 1,
            _ => first,
        };
        // Swapped out in this life of the mm, region by region.
        let life = self.life(mm);
        let next = |lo: u64, hi: u64| {
            let mut pages = self.swapped.spans(mm, lo, hi).flat_map(|(a, b)| a..b);
            pages.find(|&p| self.slots.get(&(mm, p)).is_some_and(|h| h.out(life)))
        };
        // Nothing left after the last one: a new call over the same range.
        let page = next(from.max(first), end).or_else(|| next(first, from.min(end)))?;
        self.gup.insert(tid, (mm, first, end, page));
        Some(page)
    }

    /// Forgets the VMAs recorded in `[start, end)` of `mm`: the next
    /// swap-out there records its VMA's bounds again, even if the same.
    fn forget_vmas(&mut self, mm: u32, start: u64, end: u64) {
        let gone: Vec<_> = self
            .vmas
            .range((mm, start)..(mm, end))
            .map(|(&k, _)| k)
            .collect();
        for k in gone {
            self.vmas.remove(&k);
        }
    }

    /// Where a swap-out at `addr` of `mm` at `ts`, named through the VMA
    /// starting at `vma_start`, is: named through the old VMA of the last
    /// move of `mm` (about then), it is at its new address; true if so.
    /// A page the moved VMA took in place since (it grew into the old
    /// range) is named through that VMA, which starts elsewhere.
    fn moved_since(&self, mm: u32, ts: u64, addr: u64, vma_start: Option<u64>) -> (u64, bool) {
        match (self.moves.get(&mm), vma_start) {
            (Some(&(at, from, to, len)), Some(start))
                if ts.abs_diff(at) < MOVE_WINDOW_NS
                    && start.wrapping_sub(from) < len
                    && addr.wrapping_sub(from) < len =>
            {
                (addr - from + to, true)
            }
            _ => (addr, false),
        }
    }

    /// `[start, end)` of `mm` may hold what the trace recorded.
    fn spans(&mut self, mm: u32, start: u64, end: u64) {
        let e = self.extent.entry(mm).or_insert((start, end));
        *e = (e.0.min(start), e.1.max(end));
        // Every swap-out and fault passes here: no hashing while no zap is.
        if !self.zapped.is_empty() {
            self.zapped.remove(&mm);
        }
    }

    /// `[start, end)` of `mm` cut to what the trace may hold of it.
    fn held(&self, mm: u32, start: u64, end: u64) -> (u64, u64) {
        let (lo, hi) = self.extent.get(&mm).copied().unwrap_or_default();
        (start.max(lo), end.min(hi))
    }

    /// `[start, end)` of `mm` unmapped: `cleared` from the maple tree, else
    /// found free by a new mapping.
    fn unmapped(
        &mut self,
        ts: u64,
        mm: u32,
        start: u64,
        end: u64,
        cleared: bool,
    ) -> Option<Record> {
        let (mut start, mut end) = (start, end);
        // A new mapping in a moved-from range: its swap-outs are its own.
        // Not so the old range cleared after its move.
        if cleared {
            // The maple tree widens a cleared range over the empty ones
            // around it (terabytes): only what the trace may hold counts.
            (start, end) = self.held(mm, start, end);
        } else if self
            .moves
            .get(&mm)
            .is_some_and(|&(_, from, _, len)| from < end && start < from + len)
        {
            self.moves.remove(&mm);
        }
        // The VMAs recorded there are gone, and their swap entries.
        (start < end).then(|| {
            self.unswap(mm, start, end);
            self.forget_vmas(mm, start, end);
            Record::Unmapped { ts, mm, start, end }
        })
    }

    /// The range a zap's system call named ([`zap_range`]): `munmap()` and
    /// `mmap(MAP_FIXED)` as a cleared range, `madvise()` as a zapped one
    /// (its VMAs stay). Once per call, and only what the trace may hold.
    fn zap_range(&mut self, ev: &RawEvent, mm: u32, out: &mut Vec<Record>) {
        if ev.nr == zap_range::NONE || ev.aux == 0 || mm == 0 {
            return;
        }
        let mask = (1u64 << self.page_shift) - 1;
        let start = ev.addr & !mask;
        let end = ev.addr.saturating_add((ev.aux as u64) << self.page_shift);
        if self.zapped.get(&mm) == Some(&(ev.nr, start, end)) {
            return;
        }
        self.zapped.insert(mm, (ev.nr, start, end));
        let ts = ev.ts_ns;
        if ev.nr == zap_range::UNMAP {
            out.extend(self.unmapped(ts, mm, start, end, true));
            return;
        }
        let (start, end) = self.held(mm, start, end);
        if start < end {
            self.unswap(mm, start, end);
            out.push(Record::Zapped { ts, mm, start, end });
        }
    }

    /// A Task record the first time a thread is seen.
    fn first_sight(&mut self, ev: &RawEvent, out: &mut Vec<Record>) {
        if self.tasks.insert(ev.tid) {
            out.push(Record::Task {
                tid: ev.tid,
                pid: ev.pid,
                comm: comm(&ev.comm),
            });
        }
    }

    /// Appends the records for one event to `out`.
    pub fn ingest(&mut self, ev: &RawEvent, out: &mut Vec<Record>) {
        let start = out.len();
        // A folio's free or write end names no task of the trace (any
        // task may free it; an interrupt ends the I/O).
        if !matches!(ev.kind, kind::OUT_FREED | kind::ISOLATED | kind::WRITE_END) {
            self.first_sight(ev, out);
        }
        let (ts, tid) = (ev.ts_ns, ev.tid);
        let rec = match ev.kind {
            kind::OUT_ALT => {
                self.alt = Some((ev.mm, ev.entry, ev.addr));
                None
            }
            kind::SWAP_OUT => {
                let alt = self
                    .alt
                    .take()
                    .filter(|&(m, e, _)| (m, e) == (ev.mm, ev.entry));
                let moved;
                let ev = match alt.and_then(|(_, _, a)| self.out_address(ev, a)) {
                    // The bounds are the first VMA's.
                    Some(addr) => {
                        moved = RawEvent {
                            addr,
                            flags2: ev.flags2 & !exact2::BOUNDS,
                            ..*ev
                        };
                        &moved
                    }
                    None => ev,
                };
                let no_vma = ev.flags & flag::NO_VMA != 0;
                // A swap-out's mm is the page's owner, not the reclaiming task's.
                let mm = if no_vma { 0 } else { self.mm(ev.mm, 0, out) };
                let entry = SwapEntry::from_val(ev.entry);
                let vma_start = (ev.flags2 & exact2::BOUNDS != 0)
                    .then(|| ev.addr.saturating_sub((ev.aux as u64) << self.page_shift));
                let (addr, stale) = self.moved_since(mm, ts, ev.addr, vma_start);
                let vpage = addr >> self.page_shift;
                // A stale address's bounds are the old VMA's.
                if mm != 0 && !stale && ev.flags2 & exact2::BOUNDS != 0 {
                    let before = (ev.aux as u64) << self.page_shift;
                    let after = (ev.zero as u64 | (ev.zswap as u64) << 16) << self.page_shift;
                    let (start, end) = (
                        ev.addr.saturating_sub(before),
                        ev.addr.saturating_add(after),
                    );
                    if self.vmas.insert((mm, start), end) != Some(end) {
                        out.push(Record::Vma { ts, mm, start, end });
                    }
                    self.spans(mm, start, end);
                }
                if mm != 0 {
                    let life = self.life(mm);
                    for (i, e) in entry.folio(ev.nr.max(1) as u64).enumerate() {
                        let held = Held {
                            entry: e,
                            swapped: true,
                            life,
                        };
                        let p = vpage + i as u64;
                        let old = self.slots.insert((mm, p), held);
                        if !old.is_some_and(|h| h.out(life)) {
                            self.swapped.add(mm, p);
                        }
                        // The slot is this page's now, no kept page's.
                        if !self.kept.is_empty() {
                            self.kept.remove(&e);
                        }
                    }
                    let at = vpage << self.page_shift;
                    self.spans(mm, at, at + ((ev.nr.max(1) as u64) << self.page_shift));
                }
                let how = if ev.flags & flag::OUT_ZSWAP != 0 {
                    OutKind::Zswap
                } else if ev.flags & flag::OUT_ZERO != 0 {
                    OutKind::Zero
                } else if ev.flags & flag::OUT_IO != 0 {
                    OutKind::Io
                } else {
                    OutKind::Unknown
                };
                Some(Record::SwapOut {
                    ts,
                    tid,
                    mm,
                    vaddr: if no_vma { 0 } else { vpage << self.page_shift },
                    entry,
                    nr: ev.nr.max(1),
                    how,
                })
            }
            kind::SWAP_FAULT => {
                let mm = self.mm(ev.mm, ev.pid, out);
                let mut addr = ev.addr;
                let mut unknown = false;
                if ev.flags2 & exact2::GUP != 0 && ev.flags & exact::ENTRY == 0 {
                    self.gup_seen = true;
                    // The call's range; the page is the next one it faulted.
                    let pages = ev.zero as u64 | (ev.zswap as u64) << 16;
                    let first = ev.addr >> self.page_shift;
                    let end = if pages >= u32::MAX as u64 {
                        u64::MAX
                    } else {
                        first.saturating_add(pages)
                    };
                    match self.gup_page(tid, mm, first, end) {
                        Some(p) => addr = p << self.page_shift,
                        None => unknown = true,
                    }
                }
                let vpage = addr >> self.page_shift;
                let page = vpage << self.page_shift;
                let life = self.life(mm);
                self.spans(mm, page, page.saturating_add(1 << self.page_shift));
                // The slot stays: after a read fault the page keeps its
                // entry, and a fault after a clean reclaim reads it again.
                // Its PTE holds the entry no more.
                let joined = if unknown {
                    None
                } else {
                    self.mapped(mm, vpage, life)
                };
                let entry = if ev.flags & exact::ENTRY != 0 {
                    // From do_swap_page(): the entry is the PTE's own.
                    Some(SwapEntry::from_val(ev.entry))
                } else if unknown {
                    None
                } else {
                    joined.or_else(|| self.shared_entry(ev.mm, vpage))
                };
                let write = ev.flags & flag::WRITE != 0;
                if mm != 0 && !unknown {
                    self.kept(mm, vpage, entry, write);
                }
                let (zero_reads, zswap_loads) = if ev.flags & exact::ENTRY != 0 {
                    // Split by kind only where count_memcg_events saw the reads.
                    if ev.flags2 & exact2::KINDS != 0 {
                        (ev.zero as u32, ev.zswap as u32)
                    } else {
                        (0, 0)
                    }
                } else {
                    ((ev.entry >> 32) as u32, ev.entry as u32)
                };
                Some(Record::SwapFault {
                    ts,
                    dur_ns: ev.aux,
                    tid,
                    mm,
                    addr,
                    entry,
                    major: ev.flags & flag::MAJOR != 0,
                    pages_read: ev.nr,
                    zero_reads,
                    zswap_loads,
                    write,
                })
            }
            kind::SWAP_READ => {
                let how = match ev.aux {
                    read_kind::IO => ReadKind::Io,
                    read_kind::ZERO => ReadKind::Zero,
                    read_kind::ZSWAP => ReadKind::Zswap,
                    _ => ReadKind::Unknown,
                };
                let mm = self.mm(ev.mm, ev.pid, out);
                let nr = ev.nr;
                Some(match ev.addr.checked_add(ev.entry) {
                    Some(end) if ev.flags2 & exact2::WILLNEED != 0 && mm != 0 => {
                        let start = ev.addr;
                        Record::WillNeed {
                            ts,
                            tid,
                            mm,
                            start,
                            end,
                            how,
                            nr,
                        }
                    }
                    _ => Record::SwapRead { ts, tid, how, nr },
                })
            }
            kind::ZSWAP_WRITEBACK => Some(Record::ZswapWriteback {
                ts,
                tid,
                nr: ev.nr,
                entry: (ev.flags & exact::ENTRY != 0)
                    .then(|| SwapEntry::from_val(ev.entry))
                    .filter(SwapEntry::plausible),
            }),
            kind::RA_WINDOW => Some(Record::RaWindow {
                ts,
                tid,
                entry: SwapEntry::from_val(ev.entry),
                window: ev.nr,
                hits: ev.aux,
                source: if ev.flags & exact::FENTRY != 0 {
                    RaSource::FexitLastReadaheadPages
                } else {
                    RaSource::KprobeLastReadaheadPages
                },
            }),
            kind::CACHE_LOOKUP => Some(Record::CacheLookup {
                ts,
                tid,
                entry: SwapEntry::from_val(ev.entry),
                hit: ev.flags & exact::HIT != 0,
                ra_hit: ev.flags & exact::RA_HIT != 0,
            }),
            kind::ZSWAP_OP => Some(Record::ZswapOp {
                ts,
                tid,
                load: ev.flags & exact::LOAD != 0,
                ok: ev.flags & exact::OK != 0,
            }),
            kind::RECLAIM_BEGIN | kind::RECLAIM_END => Some(Record::Reclaim {
                ts,
                tid,
                begin: ev.kind == kind::RECLAIM_BEGIN,
                memcg: ev.flags & flag::MEMCG != 0,
                nr_reclaimed: ev.entry,
            }),
            kind::KHUGEPAGED_SWAPIN => {
                let mm = self.mm(ev.mm, 0, out);
                Some(Record::KhugepagedSwapin {
                    ts,
                    tid,
                    mm,
                    swapped_in: ev.nr,
                    referenced: ev.entry as u32,
                    ret: ev.aux as i32,
                })
            }
            kind::KHUGEPAGED_SCAN => {
                let mm = self.mm(ev.mm, 0, out);
                Some(Record::KhugepagedScan {
                    ts,
                    tid,
                    mm,
                    referenced: ev.nr,
                    none_or_zero: (ev.entry >> 32) as u32,
                    unmapped: ev.aux,
                    status: ev.entry as u32 as i32,
                    pmd: ev.addr,
                })
            }
            kind::COLLAPSE => {
                let mm = self.mm(ev.mm, 0, out);
                Some(Record::Collapse {
                    ts,
                    tid,
                    mm,
                    isolated: ev.flags & 1 != 0,
                    status: ev.entry as u32 as i32,
                })
            }
            kind::ZAP => {
                // The probe sends only drops of MM_SWAPENTS (a rise is a
                // swap-out in the owner's context, MADV_PAGEOUT).
                let left = (ev.entry != u64::MAX).then_some(ev.entry as i64);
                let mm = self.mm(ev.mm, 0, out);
                if ev.flags & flag::EXITING != 0 {
                    self.exited(mm);
                }
                self.zap_range(ev, mm, out);
                Some(Record::Zap {
                    ts,
                    tid,
                    mm,
                    swap_ents: left,
                    exiting: ev.flags & flag::EXITING != 0,
                })
            }
            kind::SWAPOFF_ENTER | kind::SWAPOFF_EXIT | kind::SWAPON_ENTER | kind::SWAPON_EXIT => {
                let exit = matches!(ev.kind, kind::SWAPOFF_EXIT | kind::SWAPON_EXIT);
                Some(Record::Syscall {
                    ts,
                    tid,
                    call: if matches!(ev.kind, kind::SWAPON_ENTER | kind::SWAPON_EXIT) {
                        Syscall::Swapon
                    } else {
                        Syscall::Swapoff
                    },
                    ret: exit.then_some(ev.entry as i64),
                })
            }
            kind::OUT_FREED => {
                let entry = SwapEntry::from_val(ev.entry);
                self.freed(entry, ev.nr);
                Some(Record::OutFreed {
                    ts,
                    entry,
                    nr: ev.nr.max(1),
                })
            }
            kind::WRITE_END => {
                let entry = SwapEntry::from_val(ev.entry);
                (ev.nr > 0 && entry.folio_fits(ev.nr)).then_some(Record::WriteEnd {
                    ts,
                    entry,
                    nr: ev.nr,
                })
            }
            kind::ISOLATED => Some(Record::Isolated {
                ts,
                entry: SwapEntry::from_val(ev.entry),
            }),
            kind::UNMAPPED => {
                let mm = self.mm(ev.mm, ev.pid, out);
                let end = ev.addr.saturating_add(ev.entry);
                self.unmapped(ts, mm, ev.addr, end, ev.nr == UNMAPPED_CLEARED)
            }
            kind::MOVED => {
                let mm = self.mm(ev.mm, ev.pid, out);
                let len = (ev.nr as u64) << self.page_shift;
                let (from, to) = (ev.entry, ev.addr);
                if mm == 0 || len == 0 || from.checked_add(len).is_none() {
                    None
                } else {
                    self.moved(mm, from, to, len);
                    self.moves.insert(mm, (ts, from, to, len));
                    Some(Record::Moved {
                        ts,
                        mm,
                        from,
                        to,
                        len,
                    })
                }
            }
            kind::FORK => {
                if let Some(old) = self.forked_from.insert(ev.mm, ev.entry) {
                    // The child's mm was freed and reused since.
                    if let Some(v) = self.forks.get_mut(&old) {
                        v.retain(|&c| c != ev.mm);
                    }
                }
                self.forks.entry(ev.entry).or_default().push(ev.mm);
                None
            }
            _ => None,
        };
        out.extend(rec);
        for r in &out[start..] {
            self.summary.add(r);
        }
    }

    /// A free batch: the head event plus its entries, or a range of
    /// [`exact::RANGE`] (at most [`RANGE_MAX`] entries: a cluster).
    pub fn ingest_free(&mut self, ev: &FreeBatchEvent, out: &mut Vec<Record>) {
        let start = out.len();
        let h = &ev.head;
        self.first_sight(h, out);
        let entries = if h.flags & exact::RANGE != 0 {
            // One call freeing `nr` consecutive entries of one cluster.
            let first = SwapEntry::from_val(h.entry);
            (0..h.nr.min(RANGE_MAX) as u64)
                .map(|i| SwapEntry {
                    dev: first.dev,
                    offset: first.offset + i,
                })
                .collect()
        } else {
            let n = (h.nr as usize).min(ev.entries.len());
            ev.entries[..n]
                .iter()
                .map(|&v| SwapEntry::from_val(v))
                .collect()
        };
        out.push(Record::FreeBatch {
            ts: h.ts_ns,
            tid: h.tid,
            lat_ns: h.aux,
            entries,
        });
        for r in &out[start..] {
            self.summary.add(r);
        }
    }

    /// Lost-event records for counters read from the probe.
    pub fn lost(&mut self, ts: u64, lost: &[u64], out: &mut Vec<Record>) {
        let mut by: BTreeMap<&str, u64> = BTreeMap::new();
        for (k, &n) in lost.iter().enumerate() {
            if n > 0 {
                *by.entry(kind::name(k as u8)).or_default() += n;
            }
        }
        for (what, count) in by {
            self.lost_one(ts, what.to_string(), count, out);
        }
    }

    /// One Lost record, counted in the summary.
    /// Records made in userspace (not from an event), counted as recorded.
    pub fn add_records(&mut self, from: usize, out: &[Record]) {
        for r in &out[from..] {
            self.summary.add(r);
        }
    }

    pub fn lost_one(&mut self, ts: u64, what: String, count: u64, out: &mut Vec<Record>) {
        let r = Record::Lost { ts, what, count };
        self.summary.add(&r);
        out.push(r);
    }
}

#[cfg(test)]
mod tests;
