//! The replay engine: swap space, swap cache and metrics; a policy decides
//! only what a swap-cache miss reads. It knows policies by their trait.

use super::error::ReplayError;
use super::input::{Event, ReplayInput, Store};
use super::lru::Lists;
use super::metrics::{Metrics, SwapoffMetrics};
use super::pages::PageTable;
use super::policy::{FaultCtx, Policy};
use super::space::{pack, Cache, Slot, SlotTable};
use crate::trace::SwapEntry;
use std::collections::VecDeque;

struct Model<'a> {
    input: &'a ReplayInput,
    slots: SlotTable,
    /// Each page's last swap entry (its PTE while swapped out).
    pages: PageTable,
    lists: Lists,
    resident: usize,
    /// Resident pages on the active list.
    n_active: usize,
    m: Metrics,
    /// Entries read by the current miss (reused).
    io: Vec<SwapEntry>,
    /// Window counts up to 64 pages (the common case, kept out of the map).
    small_windows: [u64; 65],
    /// Inside a swapoff walk: the counters also go to `so`.
    in_swapoff: bool,
    so: SwapoffMetrics,
    /// Where the trace tells the kernel's frees and recorded reclaim
    /// (memory was full, [`ReplayInput::frees`]): the pages this model
    /// holds beyond the kernel's (reads beyond the kernel's, pages the
    /// kernel freed that it keeps, less the kernel's pages it never had).
    /// Memory was as full: above 0 each kernel free (its reclaim runs
    /// then) also reclaims the model's oldest page, until paid; a read-back
    /// without pressure frees nothing, and pays nothing. Below 0 a page the
    /// kernel freed stays.
    debt: i64,
    /// Pages zswap wrote back whose folio's free has not come yet.
    writebacks: u64,
    /// Readahead pages the kernel may not hold, in the order read: those
    /// of a fault that read more pages than the kernel's did.
    suspects: VecDeque<(u64, SwapEntry)>,
    /// The readahead pages the current fault read.
    fault_ra: Vec<SwapEntry>,
    /// Folios left in the swap cache after their write, in the order
    /// written, with their LRU generation: [`Model::take_victim`].
    victims: VecDeque<(SwapEntry, u32)>,
    /// Read time of the newest unused readahead page the kernel freed.
    ra_horizon: u64,
    /// Slots the next fault's own reclaim filled ([`Event::Out`]'s
    /// `in_fault`): free until its first allocation.
    fault_reclaimed: Vec<SwapEntry>,
    /// The last `madvise(MADV_WILLNEED)` read: (tid, mm, range), and the
    /// page its walk goes on from ([`Model::willneed`]).
    willneed: ((u32, u32, u64, u64), u64),
}

/// A flag of an unused folio ([`Cache::Unused`]) that [`Model::clear_unused`]
/// clears.
#[derive(Clone, Copy)]
enum UnusedFlag {
    /// `ra`: PG_readahead.
    Readahead,
    /// `writing`: PG_reclaim, its write's I/O going on.
    Writing,
}

/// How far ahead the replay loop prefetches events' slots and PTE leaves,
/// and reclaim its LRU's slots (most LRU items are stale and cost only the
/// check): enough to overlap cache misses, few enough to stay in L1
/// (measured with `cargo bench --bench replay`).
const PREFETCH_EVENTS: usize = 16;
const PREFETCH_LRU: usize = 32;

mod read;
mod reclaim;
mod swapoff;

impl Model<'_> {
    /// A new generation for `e`, at the tail of the inactive list.
    fn next_gen(&mut self, e: SwapEntry) -> u32 {
        self.lists.push(false, pack(e))
    }

    /// The faulting page mapped, referenced, at the tail of the inactive
    /// list; `dirty` when the fault freed its slot ([`Model::fault`]).
    fn map(&mut self, e: SwapEntry, dirty: bool, spared: bool) {
        let gen = self.next_gen(e);
        let cache = Cache::Mapped {
            gen,
            referenced: true,
            spared,
            dirty,
            active: false,
        };
        self.slots.set_cache(&e, cache);
    }

    /// Prefetches what handling `ev` will touch first.
    #[inline]
    fn prefetch_event(&self, ev: &Event) {
        match *ev {
            Event::Fault { entry, .. } => self.slots.prefetch(&entry),
            Event::Out {
                mm, vpage, entry, ..
            } => {
                self.slots.prefetch(&entry);
                self.pages.prefetch(mm, vpage);
            }
            Event::Freed { entry, .. } => self.slots.prefetch(&entry),
            Event::Swapoff { .. }
            | Event::Vma { .. }
            | Event::Unmapped { .. }
            | Event::Zapped { .. }
            | Event::Moved { .. }
            | Event::WillNeed { .. }
            | Event::Writeback { .. }
            | Event::Paid { .. } => {}
            Event::Rewritten { entry, .. } | Event::Isolated { entry, .. } => {
                self.slots.prefetch(&entry)
            }
            Event::WrittenBack { entry, .. } | Event::WriteEnd { entry, .. } => {
                self.slots.prefetch(&entry)
            }
        }
    }

    /// A swap-out; the folio of a device write that `lingers` stays in the
    /// swap cache, unmapped and not read ahead, until reclaim frees it
    /// ([`Model::freed`]): a fault meanwhile is minor.
    fn out(&mut self, ts: u64, mm: u32, vpage: u64, entry: SwapEntry, store: Store, lingers: bool) {
        // The page's previous slot, if another, was freed when it was dirtied,
        // or by its read fault. A slot that goes to another page was freed
        // too: a read fault's, where the model kept it.
        let kept_at_read =
            |s: Slot, own: bool| own && matches!(s.cache, Cache::Mapped { dirty: false, .. });
        if let Some(old) = self.pages.insert((mm, vpage), entry) {
            if old != entry {
                if let Some(s) = self.slots.get(&old) {
                    let own = (s.mm, s.vpage) == (mm, vpage);
                    self.m.slots_freed_at_read += kept_at_read(s, own) as u64;
                }
                self.drop_slot(old);
            }
        }
        if let Some(s) = self.slots.get(&entry) {
            if (s.mm, s.vpage) != (mm, vpage) {
                let own = self.pages.get(&(s.mm, s.vpage)) == Some(entry);
                self.m.slots_freed_at_read += kept_at_read(s, own) as u64;
                self.pages.remove(&(s.mm, s.vpage));
            }
        }
        self.drop_slot(entry);
        self.slots.insert(
            entry,
            Slot {
                mm,
                vpage,
                store,
                cache: Cache::No,
            },
        );
        if lingers {
            // pageout() set PG_reclaim for the write; its I/O ends at the
            // trace's write_end.
            let writing = self.input.write_ends && store == Store::Device;
            self.cache_unmapped(entry, ts, writing);
        }
    }

    /// The I/O of the writes of `nr` pages from `entry` ended:
    /// `folio_end_writeback()` cleared PG_reclaim of the folios still
    /// unused (a fault before cleared it itself).
    fn write_ended(&mut self, entry: SwapEntry, nr: u32) {
        for e in entry.folio(u64::from(nr)) {
            self.clear_unused(e, UnusedFlag::Writing);
        }
    }

    /// `entry`'s folio is in the swap cache, unmapped and not read ahead
    /// (waiting after its write, or zswap's writeback of it); `writing`
    /// while its write's I/O goes on.
    fn cache_unmapped(&mut self, entry: SwapEntry, ts: u64, writing: bool) -> Cache {
        let gen = self.next_gen(entry);
        if self.input.frees {
            if self.victims.len() >= self.queue_cap() {
                self.victims.pop_front();
            }
            self.victims.push_back((entry, gen));
        }
        self.cache_unused(entry, ts, gen, writing)
    }

    /// `entry`'s folio in memory, unmapped and not read ahead, at LRU
    /// generation `gen`.
    fn cache_unused(&mut self, entry: SwapEntry, ts: u64, gen: u32, writing: bool) -> Cache {
        let cache = Cache::Unused {
            ra: false,
            ts,
            gen,
            kept: false,
            writing,
        };
        self.slots.set_cache(&entry, cache);
        self.resident += 1;
        cache
    }

    /// `entry`'s folio, unused, loses `flag` (if it had it): without
    /// PG_readahead, or once its write's I/O ended, a fault on it is a
    /// plain hit. Whether it had.
    fn clear_unused(&mut self, entry: SwapEntry, flag: UnusedFlag) -> bool {
        let Some(Slot {
            cache: mut cache @ Cache::Unused { .. },
            ..
        }) = self.slots.get(&entry)
        else {
            return false;
        };
        let Cache::Unused { ra, writing, .. } = &mut cache else {
            return false;
        };
        let set = match flag {
            UnusedFlag::Readahead => ra,
            UnusedFlag::Writing => writing,
        };
        if !std::mem::take(set) {
            return false;
        }
        self.slots.set_cache(&entry, cache);
        true
    }

    /// Reclaim wrote `entry`'s unmapped folio again: a readahead page it
    /// was, unused, no longer (`pageout()` clears PG_reclaim, alias
    /// PG_readahead).
    fn rewritten(&mut self, entry: SwapEntry) {
        if self.clear_unused(entry, UnusedFlag::Readahead) {
            self.m.pollution += 1;
        }
    }

    /// Reclaim isolated `entry`'s folio, read ahead from zswap, and keeps
    /// it: where MGLRU's `isolate_folio()` cleared its PG_readahead (the
    /// bit of PG_reclaim). Another policy's page the kernel did not hold
    /// is not named, and keeps its flag.
    fn isolated(&mut self, entry: SwapEntry) {
        if self.input.isolation_clears_readahead {
            self.clear_unused(entry, UnusedFlag::Readahead);
        }
    }

    /// `zswap_writeback_entry()` wrote `entry`'s page to the device through
    /// a swap-cache folio of its own, which stays until its free (a fault
    /// meanwhile finds it; readahead passes over it) or reclaim: a fault the
    /// kernel served without a read finds it even where the model reclaimed
    /// it ([`Model::fault`]). It fails where the page is in the swap cache:
    /// where the model holds it, only the store changes.
    fn written_back(&mut self, entry: SwapEntry, ts: u64) {
        let Some(mut s) = self.slots.get(&entry) else {
            return;
        };
        if s.store != Store::WrittenBack {
            s.store = Store::WrittenBack;
            self.slots.insert(entry, s);
        }
        if s.cache == Cache::No {
            // Written with PG_reclaim set: at the end of its write the folio
            // goes where reclaim looks first.
            let gen = self.lists.push_reclaim_first(pack(entry));
            self.cache_unused(entry, ts, gen, false);
        }
    }

    /// A recorded zswap writeback not yet matched to its folio made the
    /// folio of `entry`, a page in zswap and not in memory: the page is on
    /// the device from now (`zswap_writeback_entry()`).
    fn claim_writeback(&mut self, entry: SwapEntry, s: &mut Slot) -> bool {
        if s.cache != Cache::No || s.store != Store::Zswap || self.writebacks == 0 {
            return false;
        }
        self.writebacks -= 1;
        s.store = Store::Device;
        self.slots.insert(entry, *s);
        true
    }

    /// The kernel freed the swap-cache folio of `entry`: one waiting after
    /// its write, a readahead page never used, or a clean mapped one that
    /// reclaim dropped to its slot without a write (`__remove_mapping()`).
    /// A dirty page's slot is gone.
    fn freed(&mut self, entry: SwapEntry) {
        let Some(mut s) = self.slots.get(&entry) else {
            // A folio the model holds no slot for (read ahead by the kernel
            // alone, or its range unmapped since): where the kernel held
            // pages beyond the model's, one of those went.
            if self.debt < 0 {
                self.debt += 1;
            }
            return;
        };
        if self.claim_writeback(entry, &mut s) {
            self.evict(1);
            return;
        }
        if !matches!(
            s.cache,
            Cache::Unused { .. } | Cache::Mapped { dirty: false, .. }
        ) {
            if !s.cache.resident() && self.input.pressure {
                // The kernel's page, never this model's: memory evens out.
                self.debt += 1;
            }
            self.evict(1);
            return;
        }
        let read_ahead = match s.cache {
            Cache::Unused { ra: true, ts, .. } => Some(ts),
            _ => None,
        };
        if let Some(ts) = read_ahead {
            self.ra_horizon = self.ra_horizon.max(ts);
        }
        if self.debt < 0 {
            self.debt += 1;
            // The memory the kernel's extra reads took is free here: an
            // unmapped folio stays. A mapped one goes all the same: reclaim
            // unmapped it, and kept mapped it would hide its swap PTE from
            // readahead and take the kernel's next fault on it for a hit.
            if let Cache::Unused { kept, .. } = &mut s.cache {
                *kept = true;
                self.slots.set_cache(&entry, s.cache);
                return;
            }
        }
        self.m.pollution += read_ahead.is_some() as u64;
        self.resident -= 1;
        self.n_active -= s.cache.active() as usize;
        self.slots.set_cache(&entry, Cache::No);
        if let Cache::Unused { gen, .. }
        | Cache::Mapped {
            gen, active: false, ..
        } = s.cache
        {
            self.spare_passed(gen);
        }
        self.evict(1);
    }

    /// Pages `[start, end)` of `mm` were unmapped or zapped (munmap,
    /// madvise): `zap_pte_range()` freed their swap entries
    /// (`free_swap_and_cache()`) and their pages.
    fn unmapped(&mut self, mm: u32, start: u64, end: u64) {
        for (vpage, e) in self.pages.take_range(mm, start, end) {
            // A slot reused by another page since is that page's.
            if self
                .slots
                .get(&e)
                .is_some_and(|s| (s.mm, s.vpage) == (mm, vpage))
            {
                self.drop_slot(e);
            }
        }
    }

    /// `move_vma()`: the PTEs of pages `[from, from + len)` move to `to`,
    /// and a slot whose page moved follows it.
    fn moved(&mut self, mm: u32, from: u64, to: u64, len: u64) {
        for (vpage, e) in self.pages.take_range(mm, from, from.saturating_add(len)) {
            let at = vpage - from + to;
            self.pages.insert((mm, at), e);
            if let Some(mut s) = self
                .slots
                .get(&e)
                .filter(|s| (s.mm, s.vpage) == (mm, vpage))
            {
                s.vpage = at;
                self.slots.insert(e, s);
            }
        }
    }

    fn drop_slot(&mut self, e: SwapEntry) {
        if let Some(s) = self.slots.remove(&e) {
            self.resident -= s.cache.resident() as usize;
            self.n_active -= s.cache.active() as usize;
        }
    }

    fn fault(
        &mut self,
        f: FaultCtx,
        (write, kernel_read, cached, dur): (bool, u32, bool, u32),
        policy: &mut dyn Policy,
        scratch: &mut Vec<SwapEntry>,
    ) {
        self.m.faults += 1;
        let reads_before = self.m.pswpin + self.m.zswpin + self.m.swpin_zero;
        let (mut slot, unseen) = match self.slots.get(&f.entry) {
            Some(s) => (s, false),
            None => {
                // A swap-out the trace missed: the fault tells the slot's page.
                let s = Slot {
                    mm: f.mm,
                    vpage: f.vpage,
                    store: Store::Device,
                    cache: Cache::No,
                };
                self.slots.insert(f.entry, s);
                if let Some(old) = self.pages.insert((f.mm, f.vpage), f.entry) {
                    if old != f.entry {
                        self.drop_slot(old);
                    }
                }
                (s, true)
            }
        };
        // Served without a read, and not in the model's memory: the kernel
        // found the folio in its swap cache, unmapped by reclaim before a
        // write the trace has not seen, made by a zswap writeback, or the
        // folio of a zswap store that reclaim has not freed yet (the model
        // lets those go at the store; the kernel's lookup tells).
        if kernel_read == 0
            && slot.cache == Cache::No
            && (unseen
                || slot.store == Store::WrittenBack
                || (cached && slot.store == Store::Zswap)
                || (self.input.frees && self.claim_writeback(f.entry, &mut slot)))
        {
            slot.cache = self.cache_unmapped(f.entry, f.ts, false);
        }
        // A page shared through fork, swapped out under another address
        // space of the family: the faulting page table is a copy of that
        // one, where the model keeps the swap PTEs.
        let exclusive = (slot.mm, slot.vpage) == (f.mm, f.vpage);
        let mut f = FaultCtx {
            mm: slot.mm,
            vpage: slot.vpage,
            ..f
        };
        // do_swap_page(): should_try_to_free_swap() frees the slot of an
        // exclusive page on a write fault; a read fault keeps it, so that
        // reclaim drops the clean page without writing it. A shared page
        // keeps its slot for the others (a write copies it).
        let dirty = write && exclusive;
        // Read: the kernel's lookup missed, so a folio of its own that the
        // model holds unused (after its write, or a writeback) was freed
        // where the trace did not see it. Not one the model kept after the
        // kernel's free, nor a readahead page.
        if kernel_read > 0 {
            if let Cache::Unused {
                ra: false,
                kept: false,
                ..
            } = slot.cache
            {
                self.resident -= 1;
                self.slots.set_cache(&f.entry, Cache::No);
                slot.cache = Cache::No;
            }
        }
        match slot.cache {
            Cache::Unused {
                ra, ts, writing, ..
            } => {
                if writing {
                    // swap_update_readahead() tests PG_readahead, which is
                    // PG_reclaim: a readahead hit for the kernel.
                    self.m.writeback_hits += 1;
                }
                // No readahead's time to first use.
                let ra_ts = if ra { ts } else { f.ts };
                self.cache_hit(&f, (ra || writing, ra_ts), policy, dirty, false)
            }
            Cache::Mapped { spared, .. } if kernel_read == 0 => {
                // Served without a read: reclaim had unmapped the page
                // (try_to_unmap()) and kept its folio in the swap cache
                // (a large folio's, one still referenced): a hit, and the
                // folio keeps its PG_referenced.
                self.n_active -= slot.cache.active() as usize;
                self.cache_hit(&f, (false, 0), policy, dirty, spared);
            }
            Cache::Mapped { .. } | Cache::No => {
                if slot.cache.resident() {
                    // A fault on a page the model holds mapped: the kernel
                    // dropped it; the model's memory is too large. A miss.
                    self.resident -= 1;
                    self.n_active -= slot.cache.active() as usize;
                    self.slots.set_cache(&f.entry, Cache::No);
                }
                self.m.pgmajfault += 1;
                if exclusive && self.input.synchronous(f.entry) {
                    self.read_alone(f.entry, slot.store);
                } else {
                    // A device read leaves the folio locked: folio_lock_or_retry()
                    // waits for it and the fault retries, at about its end.
                    if matches!(slot.store, Store::Device | Store::WrittenBack) {
                        f.retry = f.ts.saturating_add(u64::from(dur).max(1));
                    }
                    self.read_around(&f, policy, scratch, dirty);
                }
            }
        }
        if self.input.pressure {
            let read = self.m.pswpin + self.m.zswpin + self.m.swpin_zero - reads_before;
            self.debt += read as i64 - kernel_read as i64;
            if read > u64::from(kernel_read) {
                self.suspect(f.ts);
            }
            self.fault_ra.clear();
        }
        self.fault_reclaimed.clear();
        self.evict(0);
    }
}

/// Replays `input` through `policy`.
pub fn replay(input: &ReplayInput, policy: &mut dyn Policy) -> Metrics {
    let slots = SlotTable::for_input(input);
    replay_batches(
        input,
        slots,
        policy,
        std::iter::once(input.events.as_slice()),
    )
}

/// Replays the events of `batches`, in order, through `policy`: `input`
/// gives everything but the events. Holds the batch being replayed, and
/// more only as far as the policy reads ahead ([`Policy::lookahead`]).
pub(super) fn replay_batches<B: AsRef<[Event]>>(
    input: &ReplayInput,
    slots: SlotTable,
    policy: &mut dyn Policy,
    batches: impl Iterator<Item = B>,
) -> Metrics {
    let mut batches = batches.fuse();
    let mut model = Model {
        input,
        slots,
        pages: PageTable::default(),
        io: Vec::new(),
        small_windows: [0; 65],
        in_swapoff: false,
        so: SwapoffMetrics::default(),
        debt: 0,
        writebacks: 0,
        suspects: VecDeque::new(),
        victims: VecDeque::new(),
        fault_ra: Vec::new(),
        ra_horizon: 0,
        fault_reclaimed: Vec::new(),
        willneed: ((0, 0, 0, 0), 0),
        lists: Lists::default(),
        n_active: 0,
        resident: 0,
        m: Metrics {
            policy: policy.name(),
            ..Metrics::default()
        },
    };
    let mut scratch = Vec::with_capacity(64);
    let mut swapoffs = 0;
    // Batches received; the first is being replayed (at `i`).
    let mut queue: VecDeque<B> = VecDeque::new();
    // Where the faults shown to the policy's future end: batch, index.
    let (mut feed_b, mut feed_i, mut fed) = (0usize, 0usize, 0usize);
    let mut i = 0;
    loop {
        while queue.front().is_some_and(|b| i >= b.as_ref().len()) {
            queue.pop_front();
            i = 0;
            match feed_b.checked_sub(1) {
                Some(b) => feed_b = b,
                None => feed_i = 0,
            }
        }
        if queue.is_empty() {
            match batches.next() {
                Some(b) => queue.push_back(b),
                None => break,
            }
            continue;
        }
        // Show the policy the faults it will read, when it may read them:
        // a run of swap-outs is replayed without holding what follows it.
        let reads = matches!(
            queue[0].as_ref()[i],
            Event::Fault { .. } | Event::Swapoff { .. }
        );
        let need = if reads { policy.lookahead() } else { 0 };
        while fed < need {
            let Some(b) = queue.get(feed_b) else {
                match batches.next() {
                    Some(b) => queue.push_back(b),
                    None => break,
                }
                continue;
            };
            let b = b.as_ref();
            match b.get(feed_i) {
                Some(ev) => {
                    if let Event::Fault { entry, .. } = *ev {
                        policy.future(entry);
                        fed += 1;
                    }
                    feed_i += 1;
                }
                None => (feed_b, feed_i) = (feed_b + 1, 0),
            }
        }
        let events = queue[0].as_ref();
        if let Some(ahead) = events.get(i + PREFETCH_EVENTS) {
            model.prefetch_event(ahead);
        }
        match events[i] {
            Event::Out {
                ts,
                mm,
                vpage,
                entry,
                store,
                lingers,
                in_fault,
            } => {
                model.out(ts, mm, vpage, entry, store, lingers && model.input.frees);
                if in_fault {
                    model.fault_reclaimed.push(entry);
                }
            }
            Event::Freed { entry, .. } if model.input.frees => model.freed(entry),
            Event::Freed { .. } => {}
            Event::Writeback { nr, .. } => model.writebacks += nr as u64,
            Event::WrittenBack { ts, entry } if model.input.frees => model.written_back(entry, ts),
            Event::WrittenBack { .. } => {}
            Event::WriteEnd { entry, nr, .. } => model.write_ended(entry, nr),
            Event::Rewritten { entry, .. } => model.rewritten(entry),
            Event::Isolated { entry, .. } => model.isolated(entry),
            Event::Paid { .. } if model.input.pressure => model.evict(1),
            Event::Paid { .. } => {}
            Event::Fault {
                ts,
                mm,
                vpage,
                entry,
                write,
                read,
                cached,
                dur,
            } => model.fault(
                FaultCtx {
                    ts,
                    mm,
                    vpage,
                    entry,
                    retry: 0,
                    kernel_read: read,
                },
                (write, read, cached, dur),
                policy,
                &mut scratch,
            ),
            Event::Swapoff { ts, dev } => {
                model.swapoff(ts, dev, policy, &mut scratch);
                swapoffs += 1;
            }
            Event::Vma { mm, start, end, .. } => policy.on_vma(mm, start, end),
            Event::Unmapped { mm, start, end, .. } => {
                model.unmapped(mm, start, end);
                policy.on_unmap(mm, start, end);
            }
            // The VMAs stay, and with them the policy's state.
            Event::Zapped { mm, start, end, .. } => model.unmapped(mm, start, end),
            Event::Moved {
                mm, from, to, len, ..
            } => {
                model.moved(mm, from, to, len);
                policy.on_move(mm, from, to, len);
            }
            Event::WillNeed {
                ts,
                tid,
                mm,
                start,
                end,
                read,
            } => model.willneed(ts, (tid, mm, start, end), read),
        }
        i += 1;
    }
    if swapoffs > 0 {
        model.m.swapoff = Some(std::mem::take(&mut model.so));
    }
    for (w, &n) in model.small_windows.iter().enumerate() {
        if n > 0 {
            *model.m.windows.entry(w as u32).or_default() += n;
        }
    }
    model.m
}

/// Runs each policy over the same input, in parallel on the cores. A policy
/// that panics is a bug in its model: the replay fails and names it.
pub fn replay_all(
    input: &ReplayInput,
    policies: Vec<Box<dyn Policy>>,
) -> Result<Vec<Metrics>, ReplayError> {
    std::thread::scope(|s| {
        let handles: Vec<_> = policies
            .into_iter()
            .map(|mut p| (p.name(), s.spawn(move || replay(input, p.as_mut()))))
            .collect();
        join_all(handles)
    })
}

/// Joins every policy's thread, then answers: an unjoined panicked thread
/// would make the scope panic. A panic fails the replay, naming the policy.
pub(super) fn join_all(
    handles: Vec<(String, std::thread::ScopedJoinHandle<'_, Metrics>)>,
) -> Result<Vec<Metrics>, ReplayError> {
    let joined: Vec<_> = handles
        .into_iter()
        .map(|(name, h)| (name, h.join()))
        .collect();
    joined
        .into_iter()
        .map(|(name, r)| r.map_err(|_| ReplayError::PolicyPanicked(name)))
        .collect()
}
