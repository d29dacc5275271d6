//! What a replay reads: a trace's swap-outs, swap-in faults and swapoffs as
//! events in time order, and how the recording kernel's swapoff behaved.

use super::error::ReplayError;
use super::space::MixHasher;
use crate::trace::{Header, Loaded, OutKind, Record, SwapEntry, Syscall, MAX_FOLIO_PAGES};
use serde::Serialize;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

mod own_reclaim;

/// One input event, in trace order.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// A page written to swap: its slot now holds this page.
    Out {
        ts: u64,
        mm: u32,
        vpage: u64,
        entry: SwapEntry,
        store: Store,
        /// The folio stays in the swap cache until [`Event::Freed`] (a
        /// device write whose freeing the recording watched, or any store
        /// where it watched stored folios too).
        lingers: bool,
        /// Written by the reclaim of the fault that follows (see
        /// [`InputBuilder::own_reclaim_first`]).
        in_fault: bool,
    },
    /// The folio of a swap-out of `entry` was freed: no longer in the swap
    /// cache (`kmem:mm_page_free`).
    Freed { ts: u64, entry: SwapEntry },
    /// The swap-cache folio of `entry`, never mapped (read ahead), was
    /// written again by reclaim (a swap-out with no owner): `pageout()`
    /// cleared its PG_reclaim, which is PG_readahead.
    Rewritten { ts: u64, entry: SwapEntry },
    /// Reclaim isolated the swap-cache folio of `entry`, read ahead from
    /// zswap (dirty, never mapped), and keeps it ([`Record::Isolated`]).
    Isolated { ts: u64, entry: SwapEntry },
    /// The I/O of `nr` written pages from `entry` ended
    /// ([`Record::WriteEnd`]): their folios' PG_reclaim is cleared.
    WriteEnd { ts: u64, entry: SwapEntry, nr: u32 },
    /// A folio the replay let go at its swap-out (stored without I/O) was
    /// freed: the kernel's reclaim ran, and nothing else changed.
    Paid { ts: u64 },
    /// zswap wrote `nr` pages back (`zswap_writeback_entry()`), each
    /// through a swap-cache folio of the kernel's own: the next free of a
    /// zswap page's entry the model does not hold is such a folio's, and
    /// the page is on the device from then.
    Writeback { ts: u64, nr: u32 },
    /// zswap wrote `entry`'s page back: it is on the device, and its folio
    /// (not read ahead) in the swap cache until its free.
    WrittenBack { ts: u64, entry: SwapEntry },
    /// A swap-in fault on a page whose swap entry is known; `write` when
    /// the fault writes.
    Fault {
        ts: u64,
        mm: u32,
        vpage: u64,
        entry: SwapEntry,
        write: bool,
        /// Pages the kernel read for it (device, zswap and zero pages).
        read: u32,
        /// The kernel's swap-cache lookup found a folio no readahead made.
        cached: bool,
        /// How long the kernel's fault took, ns.
        dur: u32,
    },
    /// A successful swapoff of device `dev` began: `try_to_unuse()` walks
    /// the page tables and swaps in every PTE that holds one of its entries.
    Swapoff { ts: u64, dev: u8 },
    /// A VMA of address space `mm`: pages `[start, end)`.
    Vma {
        ts: u64,
        mm: u32,
        start: u64,
        end: u64,
    },
    /// Pages `[start, end)` of address space `mm` are unmapped (a new
    /// mapping takes them): their PTEs, slots and pages are gone.
    Unmapped {
        ts: u64,
        mm: u32,
        start: u64,
        end: u64,
    },
    /// `madvise()` zapped pages `[start, end)` of address space `mm`:
    /// their PTEs, slots and pages are gone, their VMAs stay.
    Zapped {
        ts: u64,
        mm: u32,
        start: u64,
        end: u64,
    },
    /// `mremap()` moved pages `[from, from + len)` of `mm` to `to`: their
    /// PTEs, slots and VMAs go with them.
    Moved {
        ts: u64,
        mm: u32,
        from: u64,
        to: u64,
        len: u64,
    },
    /// `madvise(MADV_WILLNEED)` of pages `[start, end)` of `mm` read `read`
    /// pages into the swap cache ([`Record::WillNeed`]).
    WillNeed {
        ts: u64,
        tid: u32,
        mm: u32,
        start: u64,
        end: u64,
        read: u32,
    },
}

impl Event {
    pub(super) fn ts(&self) -> u64 {
        match self {
            Event::Out { ts, .. }
            | Event::Fault { ts, .. }
            | Event::Swapoff { ts, .. }
            | Event::Freed { ts, .. }
            | Event::WriteEnd { ts, .. }
            | Event::Writeback { ts, .. }
            | Event::WrittenBack { ts, .. }
            | Event::Paid { ts }
            | Event::Rewritten { ts, .. }
            | Event::Isolated { ts, .. }
            | Event::Vma { ts, .. }
            | Event::Unmapped { ts, .. }
            | Event::Zapped { ts, .. }
            | Event::Moved { ts, .. }
            | Event::WillNeed { ts, .. } => *ts,
        }
    }
}

/// Where a swap-out put the page, so what its swap-in counts:
/// `swap_read_folio()` tries the zeromap (SWPIN_ZERO), then `zswap_load()`
/// (ZSWPIN), then reads the device (PSWPIN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    /// Written to the swap device (PSWPOUT, or no counter seen).
    Device,
    /// Zero-filled, only marked in the zeromap (SWPOUT_ZERO).
    Zero,
    /// Compressed into zswap (ZSWPOUT).
    Zswap,
    /// On the device, written there by zswap (`zswap_writeback_entry()`),
    /// whose folio the kernel may still hold.
    WrittenBack,
}

impl Store {
    fn of(how: OutKind) -> Store {
        match how {
            OutKind::Zero => Store::Zero,
            OutKind::Zswap => Store::Zswap,
            OutKind::Io | OutKind::Unknown => Store::Device,
        }
    }
}

/// What swapoff's `unuse_pte_range()` does with a swap PTE whose page is
/// already in the swap cache (readahead by an earlier PTE).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SwapoffMode {
    /// Before 5.8: `swapin_readahead()` for every PTE; no hit is counted.
    Readahead,
    /// 5.8 to 6.17 (the 5.8 swapoff readahead-statistics fix):
    /// `lookup_swap_cache()`/`swap_cache_get_folio()` counts the hit
    /// (`swap_update_readahead()`), readahead only on a miss.
    LookupStats,
    /// 6.18 on: `swap_cache_get_folio(entry)` without `swap_update_readahead()`
    /// (readahead statistics split from the lookup): no hit is counted.
    LookupNoStats,
}

impl SwapoffMode {
    /// The behaviour of a kernel release such as "6.18.0-1-amd64".
    pub fn for_release(release: &str) -> SwapoffMode {
        let v = crate::trace::kernel_version(release);
        if v < (5, 8) && v != (0, 0) {
            SwapoffMode::Readahead
        } else if v < (6, 18) {
            SwapoffMode::LookupStats
        } else {
            SwapoffMode::LookupNoStats
        }
    }
}

/// What a replay needs from a trace.
#[derive(Clone, Debug)]
pub struct ReplayInput {
    pub events: Vec<Event>,
    /// `/proc/sys/vm/page-cluster` when recorded (the window cap is 2^this).
    pub page_cluster: u32,
    /// Largest offset of each swap device (by type), when known.
    pub dev_max: Vec<u64>,
    /// Swap-backed pages (mapped or in the swap cache) that memory holds:
    /// beyond it the least recently used leaves memory, a mapped page by a
    /// clean drop (no write: its slot still holds it), a readahead page unused.
    pub memory_pages: usize,
    /// Faults of the trace without a known entry (not replayed).
    pub unknown_faults: u64,
    /// Successful swapoffs whose device could not be told (not replayed).
    pub unknown_swapoffs: u64,
    /// Swap-outs and faults no kernel could make (a folio beyond
    /// [`MAX_FOLIO_PAGES`], an entry not [`SwapEntry::plausible`]): skipped.
    pub bad_records: u64,
    /// What plain `cluster`/`vma` do at swapoff: the recording kernel's way.
    pub swapoff_mode: SwapoffMode,
    /// The trace tells when the kernel freed swap-cache folios
    /// ([`Event::Freed`]): written folios stay in the model's swap cache
    /// until then, as MADV_PAGEOUT's do without any reclaim.
    pub frees: bool,
    /// And it recorded direct or memcg reclaim (memory was full): the
    /// model's memory follows the kernel's ([`Model::debt`]). Without, its
    /// own LRU keeps it.
    pub pressure: bool,
    /// The trace tells when each device write's I/O ended
    /// ([`Event::WriteEnd`]): until then the written folio's PG_reclaim,
    /// the bit of PG_readahead, makes a fault on it a readahead hit.
    pub write_ends: bool,
    /// Reclaim keeps a page read ahead from zswap (dirty, never mapped):
    /// [`crate::trace::Header::keeps_unmapped_dirty`].
    pub keeps_unmapped_dirty: bool,
    /// Reclaim's isolation clears a folio's PG_readahead:
    /// [`crate::trace::Header::lru_gen_clears_readahead`].
    pub isolation_clears_readahead: bool,
    /// Swap types whose device reads synchronously (zram, brd, pmem):
    /// [`crate::trace::Header::synchronous_types`].
    pub synchronous: Vec<bool>,
}

impl ReplayInput {
    /// Whether reclaim keeps an unused page read ahead from `store`: from
    /// zswap, whose load left it dirty, where `pageout()` activates such
    /// folios ([`ReplayInput::keeps_unmapped_dirty`]).
    pub(super) fn pageout_keeps(&self, store: Store) -> bool {
        self.keeps_unmapped_dirty && store == Store::Zswap
    }

    /// Whether `e`'s device reads synchronously (SWP_SYNCHRONOUS_IO).
    pub(super) fn synchronous(&self, e: SwapEntry) -> bool {
        self.synchronous.get(e.dev as usize) == Some(&true)
    }

    pub fn from_trace(t: &Loaded, memory_pages: usize) -> Result<ReplayInput, ReplayError> {
        let mut b = InputBuilder::for_header(&t.header);
        for r in &t.records {
            b.add(r);
        }
        let mut input = b.finish(t.header.readahead.page_cluster.unwrap_or(3), memory_pages)?;
        input.swapoff_mode = SwapoffMode::for_release(&t.header.kernel_release);
        input.keeps_unmapped_dirty = t.header.keeps_unmapped_dirty();
        input.isolation_clears_readahead = t.header.isolation_clears_readahead();
        input.synchronous = t.header.synchronous_types();
        Ok(input)
    }
}

/// Collects replay events from records, one at a time.
pub struct InputBuilder {
    shift: u32,
    events: Vec<Event>,
    unknown_faults: u64,
    bad_records: u64,
    dev_max: Vec<u64>,
    /// Per device: swap-outs and faults naming it, and the first and last
    /// time one did (which device a swapoff removed).
    named: Vec<u64>,
    dev_ts: Vec<(u64, u64)>,
    faults: u64,
    /// swapoff entered, by task: entry time.
    swapoff_open: HashMap<u32, u64>,
    /// Successful swapoffs: (entry time, exit time).
    swapoffs: Vec<(u64, u64)>,
    /// The trace records when device-written folios were freed.
    out_freed: bool,
    /// ... and stored ones (zswap, zero-filled).
    stored_frees: bool,
    /// The trace records the end of each device write's I/O.
    write_ends: bool,
    /// A reclaim began (direct or memcg).
    reclaimed: bool,
    /// Entries stored to zswap whose folio does not linger, by the
    /// store's time, until the stored folio's own `out_freed`: see
    /// [`OWN_FREE_NS`].
    stored: HashMap<SwapEntry, u64, BuildHasherDefault<MixHasher>>,
    /// Each task's last swap-cache lookup that found a folio no readahead
    /// made: (entry, time); its fault's record follows.
    cached: HashMap<u32, (SwapEntry, u64), BuildHasherDefault<MixHasher>>,
    /// Each task's swap-outs since its last fault: (time, entry, pages),
    /// for [`InputBuilder::own_reclaim_first`].
    recent_outs: HashMap<u32, Vec<(u64, SwapEntry, u32)>, BuildHasherDefault<MixHasher>>,
}

/// Swap-outs a task keeps in [`InputBuilder::recent_outs`], its latest:
/// more than reclaim writes during one fault (kswapd never faults).
const RECENT_OUTS: usize = 4096;

/// Tasks [`InputBuilder::recent_outs`] holds: past it, those whose latest
/// swap-out no fault can still hold (a fault lasts under 2^32 ns) go, and
/// if too many are left, all.
const RECENT_TASKS: usize = 256;

/// A folio stored to zswap leaves the replay at its swap-out where the
/// recording did not watch stored folios (older traces) or the folio is
/// large; when the recorder watched it (read from swap before, or the
/// head of a large folio), its free follows within the reclaim pass that
/// stored it ([`Event::Paid`]). A free of the entry later than this, with
/// no fault or store between, is of a folio read ahead since. Measured on 6.12's zswap runs: 99.7% of these frees
/// within 100 ms, the others after more than a second. Zero-filled stores
/// keep their frees: the host's replays balance memory with them (its
/// `zero` shape replays exactly with them, 4-9% off without).
const OWN_FREE_NS: u64 = 1_000_000_000;

impl InputBuilder {
    pub fn new(page_size: u64) -> InputBuilder {
        InputBuilder {
            shift: page_size.max(1).trailing_zeros(),
            events: Vec::new(),
            unknown_faults: 0,
            bad_records: 0,
            dev_max: Vec::new(),
            named: Vec::new(),
            dev_ts: Vec::new(),
            faults: 0,
            swapoff_open: HashMap::new(),
            swapoffs: Vec::new(),
            out_freed: false,
            stored_frees: false,
            write_ends: false,
            reclaimed: false,
            stored: HashMap::default(),
            cached: HashMap::default(),
            recent_outs: HashMap::default(),
        }
    }

    /// A builder for a trace of header `h`: what the recording tells of
    /// the swap cache.
    pub(super) fn for_header(h: &Header) -> InputBuilder {
        InputBuilder::new(h.page_size)
            .out_freed(h.records_out_freed())
            .stored_frees(h.records_stored_frees())
            .write_ends(h.write_ends == Some(true))
    }

    /// The trace records when each device write's I/O ended
    /// ([`Record::WriteEnd`]).
    pub fn write_ends(mut self, on: bool) -> InputBuilder {
        self.write_ends = on;
        self
    }

    /// Device-written folios stay in the swap cache until their
    /// [`Record::OutFreed`] (the trace recorded them: `on`).
    pub fn out_freed(mut self, on: bool) -> InputBuilder {
        self.out_freed = on;
        self
    }

    /// The trace records the frees of folios stored to zswap or
    /// zero-filled as well: those stay in the swap cache until freed, as
    /// device-written ones (6.18's reclaim may keep them for seconds).
    pub fn stored_frees(mut self, on: bool) -> InputBuilder {
        self.stored_frees = on;
        self
    }

    pub fn add(&mut self, r: &Record) {
        let mut events = std::mem::take(&mut self.events);
        self.convert(r, &mut events);
        self.events = events;
    }

    /// Whether a fault with a known entry was added.
    pub(super) fn has_faults(&self) -> bool {
        self.faults > 0
    }

    /// Swap-outs and faults naming each device (`SlotTable` sizing).
    pub(super) fn named(&self) -> &[u64] {
        &self.named
    }

    /// The events of one record, pushed to `out` (in record order, not yet
    /// in time order); the counters and swapoffs are kept here.
    pub(super) fn convert(&mut self, r: &Record, out: &mut Vec<Event>) {
        match *r {
            Record::SwapOut {
                ts, tid, entry, nr, ..
            } => {
                if self.recent_outs.len() >= RECENT_TASKS && !self.recent_outs.contains_key(&tid) {
                    let horizon = ts.saturating_sub(1 << 32);
                    self.recent_outs
                        .retain(|_, outs| outs.last().is_some_and(|o| o.0 >= horizon));
                    if self.recent_outs.len() >= RECENT_TASKS {
                        self.recent_outs.clear();
                    }
                }
                let outs = self.recent_outs.entry(tid).or_default();
                if outs.len() == RECENT_OUTS {
                    outs.drain(..RECENT_OUTS / 2);
                }
                outs.push((ts, entry, nr.max(1)));
            }
            Record::SwapFault {
                ts, dur_ns, tid, ..
            } => self.own_reclaim_first(tid, ts, dur_ns, out),
            _ => {}
        }
        let from = out.len();
        self.convert_inner(r, out);
        for e in &out[from..] {
            if let Event::Out { entry, ts, .. } | Event::Fault { entry, ts, .. } = *e {
                let d = entry.dev as usize;
                if self.named.len() <= d {
                    self.named.resize(d + 1, 0);
                    self.dev_ts.resize(d + 1, (u64::MAX, 0));
                }
                self.named[d] += 1;
                self.faults += matches!(e, Event::Fault { .. }) as u64;
                let t = &mut self.dev_ts[d];
                *t = (t.0.min(ts), t.1.max(ts));
            }
        }
    }

    /// The pages a non-empty byte range `[start, end)` touches.
    fn pages_of(&self, start: u64, end: u64) -> (u64, u64) {
        (start >> self.shift, ((end - 1) >> self.shift) + 1)
    }

    fn convert_inner(&mut self, r: &Record, out: &mut Vec<Event>) {
        match *r {
            Record::SwapOut {
                ts,
                mm,
                vaddr,
                entry,
                nr,
                how,
                ..
            } if mm != 0 => {
                // nr 0 as 1.
                let nr = nr.max(1);
                if !entry.folio_fits(nr) {
                    self.bad_records += 1;
                    return;
                }
                let store = Store::of(how);
                // A large stored folio may be split before its pages are
                // freed, and only its head is watched: it leaves at once.
                let lingers =
                    self.out_freed && (store == Store::Device || (self.stored_frees && nr == 1));
                for (i, e) in entry.folio(nr as u64).enumerate() {
                    let i = i as u64;
                    if self.out_freed && !lingers && store == Store::Zswap {
                        self.stored.insert(e, ts);
                    } else {
                        self.stored.remove(&e);
                    }
                    note_max(&mut self.dev_max, e);
                    out.push(Event::Out {
                        ts,
                        mm,
                        vpage: (vaddr >> self.shift) + i,
                        entry: e,
                        store,
                        lingers,
                        in_fault: false,
                    });
                }
            }
            // No owner: a swap-cache folio never mapped (read ahead; a 6.12
            // zswap load leaves it dirty) written again to its entry. Its
            // page keeps the entry; its free, which follows, is the model's
            // to apply.
            Record::SwapOut { ts, entry, nr, .. } if entry.plausible() => {
                for e in entry.folio((nr.max(1) as u64).min(MAX_FOLIO_PAGES as u64)) {
                    self.stored.remove(&e);
                    out.push(Event::Rewritten { ts, entry: e });
                }
            }
            Record::SwapFault {
                entry: Some(entry), ..
            } if !entry.plausible() => self.bad_records += 1,
            Record::SwapFault {
                ts,
                tid,
                mm,
                addr,
                entry: Some(entry),
                write,
                pages_read,
                zero_reads,
                zswap_loads,
                dur_ns,
                ..
            } => {
                self.stored.remove(&entry);
                // The fault's own lookup: same task and entry, after its start.
                let cached = self
                    .cached
                    .remove(&tid)
                    .is_some_and(|(e, at)| e == entry && at >= ts);
                note_max(&mut self.dev_max, entry);
                out.push(Event::Fault {
                    ts,
                    mm,
                    vpage: addr >> self.shift,
                    entry,
                    write,
                    read: pages_read
                        .saturating_add(zero_reads)
                        .saturating_add(zswap_loads),
                    cached,
                    dur: dur_ns,
                });
            }
            Record::SwapFault {
                tid, entry: None, ..
            } => {
                self.cached.remove(&tid);
                self.unknown_faults += 1
            }
            Record::CacheLookup {
                ts,
                tid,
                entry,
                hit,
                ra_hit,
            } => {
                if hit && !ra_hit {
                    self.cached.insert(tid, (entry, ts));
                } else {
                    self.cached.remove(&tid);
                }
            }
            Record::Isolated { ts, entry } if entry.plausible() => {
                out.push(Event::Isolated { ts, entry });
            }
            Record::WriteEnd { ts, entry, nr } if self.write_ends && entry.folio_fits(nr) => {
                out.push(Event::WriteEnd { ts, entry, nr });
            }
            Record::OutFreed { ts, entry, nr } if self.out_freed => {
                // A large folio freed whole frees every page's entry.
                let nr = nr.max(1);
                if !entry.folio_fits(nr) {
                    self.bad_records += 1;
                    return;
                }
                for entry in entry.folio(nr as u64) {
                    let own = self
                        .stored
                        .remove(&entry)
                        .is_some_and(|at| ts.abs_diff(at) < OWN_FREE_NS);
                    out.push(if own {
                        Event::Paid { ts }
                    } else {
                        Event::Freed { ts, entry }
                    });
                }
            }
            Record::ZswapWriteback {
                ts,
                entry: Some(entry),
                ..
            } if self.out_freed && entry.plausible() => {
                // Its folio's free is not the store's own.
                self.stored.remove(&entry);
                out.push(Event::WrittenBack { ts, entry })
            }
            Record::ZswapWriteback { ts, nr, .. } if self.out_freed && nr > 0 => {
                out.push(Event::Writeback { ts, nr })
            }
            Record::Reclaim { begin: true, .. } => self.reclaimed = true,
            Record::Vma { ts, mm, start, end }
            | Record::Unmapped { ts, mm, start, end }
            | Record::Zapped { ts, mm, start, end }
                if end > start =>
            {
                let (start, end) = self.pages_of(start, end);
                out.push(match r {
                    Record::Vma { .. } => Event::Vma { ts, mm, start, end },
                    Record::Unmapped { .. } => Event::Unmapped { ts, mm, start, end },
                    _ => Event::Zapped { ts, mm, start, end },
                })
            }
            Record::WillNeed {
                ts,
                tid,
                mm,
                start,
                end,
                nr,
                ..
            } if end > start => {
                let (start, end) = self.pages_of(start, end);
                out.push(Event::WillNeed {
                    ts,
                    tid,
                    mm,
                    start,
                    end,
                    read: nr,
                })
            }
            Record::Moved {
                ts,
                mm,
                from,
                to,
                len,
            } if len > 0 => out.push(Event::Moved {
                ts,
                mm,
                from: from >> self.shift,
                to: to >> self.shift,
                len: ((len - 1) >> self.shift) + 1,
            }),
            Record::Syscall {
                ts,
                tid,
                call: Syscall::Swapoff,
                ret,
            } => match ret {
                None => {
                    self.swapoff_open.insert(tid, ts);
                }
                Some(ret) => {
                    if let Some(from) = self.swapoff_open.remove(&tid) {
                        if ret == 0 {
                            self.swapoffs.push((from, ts));
                        }
                    }
                }
            },
            _ => {}
        }
    }

    /// The device each swapoff removed: the trace records the path, not the
    /// swap type, so it is the device with entries before the swapoff and
    /// none after it. Ambiguous or unknown ones are counted, not replayed.
    /// The events, in the order they are added to the time-sorted events.
    pub(super) fn resolve_swapoffs(&self) -> (Vec<Event>, u64) {
        let (mut out, mut unknown) = (Vec::new(), 0);
        for &(from, to) in &self.swapoffs {
            let (mut before, mut after) = (0u64, 0u64);
            for (dev, &(first, last)) in self.dev_ts.iter().enumerate() {
                let bit = 1u64 << (dev & 63);
                if first < from {
                    before |= bit;
                }
                if last > to {
                    after |= bit;
                }
            }
            let gone = before & !after;
            if gone.count_ones() == 1 {
                out.push(Event::Swapoff {
                    ts: from,
                    dev: gone.trailing_zeros() as u8,
                });
            } else {
                unknown += 1;
            }
        }
        (out, unknown)
    }

    /// Whether the events so far (and the swapoffs) leave anything to replay.
    pub(super) fn check_replayable(
        &self,
        faults: bool,
        swapoffs: &[Event],
    ) -> Result<(), ReplayError> {
        if faults || !swapoffs.is_empty() {
            Ok(())
        } else {
            Err(ReplayError::NothingToReplay {
                unknown_faults: self.unknown_faults,
                bad_records: self.bad_records,
            })
        }
    }

    /// The input without its events (a streamed replay's).
    pub(super) fn meta(
        &self,
        page_cluster: u32,
        memory_pages: usize,
        unknown_swapoffs: u64,
    ) -> ReplayInput {
        ReplayInput {
            events: Vec::new(),
            page_cluster,
            dev_max: self.dev_max.clone(),
            memory_pages,
            unknown_faults: self.unknown_faults,
            unknown_swapoffs,
            bad_records: self.bad_records,
            swapoff_mode: SwapoffMode::LookupStats,
            frees: self.out_freed,
            pressure: self.out_freed && self.reclaimed,
            write_ends: self.write_ends,
            keeps_unmapped_dirty: false,
            isolation_clears_readahead: false,
            synchronous: Vec::new(),
        }
    }

    pub fn finish(
        mut self,
        page_cluster: u32,
        memory_pages: usize,
    ) -> Result<ReplayInput, ReplayError> {
        let (swapoffs, unknown_swapoffs) = self.resolve_swapoffs();
        let faults = self.events.iter().any(|e| matches!(e, Event::Fault { .. }));
        self.check_replayable(faults, &swapoffs)?;
        self.events.extend(swapoffs);
        // Faults are recorded at their end; order all by time (stable).
        self.events.sort_by_key(Event::ts);
        Ok(ReplayInput {
            events: self.events,
            page_cluster,
            dev_max: self.dev_max,
            memory_pages,
            unknown_faults: self.unknown_faults,
            unknown_swapoffs,
            bad_records: self.bad_records,
            swapoff_mode: SwapoffMode::LookupStats,
            frees: self.out_freed,
            pressure: self.out_freed && self.reclaimed,
            write_ends: self.write_ends,
            keeps_unmapped_dirty: false,
            isolation_clears_readahead: false,
            synchronous: Vec::new(),
        })
    }
}

fn note_max(m: &mut Vec<u64>, e: SwapEntry) {
    let d = e.dev as usize;
    if m.len() <= d {
        m.resize(d + 1, 0);
    }
    m[d] = m[d].max(e.offset);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Task `tid` swaps page `i` out at time `ts`.
    fn out(ts: u64, tid: u32, i: u64) -> Record {
        Record::SwapOut {
            ts,
            tid,
            mm: 1,
            vaddr: i << 12,
            entry: SwapEntry {
                dev: 0,
                offset: i + 1,
            },
            nr: 1,
            how: OutKind::Io,
        }
    }

    /// The swap-outs kept for the faults' own reclaim stay bounded however
    /// many tasks swap out and never fault (kswapd, exited tasks).
    #[test]
    fn swap_outs_kept_for_faults_are_bounded() {
        let mut b = InputBuilder::new(4096);
        let mut events = Vec::new();
        for i in 0..200_000u64 {
            let tid = (i % 1000) as u32 + if i < 100_000 { 0 } else { 5000 };
            b.convert(&out(i, tid, i), &mut events);
            assert!(b.recent_outs.len() <= RECENT_TASKS, "{i}");
        }
        // One task alone keeps its latest.
        for i in 0..20_000u64 {
            b.convert(&out(300_000 + i, 7, i), &mut events);
        }
        let kept = &b.recent_outs[&7];
        assert!(kept.len() <= RECENT_OUTS);
        assert_eq!(kept.last().map(|o| o.0), Some(319_999));
    }
}
