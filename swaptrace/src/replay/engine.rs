//! The replay engine: swap space, swap cache and metrics; policies decide
//! only what a swap-cache miss reads.

use super::policies::Policy;
use super::ReplayError;
use crate::trace::{Loaded, OutKind, Record, SwapEntry, Syscall};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// One input event, in trace order.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// A page written to swap: its slot now holds this page.
    Out {
        ts: u64,
        mm: u32,
        vpage: u64,
        entry: SwapEntry,
        zero: bool,
    },
    /// A swap-in fault on a page whose swap entry is known.
    Fault {
        ts: u64,
        mm: u32,
        vpage: u64,
        entry: SwapEntry,
    },
    /// A successful swapoff of device `dev` began: `try_to_unuse()` walks
    /// the page tables and swaps in every PTE that holds one of its entries.
    Swapoff { ts: u64, dev: u8 },
}

impl Event {
    fn ts(&self) -> u64 {
        match self {
            Event::Out { ts, .. } | Event::Fault { ts, .. } | Event::Swapoff { ts, .. } => *ts,
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
    /// 5.8 to 6.17 (seed 000): `lookup_swap_cache()`/`swap_cache_get_folio()`
    /// counts the hit (`swap_update_readahead()`), readahead only on a miss.
    LookupStats,
    /// 6.18 on: `swap_cache_get_folio(entry)` without `swap_update_readahead()`
    /// (readahead statistics split from the lookup): no hit is counted.
    LookupNoStats,
}

impl SwapoffMode {
    /// The behaviour of a kernel release such as "6.18.0-1-amd64".
    pub fn for_release(release: &str) -> SwapoffMode {
        let v = crate::probe::kernel_version(release);
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
    /// What plain `cluster`/`vma` do at swapoff: the recording kernel's way.
    pub swapoff_mode: SwapoffMode,
}

impl ReplayInput {
    pub fn from_trace(t: &Loaded, memory_pages: usize) -> Result<ReplayInput, ReplayError> {
        let mut b = InputBuilder::new(t.header.page_size);
        for r in &t.records {
            b.add(r);
        }
        let mut input = b.finish(t.header.readahead.page_cluster.unwrap_or(3), memory_pages)?;
        input.swapoff_mode = SwapoffMode::for_release(&t.header.kernel_release);
        Ok(input)
    }
}

/// Collects replay events from records, one at a time.
pub struct InputBuilder {
    shift: u32,
    events: Vec<Event>,
    unknown_faults: u64,
    dev_max: Vec<u64>,
    /// swapoff entered, by task: entry time.
    swapoff_open: HashMap<u32, u64>,
    /// Successful swapoffs: (entry time, exit time).
    swapoffs: Vec<(u64, u64)>,
}

impl InputBuilder {
    pub fn new(page_size: u64) -> InputBuilder {
        InputBuilder {
            shift: page_size.max(1).trailing_zeros(),
            events: Vec::new(),
            unknown_faults: 0,
            dev_max: Vec::new(),
            swapoff_open: HashMap::new(),
            swapoffs: Vec::new(),
        }
    }

    pub fn add(&mut self, r: &Record) {
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
                for i in 0..nr.max(1) as u64 {
                    let e = SwapEntry {
                        dev: entry.dev,
                        offset: entry.offset + i,
                    };
                    note_max(&mut self.dev_max, e);
                    self.events.push(Event::Out {
                        ts,
                        mm,
                        vpage: (vaddr >> self.shift) + i,
                        entry: e,
                        zero: how == OutKind::Zero,
                    });
                }
            }
            Record::SwapFault {
                ts,
                mm,
                addr,
                entry: Some(entry),
                ..
            } => {
                note_max(&mut self.dev_max, entry);
                self.events.push(Event::Fault {
                    ts,
                    mm,
                    vpage: addr >> self.shift,
                    entry,
                });
            }
            Record::SwapFault { entry: None, .. } => self.unknown_faults += 1,
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
    fn resolve_swapoffs(&mut self) -> u64 {
        let mut unknown = 0;
        for &(from, to) in &self.swapoffs {
            let (mut before, mut after) = (0u64, 0u64);
            for e in &self.events {
                let dev = match *e {
                    Event::Out { entry, .. } | Event::Fault { entry, .. } => entry.dev,
                    Event::Swapoff { .. } => continue,
                };
                let bit = 1u64 << (dev & 63);
                if e.ts() < from {
                    before |= bit;
                } else if e.ts() > to {
                    after |= bit;
                }
            }
            let gone = before & !after;
            if gone.count_ones() == 1 {
                self.events.push(Event::Swapoff {
                    ts: from,
                    dev: gone.trailing_zeros() as u8,
                });
            } else {
                unknown += 1;
            }
        }
        unknown
    }

    pub fn finish(
        mut self,
        page_cluster: u32,
        memory_pages: usize,
    ) -> Result<ReplayInput, ReplayError> {
        let unknown_swapoffs = self.resolve_swapoffs();
        if !self
            .events
            .iter()
            .any(|e| matches!(e, Event::Fault { .. } | Event::Swapoff { .. }))
        {
            return Err(ReplayError::NothingToReplay);
        }
        // Faults are recorded at their end; order all by time (stable).
        self.events.sort_by_key(Event::ts);
        Ok(ReplayInput {
            events: self.events,
            page_cluster,
            dev_max: self.dev_max,
            memory_pages,
            unknown_faults: self.unknown_faults,
            unknown_swapoffs,
            swapoff_mode: SwapoffMode::LookupStats,
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

#[derive(Clone, Copy, Debug, PartialEq)]
enum Cache {
    /// On disk only.
    No,
    /// In the swap cache, not mapped: read ahead (PG_readahead while `ra`).
    Unused { ra: bool, ts: u64, gen: u32 },
    /// Mapped by the faulting page table (and still in the swap cache);
    /// `referenced` until reclaim has passed it over once.
    Mapped { gen: u32, referenced: bool },
}

impl Cache {
    fn resident(self) -> bool {
        self != Cache::No
    }

    fn gen(self) -> Option<u32> {
        match self {
            Cache::No => None,
            Cache::Unused { gen, .. } | Cache::Mapped { gen, .. } => Some(gen),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    mm: u32,
    vpage: u64,
    zero: bool,
    cache: Cache,
}

/// Swap slots by device and offset: dense arrays, as `swap_map` is.
#[derive(Default)]
struct SlotTable {
    devs: Vec<Vec<Option<Slot>>>,
}

impl SlotTable {
    fn get(&self, e: &SwapEntry) -> Option<&Slot> {
        self.devs
            .get(e.dev as usize)?
            .get(e.offset as usize)?
            .as_ref()
    }

    fn get_mut(&mut self, e: &SwapEntry) -> Option<&mut Slot> {
        self.devs
            .get_mut(e.dev as usize)?
            .get_mut(e.offset as usize)?
            .as_mut()
    }

    #[inline]
    fn prefetch(&self, e: &SwapEntry) {
        if let Some(s) = self
            .devs
            .get(e.dev as usize)
            .and_then(|d| d.get(e.offset as usize))
        {
            prefetch(s);
        }
    }

    fn contains_key(&self, e: &SwapEntry) -> bool {
        self.get(e).is_some()
    }

    fn cell(&mut self, e: &SwapEntry) -> &mut Option<Slot> {
        let (d, o) = (e.dev as usize, e.offset as usize);
        if self.devs.len() <= d {
            self.devs.resize_with(d + 1, Vec::new);
        }
        let dev = &mut self.devs[d];
        if dev.len() <= o {
            dev.resize(o + 1, None);
        }
        &mut dev[o]
    }

    fn insert(&mut self, e: SwapEntry, s: Slot) {
        *self.cell(&e) = Some(s);
    }

    fn remove(&mut self, e: &SwapEntry) -> Option<Slot> {
        self.devs
            .get_mut(e.dev as usize)?
            .get_mut(e.offset as usize)?
            .take()
    }
}

const PMD_PAGES: u64 = 512;

/// The last swap entry of each page, per address space, in PMD-sized
/// leaves (the window's neighbours share a leaf). 0 = none. The PTE holds
/// the entry while the slot is still the page's and not mapped
/// ([`SwapView::swapped_at`]), so faults and reclaim need not touch it.
#[derive(Default)]
struct PageTable {
    leaves: HashMap<u64, Box<[u64; PMD_PAGES as usize]>, BuildHasherDefault<MixHasher>>,
}

/// Leaf key: address space and PMD index (user addresses have < 2^36 PMDs).
fn leaf_key(mm: u32, vpage: u64) -> u64 {
    ((mm as u64) << 36) ^ (vpage / PMD_PAGES)
}

/// A fast hasher for integer keys (multiply and fold): the replay's hot
/// path hashes one u64 per fault, and SipHash's DoS resistance buys nothing.
#[derive(Default)]
struct MixHasher(u64);

impl Hasher for MixHasher {
    fn finish(&self) -> u64 {
        let x = self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        x ^ (x >> 32)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ b as u64;
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 ^= v;
    }
}

fn pack(e: SwapEntry) -> u64 {
    ((e.dev as u64) << 56 | e.offset) + 1
}

fn unpack(v: u64) -> Option<SwapEntry> {
    let v = v.checked_sub(1)?;
    Some(SwapEntry {
        dev: (v >> 56) as u8,
        offset: v & ((1 << 56) - 1),
    })
}

impl PageTable {
    #[inline]
    fn prefetch(&self, mm: u32, vpage: u64) {
        if let Some(leaf) = self.leaves.get(&leaf_key(mm, vpage)) {
            prefetch(&leaf[(vpage % PMD_PAGES) as usize]);
        }
    }

    fn get(&self, &(mm, vpage): &(u32, u64)) -> Option<SwapEntry> {
        let leaf = self.leaves.get(&leaf_key(mm, vpage))?;
        unpack(leaf[(vpage % PMD_PAGES) as usize])
    }

    fn insert(&mut self, (mm, vpage): (u32, u64), e: SwapEntry) -> Option<SwapEntry> {
        let leaf = self
            .leaves
            .entry(leaf_key(mm, vpage))
            .or_insert_with(|| Box::new([0; PMD_PAGES as usize]));
        unpack(std::mem::replace(
            &mut leaf[(vpage % PMD_PAGES) as usize],
            pack(e),
        ))
    }

    fn remove(&mut self, &(mm, vpage): &(u32, u64)) -> Option<SwapEntry> {
        let leaf = self.leaves.get_mut(&leaf_key(mm, vpage))?;
        unpack(std::mem::take(&mut leaf[(vpage % PMD_PAGES) as usize]))
    }
}

/// Read-only view of the swap space for policies.
pub struct SwapView<'a> {
    slots: &'a SlotTable,
    pages: &'a PageTable,
    dev_max: &'a [u64],
}

impl SwapView<'_> {
    /// Whether the slot holds a page (`__read_swap_cache_async` reads only those).
    pub fn allocated(&self, e: SwapEntry) -> bool {
        self.slots.contains_key(&e)
    }

    /// Largest valid offset of a device (`si->max - 1`).
    pub fn dev_max(&self, dev: u8) -> u64 {
        self.dev_max.get(dev as usize).copied().unwrap_or(u64::MAX)
    }

    /// The swap entry in the PTE of (mm, virtual page), if it is swapped out.
    pub fn swapped_at(&self, mm: u32, vpage: u64) -> Option<SwapEntry> {
        let e = self.pages.get(&(mm, vpage))?;
        let s = self.slots.get(&e)?;
        let mapped = matches!(s.cache, Cache::Mapped { .. });
        ((s.mm, s.vpage) == (mm, vpage) && !mapped).then_some(e)
    }
}

/// A fault as policies see it.
#[derive(Clone, Copy, Debug)]
pub struct FaultCtx {
    pub ts: u64,
    pub mm: u32,
    pub vpage: u64,
    pub entry: SwapEntry,
}

/// The replayed counters of one policy.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Metrics {
    pub policy: String,
    pub faults: u64,
    /// Swap-cache misses (PGMAJFAULT).
    pub pgmajfault: u64,
    /// Pages read with I/O (PSWPIN).
    pub pswpin: u64,
    /// Zero-filled pages "read" without I/O (SWPIN_ZERO).
    pub swpin_zero: u64,
    /// Readahead pages read (SWAP_RA).
    pub swap_ra: u64,
    /// Faults on readahead pages (SWAP_RA_HIT).
    pub swap_ra_hit: u64,
    /// Readahead pages evicted unused.
    pub pollution: u64,
    /// Sum of readahead-to-first-use times, ns.
    pub timeliness_ns: u64,
    /// Read requests: runs of contiguous offsets read by one miss.
    pub io_requests: u64,
    /// Readahead window per miss (argdist style: window -> count).
    pub windows: BTreeMap<u32, u64>,
    /// What the swapoff walks did (included in the totals above).
    pub swapoff: Option<SwapoffMetrics>,
}

/// Swap-ins by `try_to_unuse()`: no faults, so no PGMAJFAULT.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SwapoffMetrics {
    /// Swap PTEs walked (`unuse_pte_range()` iterations that swapped in).
    pub ptes: u64,
    pub pswpin: u64,
    pub swpin_zero: u64,
    pub swap_ra: u64,
    pub swap_ra_hit: u64,
    pub io_requests: u64,
    pub windows: BTreeMap<u32, u64>,
}

impl Metrics {
    /// Used readahead / readahead.
    pub fn accuracy(&self) -> f64 {
        ratio(self.swap_ra_hit, self.swap_ra)
    }

    /// Swap-ins served by readahead / swap-ins (faults and swapoff's PTEs).
    pub fn coverage(&self) -> f64 {
        let ptes = self.swapoff.as_ref().map_or(0, |s| s.ptes);
        ratio(self.swap_ra_hit, self.faults + ptes)
    }

    /// Mean time from readahead to first use, µs.
    pub fn timeliness_us(&self) -> f64 {
        ratio(self.timeliness_ns, self.swap_ra_hit) / 1000.0
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

struct Model<'a> {
    input: &'a ReplayInput,
    slots: SlotTable,
    /// Each page's last swap entry (its PTE while swapped out).
    pages: PageTable,
    /// Resident swap-backed pages, oldest first (stale generations skipped).
    lru: VecDeque<LruItem>,
    resident: usize,
    gen: u32,
    m: Metrics,
    /// Entries read by the current miss (reused).
    io: Vec<SwapEntry>,
    /// Window counts up to 64 pages (the common case, kept out of the map).
    small_windows: [u64; 65],
    /// Inside a swapoff walk: the counters also go to `so`.
    in_swapoff: bool,
    so: SwapoffMetrics,
}

/// An LRU position: the slot and the generation that made it current.
#[derive(Clone, Copy)]
struct LruItem {
    entry: u64,
    gen: u32,
}

/// How far ahead the replay loop prefetches events' slots and PTE leaves,
/// and reclaim its LRU's slots (most LRU items are stale and cost only the
/// check): enough to overlap cache misses, few enough to stay in L1
/// (measured with `cargo bench --bench replay`).
const PREFETCH_EVENTS: usize = 16;
const PREFETCH_LRU: usize = 32;

/// A hint to bring `r`'s cache line in; the model's state is far larger
/// than the caches and its accesses random, so overlapping misses pays.
#[inline(always)]
fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint: it reads nothing and cannot fault.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (r as *const T).cast(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

impl Model<'_> {
    fn next_gen(&mut self, e: SwapEntry) -> u32 {
        self.gen = self.gen.wrapping_add(1);
        self.lru.push_back(LruItem {
            entry: pack(e),
            gen: self.gen,
        });
        self.gen
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
            Event::Swapoff { .. } => {}
        }
    }

    fn out(&mut self, mm: u32, vpage: u64, entry: SwapEntry, zero: bool) {
        // The page's previous slot, if another, was freed when it was dirtied.
        if let Some(old) = self.pages.insert((mm, vpage), entry) {
            if old != entry {
                self.drop_slot(old);
            }
        }
        if let Some(s) = self.slots.get(&entry) {
            if (s.mm, s.vpage) != (mm, vpage) {
                self.pages.remove(&(s.mm, s.vpage));
            }
        }
        self.drop_slot(entry);
        self.slots.insert(
            entry,
            Slot {
                mm,
                vpage,
                zero,
                cache: Cache::No,
            },
        );
    }

    fn drop_slot(&mut self, e: SwapEntry) {
        if let Some(s) = self.slots.remove(&e) {
            if s.cache.resident() {
                self.resident -= 1;
            }
        }
    }

    fn fault(&mut self, f: FaultCtx, policy: &mut dyn Policy, scratch: &mut Vec<SwapEntry>) {
        self.m.faults += 1;
        let slot = match self.slots.get(&f.entry) {
            Some(s) => *s,
            None => {
                // A swap-out the trace missed: the fault tells the slot's page.
                let s = Slot {
                    mm: f.mm,
                    vpage: f.vpage,
                    zero: false,
                    cache: Cache::No,
                };
                self.slots.insert(f.entry, s);
                if let Some(old) = self.pages.insert((f.mm, f.vpage), f.entry) {
                    if old != f.entry {
                        self.drop_slot(old);
                    }
                }
                s
            }
        };
        match slot.cache {
            Cache::Unused { ra, ts, .. } => {
                self.cache_hit(&f, ra, ts, policy);
                return;
            }
            Cache::Mapped { .. } => {
                // A fault on a page the model holds mapped: the kernel dropped
                // it; the model's memory is too large. Count it as a miss.
                self.resident -= 1;
                if let Some(s) = self.slots.get_mut(&f.entry) {
                    s.cache = Cache::No;
                }
            }
            Cache::No => {}
        }
        self.m.pgmajfault += 1;
        self.read_around(&f, policy, scratch);
        self.evict();
    }

    /// `swap_cache_get_folio()` found the page; `swap_update_readahead()`
    /// accounts a hit on a readahead page.
    fn cache_hit(&mut self, f: &FaultCtx, ra: bool, ra_ts: u64, policy: &mut dyn Policy) {
        let gen = self.next_gen(f.entry);
        if let Some(s) = self.slots.get_mut(&f.entry) {
            s.cache = Cache::Mapped {
                gen,
                referenced: true,
            };
        }
        if ra {
            self.m.swap_ra_hit += 1;
            self.so.swap_ra_hit += self.in_swapoff as u64;
            self.m.timeliness_ns += f.ts.saturating_sub(ra_ts);
        }
        policy.on_hit(f, ra);
    }

    /// `swapin_readahead()`: the policy's window around `f`, read into the
    /// swap cache, and the faulting page mapped (read too unless cached).
    fn read_around(&mut self, f: &FaultCtx, policy: &mut dyn Policy, scratch: &mut Vec<SwapEntry>) {
        scratch.clear();
        let view = SwapView {
            slots: &self.slots,
            pages: &self.pages,
            dev_max: &self.input.dev_max,
        };
        let window = policy.readahead(f, &view, scratch);
        if self.in_swapoff {
            *self.so.windows.entry(window).or_default() += 1;
        }
        match self.small_windows.get_mut(window as usize) {
            Some(n) => *n += 1,
            None => *self.m.windows.entry(window).or_default() += 1,
        }
        let mut io = std::mem::take(&mut self.io);
        io.clear();
        let (mut ra, mut zero) = (0, 0);
        for &e in scratch.iter() {
            if e == f.entry {
                continue;
            }
            // __read_swap_cache_async(): only allocated slots not in the cache.
            let Some(s) = self.slots.get(&e).copied() else {
                continue;
            };
            if s.cache.resident() {
                continue;
            }
            let gen = self.next_gen(e);
            if let Some(s) = self.slots.get_mut(&e) {
                s.cache = Cache::Unused {
                    ra: true,
                    ts: f.ts,
                    gen,
                };
            }
            // In memory now: its PTE (if swapped) stays a swap entry until faulted.
            if s.zero {
                zero += 1;
            } else {
                io.push(e);
            }
            ra += 1;
            self.resident += 1;
        }
        // The faulting page itself.
        let gen = self.next_gen(f.entry);
        if let Some(s) = self.slots.get_mut(&f.entry) {
            if !s.cache.resident() {
                if s.zero {
                    zero += 1;
                } else {
                    io.push(f.entry);
                }
                self.resident += 1;
            }
            s.cache = Cache::Mapped {
                gen,
                referenced: true,
            };
        }
        // One request per run of contiguous offsets (the plugged reads merge).
        io.sort_unstable();
        let requests = io
            .iter()
            .enumerate()
            .filter(|&(i, e)| i == 0 || io[i - 1].dev != e.dev || io[i - 1].offset + 1 != e.offset)
            .count() as u64;
        let read = io.len() as u64;
        self.m.swap_ra += ra;
        self.m.swpin_zero += zero;
        self.m.pswpin += read;
        self.m.io_requests += requests;
        if self.in_swapoff {
            self.so.swap_ra += ra;
            self.so.swpin_zero += zero;
            self.so.pswpin += read;
            self.so.io_requests += requests;
        }
        self.io = io;
    }

    /// `try_to_unuse()` for device `dev`: each address space's swap PTEs of
    /// that device in address order (`unuse_mm()` → `unuse_pte_range()`),
    /// address spaces in the order first seen (the kernel's mmlist). Since
    /// What a page already in the swap cache does: [`SwapoffMode`].
    fn swapoff(&mut self, ts: u64, dev: u8, policy: &mut dyn Policy, scratch: &mut Vec<SwapEntry>) {
        let mode = policy.swapoff_mode();
        self.in_swapoff = true;
        let mut keys: Vec<u64> = self.pages.leaves.keys().copied().collect();
        keys.sort_unstable();
        for key in keys {
            for i in 0..PMD_PAGES {
                let Some(leaf) = self.pages.leaves.get(&key) else {
                    break;
                };
                let Some(entry) = unpack(leaf[i as usize]).filter(|e| e.dev == dev) else {
                    continue;
                };
                let (mm, vpage) = ((key >> 36) as u32, (key & ((1 << 36) - 1)) * PMD_PAGES + i);
                let Some(slot) = self.slots.get(&entry).copied() else {
                    continue;
                };
                // A present PTE (mapped), or a slot reused by another page.
                if (slot.mm, slot.vpage) != (mm, vpage)
                    || !matches!(slot.cache, Cache::No | Cache::Unused { .. })
                {
                    continue;
                }
                self.pages.remove(&(mm, vpage));
                let f = FaultCtx {
                    ts,
                    mm,
                    vpage,
                    entry,
                };
                self.so.ptes += 1;
                match (slot.cache, mode) {
                    (Cache::No, _) | (_, SwapoffMode::Readahead) => {
                        self.read_around(&f, policy, scratch)
                    }
                    (Cache::Unused { ra, ts, .. }, SwapoffMode::LookupStats) => {
                        self.cache_hit(&f, ra, ts, policy)
                    }
                    _ => {}
                }
                // Mapped again: anonymous memory, no longer the device's.
                self.drop_slot(entry);
                self.evict();
            }
        }
        // Whatever is left of the device (readahead never used) goes.
        if let Some(slots) = self.slots.devs.get_mut(dev as usize) {
            let resident = slots
                .iter()
                .filter(|s| s.is_some_and(|s| s.cache.resident()))
                .count();
            self.resident -= resident;
            slots.clear();
        }
        self.in_swapoff = false;
    }

    /// Beyond capacity, reclaim scans resident pages oldest first, as the
    /// kernel's LRU does (`shrink_folio_list()`): a mapped page that was
    /// referenced gets a second chance, an unused readahead page goes.
    fn evict(&mut self) {
        while self.resident > self.input.memory_pages {
            if let Some(e) = self.lru.get(PREFETCH_LRU).and_then(|n| unpack(n.entry)) {
                self.slots.prefetch(&e);
            }
            let Some(item) = self.lru.pop_front() else {
                break;
            };
            let (Some(e), gen) = (unpack(item.entry), item.gen) else {
                continue;
            };
            let Some(s) = self.slots.get(&e).copied() else {
                continue;
            };
            if s.cache.gen() != Some(gen) {
                continue;
            }
            if let Cache::Mapped {
                referenced: true, ..
            } = s.cache
            {
                let gen = self.next_gen(e);
                if let Some(s) = self.slots.get_mut(&e) {
                    s.cache = Cache::Mapped {
                        gen,
                        referenced: false,
                    };
                }
                continue;
            }
            let Some(s) = self.slots.get_mut(&e) else {
                continue;
            };
            if let Cache::Unused { ra, .. } = s.cache {
                self.m.pollution += ra as u64;
            }
            // Its PTE holds the swap entry again (the page table kept it).
            s.cache = Cache::No;
            self.resident -= 1;
        }
    }
}

/// Replays `input` through `policy`.
pub fn replay(input: &ReplayInput, policy: &mut dyn Policy) -> Metrics {
    let mut model = Model {
        input,
        slots: SlotTable::default(),
        pages: PageTable::default(),
        io: Vec::new(),
        small_windows: [0; 65],
        in_swapoff: false,
        so: SwapoffMetrics::default(),
        lru: VecDeque::new(),
        resident: 0,
        gen: 0,
        m: Metrics {
            policy: policy.name(),
            ..Metrics::default()
        },
    };
    let mut scratch = Vec::with_capacity(64);
    let mut swapoffs = 0;
    for (i, ev) in input.events.iter().enumerate() {
        if let Some(ahead) = input.events.get(i + PREFETCH_EVENTS) {
            model.prefetch_event(ahead);
        }
        match *ev {
            Event::Out {
                mm,
                vpage,
                entry,
                zero,
                ..
            } => model.out(mm, vpage, entry, zero),
            Event::Fault {
                ts,
                mm,
                vpage,
                entry,
            } => model.fault(
                FaultCtx {
                    ts,
                    mm,
                    vpage,
                    entry,
                },
                policy,
                &mut scratch,
            ),
            Event::Swapoff { ts, dev } => {
                model.swapoff(ts, dev, policy, &mut scratch);
                swapoffs += 1;
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::policy_by_name;

    /// Pages 0..n of one address space swapped out in `order`, slots given
    /// in swap-out order from offset 1, then faulted in address order.
    fn input(order: &[u64], memory_pages: usize, zero_every: u64) -> ReplayInput {
        let mut events = Vec::new();
        let mut ts = 0;
        for (i, &p) in order.iter().enumerate() {
            ts += 1;
            events.push(Event::Out {
                ts,
                mm: 1,
                vpage: 0x1000 + p,
                entry: SwapEntry {
                    dev: 0,
                    offset: i as u64 + 1,
                },
                zero: zero_every > 0 && p % zero_every == 0,
            });
        }
        let slot_of: HashMap<u64, u64> = order
            .iter()
            .enumerate()
            .map(|(i, &p)| (p, i as u64 + 1))
            .collect();
        for p in 0..order.len() as u64 {
            ts += 1;
            events.push(Event::Fault {
                ts,
                mm: 1,
                vpage: 0x1000 + p,
                entry: SwapEntry {
                    dev: 0,
                    offset: slot_of[&p],
                },
            });
        }
        ReplayInput {
            events,
            page_cluster: 3,
            dev_max: vec![order.len() as u64],
            memory_pages,
            unknown_faults: 0,
            unknown_swapoffs: 0,
            swapoff_mode: SwapoffMode::LookupStats,
        }
    }

    fn run(name: &str, inp: &ReplayInput) -> Metrics {
        let mut p = policy_by_name(name, inp).unwrap();
        replay(inp, p.as_mut())
    }

    fn shuffled_blocks(n: u64, block: u64) -> Vec<u64> {
        // A fixed permutation of blocks: stride 601 (odd, so a permutation
        // of the power-of-two block count), neighbours far apart.
        let blocks = n / block;
        (0..blocks)
            .map(|i| (i * 601) % blocks)
            .flat_map(|b| (0..block).map(move |j| b * block + j))
            .collect()
    }

    #[test]
    fn sequential_swap_in_grows_the_cluster_window_to_the_cap() {
        let order: Vec<u64> = (0..4096).collect();
        let m = run("cluster", &input(&order, 1 << 20, 0));
        assert_eq!(m.faults, 4096);
        // Every page is read exactly once.
        assert_eq!(m.pswpin, 4096);
        assert_eq!(m.swap_ra, m.pswpin - m.pgmajfault);
        assert_eq!(m.swap_ra_hit, m.faults - m.pgmajfault);
        // Steady state: one miss per 8-page cluster.
        assert!(m.pgmajfault < 4096 / 8 + 8, "{m:?}");
        assert!(
            m.windows.get(&8).copied().unwrap_or(0) > 4096 / 8 - 8,
            "{m:?}"
        );
        assert_eq!(m.pollution, 0);
    }

    #[test]
    fn vma_beats_cluster_when_swap_order_is_not_address_order() {
        let order = shuffled_blocks(4096, 2);
        // Little memory: readahead far from the faults is evicted unused.
        let inp = input(&order, 1024, 0);
        let (c, v) = (run("cluster", &inp), run("vma", &inp));
        assert!(v.pgmajfault < c.pgmajfault, "vma {v:?}\ncluster {c:?}");
        assert!(v.accuracy() > c.accuracy(), "vma {v:?}\ncluster {c:?}");
        // In address order VMA readahead reads whole 8-page windows.
        assert!(v.pgmajfault < 4096 / 8 + 16, "{v:?}");
    }

    #[test]
    fn the_oracle_wastes_nothing_and_leap_follows_strides() {
        // Swapped out with stride 4: cluster reads neighbours that are far
        // away in address order; the oracle reads only what comes next.
        let order: Vec<u64> = (0..4)
            .flat_map(|r| (0..1024u64).map(move |i| i * 4 + r))
            .collect();
        let roomy = input(&order, 1 << 20, 0);
        let o = run("oracle", &roomy);
        assert_eq!((o.pollution, o.swap_ra_hit), (0, o.swap_ra), "{o:?}");
        let tight = input(&order, 48, 0);
        let (c, o, l) = (
            run("cluster", &tight),
            run("oracle", &tight),
            run("leap", &tight),
        );
        eprintln!("cluster {c:?}\noracle {o:?}\nleap {l:?}");
        assert!(o.accuracy() >= c.accuracy(), "oracle {o:?}\ncluster {c:?}");
        // Faults in address order touch offsets with a +1024 stride: Leap's trend.
        assert!(l.pgmajfault < c.pgmajfault, "leap {l:?}\ncluster {c:?}");
    }

    #[test]
    fn no_readahead_means_every_fault_is_a_major_fault() {
        let order: Vec<u64> = (0..512).collect();
        let m = run("none", &input(&order, 1024, 0));
        assert_eq!(
            (m.pgmajfault, m.pswpin, m.swap_ra, m.swap_ra_hit),
            (512, 512, 0, 0)
        );
        assert_eq!(m.windows.get(&1), Some(&512));
    }

    #[test]
    fn memory_for_one_page_evicts_all_readahead_unused() {
        let order: Vec<u64> = (0..1024).collect();
        let m = run("fixed:8", &input(&order, 1, 0));
        assert_eq!(m.swap_ra_hit, 0);
        assert_eq!(m.pollution, m.swap_ra);
        assert_eq!(m.pgmajfault, 1024);
    }

    /// Pages swapped out as `input` does, then a swapoff instead of faults.
    fn swapoff_input(order: &[u64]) -> ReplayInput {
        let mut inp = input(order, 1 << 20, 0);
        inp.events.retain(|e| matches!(e, Event::Out { .. }));
        inp.events.push(Event::Swapoff {
            ts: order.len() as u64 + 1,
            dev: 0,
        });
        inp
    }

    #[test]
    fn swapoff_with_the_fix_grows_the_window_as_seed_000_saw() {
        let order: Vec<u64> = (0..4096).collect();
        let inp = swapoff_input(&order);
        let fix = run("cluster-swapoff-fix", &inp);
        let old = run("cluster-no-swapoff-fix", &inp);
        for m in [&fix, &old] {
            let so = m.swapoff.as_ref().expect("swapoff replayed");
            // Every page comes back once; a walk is not a fault.
            assert_eq!((so.ptes, so.pswpin, m.pgmajfault), (4096, 4096, 0), "{m:?}");
        }
        let (f, o) = (fix.swapoff.unwrap(), old.swapoff.unwrap());
        // With the fix: hits feed the window, mostly 8 pages, one per cluster.
        assert!(
            f.windows.get(&8).copied().unwrap_or(0) > 4096 / 8 - 8,
            "{f:?}"
        );
        assert!(f.windows.values().sum::<u64>() < 4096 / 4, "{f:?}");
        assert_eq!(f.swap_ra_hit, f.swap_ra);
        // Without: every PTE runs swapin_readahead(), no hits: windows of 2.
        assert_eq!(o.windows.values().sum::<u64>(), 4096, "{o:?}");
        assert!(o.windows.get(&2).copied().unwrap_or(0) > 4000, "{o:?}");
        assert_eq!(o.swap_ra_hit, 0);
        assert!(o.io_requests > f.io_requests, "{o:?}\n{f:?}");
    }

    #[test]
    fn swapoff_device_is_resolved_from_the_trace() {
        use crate::trace::Syscall;
        let mut b = InputBuilder::new(4096);
        let out = |ts, dev, offset| Record::SwapOut {
            ts,
            tid: 1,
            mm: 1,
            vaddr: (0x1000 + ts) << 12,
            entry: SwapEntry { dev, offset },
            nr: 1,
            how: OutKind::Io,
        };
        let call = |ts, ret| Record::Syscall {
            ts,
            tid: 9,
            call: Syscall::Swapoff,
            ret,
        };
        for r in [
            out(1, 0, 1),
            out(2, 1, 1),
            call(10, None),
            call(20, Some(0)),
            out(30, 1, 2),
            // A failed swapoff is not replayed.
            call(40, None),
            call(41, Some(-12)),
        ] {
            b.add(&r);
        }
        let inp = b.finish(3, 100).unwrap();
        let offs: Vec<_> = inp
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Swapoff { ts, dev } => Some((*ts, *dev)),
                _ => None,
            })
            .collect();
        assert_eq!(offs, vec![(10, 0)]);
        assert_eq!(inp.unknown_swapoffs, 0);
    }

    #[test]
    fn zero_pages_are_read_without_io() {
        let order: Vec<u64> = (0..1024).collect();
        let m = run("none", &input(&order, 1024, 4));
        assert_eq!(m.swpin_zero, 256);
        assert_eq!(m.pswpin, 768);
    }
}
