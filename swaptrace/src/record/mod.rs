//! Turning probe events into trace records: address spaces and tasks are
//! numbered, kernel pointers dropped, and each swap-in fault is joined to the
//! swap-out of the same page of the same address space to learn its entry.

#[cfg(feature = "live")]
mod demo;
mod joins;
use joins::{at_second, Placed};
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
    /// Swap-outs of [`joins::Placed::Unknown`] pages, with the other
    /// address, until a fault places them; by (kernel mm, address).
    deferred: Vec<Option<(RawEvent, u64)>>,
    deferred_at: HashMap<(u64, u64), usize, Mix>,
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

    /// Appends the records for one event to `out`.
    pub fn ingest(&mut self, ev: &RawEvent, out: &mut Vec<Record>) {
        // A move, unmap, zap or fork changes the joins: the swap-outs still
        // waiting for a fault are placed before it.
        if !self.deferred.is_empty()
            && matches!(
                ev.kind,
                kind::MOVED | kind::UNMAPPED | kind::ZAP | kind::FORK
            )
        {
            self.settle(out);
        }
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
                match alt.map(|(_, _, a)| (a, self.out_address(ev, a))) {
                    Some((a, Placed::Second)) => self.swap_out(&at_second(ev, a), out),
                    Some((a, Placed::Unknown)) => {
                        self.defer_out(ev, a);
                        None
                    }
                    _ => self.swap_out(ev, out),
                }
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
                if !self.deferred_at.is_empty() {
                    self.place_deferred(ev.mm, page, out);
                }
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

    /// The record of a swap-out at `ev.addr`, and the joins it makes.
    fn swap_out(&mut self, ev: &RawEvent, out: &mut Vec<Record>) -> Option<Record> {
        let ts = ev.ts_ns;
        let tid = ev.tid;
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
