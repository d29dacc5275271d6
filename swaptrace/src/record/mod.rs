//! Turning probe events into trace records: address spaces and tasks are
//! numbered, kernel pointers dropped, and each swap-in fault is joined to the
//! swap-out of the same page of the same address space to learn its entry.

#[cfg(feature = "live")]
mod demo;
#[cfg(feature = "live")]
mod live;
mod metrics_server;
pub mod prometheus;
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

/// [`Recorder::summary`]'s type, at home in `trace`.
use crate::trace::Summary;
use crate::trace::{OutKind, RaSource, ReadKind, Record, SwapEntry, Syscall};
use std::collections::{BTreeMap, HashMap, HashSet};
use swaptrace_common::{exact, exact2, flag, kind, read_kind, FreeBatchEvent, RawEvent};

/// Most entries taken from one range free: a swap cluster (SWAPFILE_CLUSTER,
/// 512) twice over, against a corrupt count.
const RANGE_MAX: u32 = 1024;

/// The event-to-record state machine.
#[derive(Default)]
pub struct Recorder {
    mms: HashMap<u64, u32>,
    tasks: HashSet<u32>,
    /// (mm, virtual page) -> entry of its last recorded swap-out.
    slots: HashMap<(u32, u64), SwapEntry>,
    page_shift: u32,
    /// (mm, VMA start) -> its end, as last recorded.
    vmas: BTreeMap<(u32, u64), u64>,
    /// Kernel mm -> the mm it was forked from, and back.
    forked_from: HashMap<u64, u64>,
    forks: HashMap<u64, Vec<u64>>,
    /// mm -> its last `mremap()` move: (ts, from, to, len).
    moves: HashMap<u32, (u64, u64, u64, u64)>,
    pub summary: Summary,
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

    fn mm(&mut self, ptr: u64, pid: u32, out: &mut Vec<Record>) -> u32 {
        if ptr == 0 {
            return 0;
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
            self.slots.get(&(id, vpage)).copied()
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
        let (fp, tp) = (from >> self.page_shift, to >> self.page_shift);
        let pages = len >> self.page_shift;
        let moving: Vec<(u64, SwapEntry)> = if pages as usize > self.slots.len() {
            self.slots
                .iter()
                .filter(|(&(m, p), _)| m == mm && p.wrapping_sub(fp) < pages)
                .map(|(&(_, p), &e)| (p, e))
                .collect()
        } else {
            (fp..fp + pages)
                .filter_map(|p| self.slots.get(&(mm, p)).map(|&e| (p, e)))
                .collect()
        };
        for &(p, _) in &moving {
            self.slots.remove(&(mm, p));
        }
        for (p, e) in moving {
            self.slots.insert((mm, p - fp + tp), e);
        }
        let gone: Vec<_> = self
            .vmas
            .range((mm, from)..(mm, from + len))
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
        // A folio's free names no task of the trace (any task may free it).
        if ev.kind != kind::OUT_FREED && ev.kind != kind::ISOLATED {
            self.first_sight(ev, out);
        }
        let (ts, tid) = (ev.ts_ns, ev.tid);
        let rec = match ev.kind {
            kind::SWAP_OUT => {
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
                }
                if mm != 0 {
                    for (i, e) in entry.folio(ev.nr.max(1) as u64).enumerate() {
                        self.slots.insert((mm, vpage + i as u64), e);
                    }
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
                let entry = if ev.flags & exact::ENTRY != 0 {
                    // From do_swap_page(): the entry is the PTE's own.
                    Some(SwapEntry::from_val(ev.entry))
                } else {
                    // Joined. The slot stays: after a read fault the page keeps
                    // its entry, and a fault after a clean reclaim reads it again.
                    let vpage = ev.addr >> self.page_shift;
                    self.slots
                        .get(&(mm, vpage))
                        .copied()
                        .or_else(|| self.shared_entry(ev.mm, vpage))
                };
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
                    addr: ev.addr,
                    entry,
                    major: ev.flags & flag::MAJOR != 0,
                    pages_read: ev.nr,
                    zero_reads,
                    zswap_loads,
                    write: ev.flags & flag::WRITE != 0,
                })
            }
            kind::SWAP_READ => Some(Record::SwapRead {
                ts,
                tid,
                how: match ev.aux {
                    read_kind::IO => ReadKind::Io,
                    read_kind::ZERO => ReadKind::Zero,
                    read_kind::ZSWAP => ReadKind::Zswap,
                    _ => ReadKind::Unknown,
                },
                nr: ev.nr,
            }),
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
            kind::OUT_FREED => Some(Record::OutFreed {
                ts,
                entry: SwapEntry::from_val(ev.entry),
            }),
            kind::ISOLATED => Some(Record::Isolated {
                ts,
                entry: SwapEntry::from_val(ev.entry),
            }),
            kind::UNMAPPED => {
                let mm = self.mm(ev.mm, ev.pid, out);
                let (start, end) = (ev.addr, ev.addr.saturating_add(ev.entry));
                // A new mapping in a moved-from range: its swap-outs are its own.
                if self
                    .moves
                    .get(&mm)
                    .is_some_and(|&(_, from, _, len)| from < end && start < from + len)
                {
                    self.moves.remove(&mm);
                }
                // The VMAs recorded there are gone: a swap-out from the new
                // mapping records its bounds again, even if they are the same.
                let gone: Vec<_> = self
                    .vmas
                    .range((mm, start)..(mm, end))
                    .map(|(&k, _)| k)
                    .collect();
                for k in gone {
                    self.vmas.remove(&k);
                }
                Some(Record::Unmapped { ts, mm, start, end })
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
mod tests {
    use super::*;

    fn ev(k: u8) -> RawEvent {
        RawEvent {
            kind: k,
            tid: 10,
            pid: 10,
            comm: *b"work\0\0\0\0\0\0\0\0\0\0\0\0",
            ..RawEvent::default()
        }
    }

    #[test]
    fn faults_join_the_swap_out_of_their_page() {
        let mut r = Recorder::new(4096);
        let mut out = Vec::new();
        let mut o = ev(kind::SWAP_OUT);
        o.mm = 0xffff_8880_0000_1000;
        o.addr = 0x7f00_0000_3000;
        o.entry = (1u64 << 58) | 42;
        o.nr = 1;
        o.flags = flag::OUT_IO;
        r.ingest(&o, &mut out);
        let mut f = ev(kind::SWAP_FAULT);
        f.mm = o.mm;
        f.addr = 0x7f00_0000_3abc;
        f.nr = 4;
        f.flags = flag::MAJOR;
        r.ingest(&f, &mut out);
        // A second fault on the page without a new swap-out (a clean page
        // dropped and read again) has the same entry.
        r.ingest(&f, &mut out);
        let faults: Vec<_> = out
            .iter()
            .filter_map(|r| match r {
                Record::SwapFault { entry, mm, .. } => Some((*entry, *mm)),
                _ => None,
            })
            .collect();
        assert_eq!(
            faults,
            vec![
                (Some(SwapEntry { dev: 1, offset: 42 }), 1),
                (Some(SwapEntry { dev: 1, offset: 42 }), 1)
            ]
        );
        assert!(matches!(out[0], Record::Task { tid: 10, .. }));
        assert!(matches!(out[1], Record::AddressSpace { mm: 1, pid: 0 }));
        let s = &r.summary;
        assert_eq!((s.faults, s.faults_major, s.faults_joined), (2, 2, 2));
        assert_eq!((s.swap_outs, s.swap_out_io, s.fault_pages_read), (1, 1, 8));
    }

    /// mremap() moved swapped-out pages: a fault at the new address joins
    /// the swap-out made at the old one, a fault at the old one joins none.
    /// A move that names a range the probe read wrongly makes no record.
    #[test]
    fn faults_after_mremap_join_the_swap_out_before_it() {
        let mut r = Recorder::new(4096);
        let mut out = Vec::new();
        let (mm, old, new) = (
            0xffff_8880_0000_1000u64,
            0x7f00_0010_0000u64,
            0x7e00_0000_0000u64,
        );
        for (i, off) in [(0u64, 42u64), (3, 43), (16, 44)] {
            let mut o = ev(kind::SWAP_OUT);
            (o.mm, o.addr, o.entry, o.nr) = (mm, old + i * 4096, (1u64 << 58) | off, 1);
            r.ingest(&o, &mut out);
        }
        // 16 pages move: the third swap-out's page is past them.
        let mut m = ev(kind::MOVED);
        (m.mm, m.addr, m.entry, m.nr) = (mm, new, old, 16);
        r.ingest(&m, &mut out);
        let Some(Record::Moved {
            mm: 1,
            from,
            to,
            len,
            ..
        }) = out.last()
        else {
            panic!("no move: {out:?}")
        };
        assert_eq!((*from, *to, *len), (old, new, 16 * 4096));
        fn fault_at(r: &mut Recorder, out: &mut Vec<Record>, mm: u64, addr: u64) -> Option<u64> {
            let mut f = ev(kind::SWAP_FAULT);
            (f.mm, f.addr, f.flags) = (mm, addr, flag::MAJOR);
            r.ingest(&f, out);
            match out.last() {
                Some(Record::SwapFault { entry, .. }) => entry.map(|e| e.offset),
                other => panic!("not a fault: {other:?}"),
            }
        }
        macro_rules! fault {
            ($a:expr) => {
                fault_at(&mut r, &mut out, mm, $a)
            };
        }
        assert_eq!(fault!(new + 3 * 4096 + 5), Some(43));
        assert_eq!(fault!(new), Some(42));
        assert_eq!(fault!(old + 3 * 4096), None);
        assert_eq!(fault!(old + 16 * 4096), Some(44));
        // Reclaim during the move names the page through the old VMA (on
        // the anon_vma until the move ends) by its old address: the page is
        // at the new one.
        let out_at = |addr: u64, vma: (u64, u64), offset: u64| {
            let mut o = ev(kind::SWAP_OUT);
            (o.mm, o.addr, o.entry, o.nr) = (mm, addr, (1u64 << 58) | offset, 1);
            (o.ts_ns, o.flags2) = (1000, exact2::BOUNDS);
            o.aux = ((addr - vma.0) >> 12) as u32;
            o.zero = ((vma.1 - addr) >> 12) as u16;
            o
        };
        r.ingest(
            &out_at(old + 5 * 4096, (old, old + 16 * 4096), 45),
            &mut out,
        );
        assert_eq!(fault!(new + 5 * 4096), Some(45));
        // The moved VMA grew in place over the old range (mremap() with no
        // move): its page there is named through it, and stays.
        let grown = (new, old + 32 * 4096);
        r.ingest(&out_at(old + 7 * 4096, grown, 47), &mut out);
        assert_eq!(fault!(old + 7 * 4096), Some(47));
        // A new mapping took the old range: its pages are its own.
        let mut u = ev(kind::UNMAPPED);
        (u.mm, u.addr, u.entry) = (mm, old, 4096 * 16);
        r.ingest(&u, &mut out);
        r.ingest(
            &out_at(old + 6 * 4096, (old, old + 16 * 4096), 46),
            &mut out,
        );
        assert_eq!(fault!(old + 6 * 4096), Some(46));
        assert_eq!(fault!(new + 6 * 4096), None);
        let before = out.len();
        let mut bad = ev(kind::MOVED);
        (bad.mm, bad.addr, bad.entry, bad.nr) = (mm, new, u64::MAX - 4096, 16);
        r.ingest(&bad, &mut out);
        assert!(!out[before..]
            .iter()
            .any(|r| matches!(r, Record::Moved { .. })));
    }

    /// A page swapped out under the parent's mm and faulted in a forked
    /// child (or a grandchild) joins the parent's swap-out; a stranger at
    /// the same address does not.
    #[test]
    fn swap_ins_of_pages_shared_by_fork_join_the_family_swap_out() {
        let (parent, child, grandchild, stranger) = (0x1000u64, 0x2000, 0x3000, 0x4000);
        let mut r = Recorder::new(4096);
        let mut out = Vec::new();
        let mut o = ev(kind::SWAP_OUT);
        (o.mm, o.addr, o.entry, o.nr) = (parent, 0x7f00_0000_3000, (1u64 << 58) | 42, 1);
        r.ingest(&o, &mut out);
        for (p, c) in [(parent, child), (child, grandchild)] {
            let mut f = ev(kind::FORK);
            (f.mm, f.entry) = (c, p);
            r.ingest(&f, &mut out);
        }
        let fault = |mm: u64, write: bool, r: &mut Recorder| {
            let mut f = ev(kind::SWAP_FAULT);
            (f.mm, f.addr) = (mm, 0x7f00_0000_3008);
            f.flags = if write { flag::WRITE } else { 0 };
            let mut out = Vec::new();
            r.ingest(&f, &mut out);
            match out.pop() {
                Some(Record::SwapFault { entry, write, .. }) => (entry, write),
                other => panic!("{other:?}"),
            }
        };
        let e = Some(SwapEntry { dev: 1, offset: 42 });
        assert_eq!(fault(child, false, &mut r), (e, false));
        assert_eq!(fault(grandchild, true, &mut r), (e, true));
        assert_eq!(fault(stranger, false, &mut r), (None, false));
        // The other way: swapped out under the child, faulted by the parent.
        let mut o2 = o;
        (o2.mm, o2.addr, o2.entry) = (child, 0x7f00_0000_5000, (1u64 << 58) | 43);
        r.ingest(&o2, &mut out);
        let mut f = ev(kind::SWAP_FAULT);
        (f.mm, f.addr) = (parent, 0x7f00_0000_5000);
        let mut out = Vec::new();
        r.ingest(&f, &mut out);
        assert!(matches!(
            out.last(),
            Some(Record::SwapFault {
                entry: Some(SwapEntry { offset: 43, .. }),
                ..
            })
        ));
    }

    /// A swap-out's VMA bounds become a Vma record the first time, and
    /// again only when they change.
    #[test]
    fn vma_bounds_are_recorded_when_first_seen_or_changed() {
        let mut r = Recorder::new(4096);
        let out_at = |r: &mut Recorder, addr: u64, before: u32, after: u32| {
            let mut o = ev(kind::SWAP_OUT);
            (o.mm, o.addr, o.entry, o.nr) = (0x1000, addr, 42, 1);
            o.flags2 = exact2::BOUNDS;
            o.aux = before;
            (o.zero, o.zswap) = (after as u16, (after >> 16) as u16);
            let mut out = Vec::new();
            r.ingest(&o, &mut out);
            out.into_iter()
                .filter_map(|x| match x {
                    Record::Vma { start, end, .. } => Some((start, end)),
                    _ => None,
                })
                .collect::<Vec<_>>()
        };
        let vma = (0x7f00_0000_0000, 0x7f00_0000_0000 + (70_000 << 12));
        assert_eq!(out_at(&mut r, 0x7f00_0000_3000, 3, 69_997), vec![vma]);
        assert_eq!(out_at(&mut r, 0x7f00_0000_5000, 5, 69_995), vec![]);
        // Shrunk (munmap of its tail): recorded again.
        assert_eq!(
            out_at(&mut r, 0x7f00_0000_5000, 5, 10),
            vec![(vma.0, 0x7f00_0000_f000)]
        );
        // Unmapped, and mapped again with the same bounds: recorded again.
        let mut u = ev(kind::UNMAPPED);
        (u.mm, u.addr, u.entry) = (0x1000, vma.0, 0x10_0000);
        let mut out = Vec::new();
        r.ingest(&u, &mut out);
        let (start, end) = (vma.0, vma.0 + 0x10_0000);
        assert!(
            matches!(out[..], [Record::Unmapped { mm: 1, start: s, end: e, .. }] if (s, e) == (start, end))
        );
        assert_eq!(
            out_at(&mut r, 0x7f00_0000_5000, 5, 10),
            vec![(vma.0, 0x7f00_0000_f000)]
        );
    }

    #[test]
    fn a_range_free_becomes_a_batch_of_consecutive_entries() {
        let mut r = Recorder::new(4096);
        let mut out = Vec::new();
        // Device 1, offset 1022: two entries cross into cluster 2.
        let head = RawEvent {
            nr: 3,
            aux: 700,
            entry: (1 << 58) | 1022,
            flags: exact::RANGE | exact::FENTRY,
            ..ev(kind::FREE_BATCH)
        };
        let entries = [0xdead; swaptrace_common::FREE_BATCH_MAX];
        r.ingest_free(&FreeBatchEvent { head, entries }, &mut out);
        let Some(Record::FreeBatch {
            entries, lat_ns, ..
        }) = out.last()
        else {
            panic!("no batch: {out:?}")
        };
        assert_eq!(*lat_ns, 700);
        let got: Vec<(u8, u64)> = entries.iter().map(|e| (e.dev, e.offset)).collect();
        assert_eq!(got, [(1, 1022), (1, 1023), (1, 1024)]);
        // A corrupt count is cut at RANGE_MAX.
        let head = RawEvent {
            nr: u32::MAX,
            ..head
        };
        let entries = [0; swaptrace_common::FREE_BATCH_MAX];
        r.ingest_free(&FreeBatchEvent { head, entries }, &mut out);
        let Some(Record::FreeBatch { entries, .. }) = out.last() else {
            panic!("no batch")
        };
        assert_eq!(entries.len(), RANGE_MAX as usize);
    }

    #[test]
    fn every_event_kind_becomes_the_record_of_its_name() {
        // A fork makes no record: it joins later swap-ins.
        for k in (1..kind::COUNT as u8).filter(|&k| k != kind::FORK) {
            let mut r = Recorder::new(4096);
            let mut out = Vec::new();
            if k == kind::FREE_BATCH {
                let head = RawEvent { nr: 1, ..ev(k) };
                let entries = [0; swaptrace_common::FREE_BATCH_MAX];
                r.ingest_free(&FreeBatchEvent { head, entries }, &mut out);
            } else if k == kind::MOVED {
                let (mm, nr, entry) = (0x1000, 1, 0x7000_0000);
                r.ingest(
                    &RawEvent {
                        mm,
                        nr,
                        entry,
                        ..ev(k)
                    },
                    &mut out,
                );
            } else {
                r.ingest(&ev(k), &mut out);
            }
            let last = out.last().map(|r| r.kind_name());
            assert_eq!(last, Some(kind::name(k)), "kind {k}");
        }
    }

    #[test]
    fn lost_counts_become_records_per_kind() {
        let mut r = Recorder::new(4096);
        let mut out = Vec::new();
        let mut lost = [0u64; kind::COUNT];
        lost[kind::SWAP_FAULT as usize] = 3;
        lost[kind::RECLAIM_BEGIN as usize] = 1;
        lost[kind::RECLAIM_END as usize] = 2;
        r.lost(5, &lost, &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(r.summary.lost_total(), 6);
        assert_eq!(r.summary.lost["reclaim"], 3);
    }
}
