//! The readahead replay against a second, independent model of the kernel's
//! swap-in path (mm/swap_state.c and do_swap_page() of 6.x), written from
//! the kernel source and nothing else, in the idealised setting: an
//! unbounded swap cache, one task, order-0 folios, swap less than half
//! full. Random traces are recorded from this model (each record says what
//! the model did, as the recorder says what the kernel did), written to a
//! trace file, and replayed by `swaptrace replay --memory-pages 1000000000`
//! with the policy that made them. Every counter must agree exactly.
//!
//! Ported here:
//! - `__swapin_nr_pages()`, `swapin_nr_pages()` (global `prev_offset`,
//!   `last_readahead_pages`, `swapin_readahead_hits = ATOMIC_INIT(4)`);
//! - `swap_cluster_readahead()`: the aligned cluster, offset 0 (the header)
//!   skipped, free slots skipped by `__read_swap_cache_async()`;
//! - `swap_vma_ra_win()` and `swap_vma_readahead()`: `GET_SWAP_RA_VAL()`
//!   reads 4 for a fresh VMA, `SWAP_RA_ORDER_CEILING` 5, the window clamped
//!   to the VMA and the PMD, present PTEs skipped;
//! - `swap_cache_get_folio()` / `swap_update_readahead()`: PG_readahead
//!   tested and cleared, SWAP_RA_HIT, the VMA's hits (at most 63) and
//!   address, or the global hits;
//! - `swap_read_folio()`: zero-filled (SWPIN_ZERO), zswap (ZSWPIN) or the
//!   device (PSWPIN);
//! - `should_try_to_free_swap()`: a write fault on an exclusive folio frees
//!   the slot, a read fault keeps it (the folio stays in the swap cache);
//! - a SWP_SYNCHRONOUS_IO device (zram): a fault on an entry of swap count
//!   1 reads its page alone, past the swap cache, and frees the slot.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::process::Command;

use swaptrace::lab::SwapDevice;
use swaptrace::trace::{
    Footer, Header, OutKind, Readahead, Record, SwapEntry, TraceWriter, FORMAT_VERSION,
};

const PAGE_SHIFT: u32 = 12;
const PMD_PAGES: u64 = 512;
const SWAP_RA_ORDER_CEILING: u32 = 5;
const SWAP_RA_HITS_MAX: u32 = 63;
const MM: u32 = 1;
const TID: u32 = 7;

fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Policy {
    Cluster,
    Vma,
}

impl Policy {
    fn name(self) -> &'static str {
        match self {
            Policy::Cluster => "cluster",
            Policy::Vma => "vma",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Pte {
    Present,
    Swap(u64),
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    how: OutKind,
    /// A folio of this entry is in the swap cache.
    cached: bool,
    readahead: bool,
}

#[derive(Default, Debug, PartialEq, Clone)]
struct Counters {
    pgmajfault: u64,
    pswpin: u64,
    swpin_zero: u64,
    zswpin: u64,
    swap_ra: u64,
    swap_ra_hit: u64,
}

/// One address space's VMAs, pages, swap slots and readahead state.
struct Kernel {
    policy: Policy,
    page_cluster: u32,
    /// The device is SWP_SYNCHRONOUS_IO (zram).
    synchronous: bool,
    /// VMA start page -> (end page, swap_readahead_info).
    vmas: BTreeMap<u64, (u64, u64)>,
    ptes: HashMap<u64, Pte>,
    /// Slots in use (a swap count, or a folio in the swap cache).
    slots: HashMap<u64, Slot>,
    prev_offset: u64,
    last_readahead_pages: u32,
    swapin_readahead_hits: u32,
    c: Counters,
}

/// `__swapin_nr_pages()`.
fn swapin_nr_pages_inner(prev: u64, offset: u64, hits: u32, max_pages: u32, prev_win: u32) -> u32 {
    let mut pages = hits + 2;
    if pages == 2 {
        if offset != prev.wrapping_add(1) && offset != prev.wrapping_sub(1) {
            pages = 1;
        }
    } else {
        let mut roundup = 4;
        while roundup < pages {
            roundup <<= 1;
        }
        pages = roundup;
    }
    pages = pages.min(max_pages);
    pages.max(prev_win / 2)
}

// SWAP_RA_VAL(addr, win, hits) with PAGE_SHIFT 12: hits in bits 0..6,
// win in bits 6..12, the page address above.
fn ra_val(addr: u64, win: u32, hits: u32) -> u64 {
    (addr << PAGE_SHIFT) | ((win as u64) << 6) | hits as u64
}
fn ra_addr(v: u64) -> u64 {
    v >> PAGE_SHIFT
}
fn ra_win(v: u64) -> u32 {
    ((v >> 6) & 63) as u32
}
fn ra_hits(v: u64) -> u32 {
    (v & 63) as u32
}

impl Kernel {
    fn new(policy: Policy, page_cluster: u32, synchronous: bool, vmas: &[(u64, u64)]) -> Kernel {
        let mut k = Kernel {
            policy,
            page_cluster,
            synchronous,
            vmas: BTreeMap::new(),
            ptes: HashMap::new(),
            slots: HashMap::new(),
            prev_offset: 0,
            last_readahead_pages: 0,
            swapin_readahead_hits: 4,
            c: Counters::default(),
        };
        for &(s, e) in vmas {
            k.vmas.insert(s, (e, 0));
            for p in s..e {
                k.ptes.insert(p, Pte::Present);
            }
        }
        k
    }

    fn vma_of(&self, page: u64) -> u64 {
        let (&s, &(e, _)) = self.vmas.range(..=page).next_back().expect("a VMA");
        assert!(page < e);
        s
    }

    /// `GET_SWAP_RA_VAL()`: 4 hits for a VMA that never read ahead.
    fn ra_info(&self, vma: u64) -> u64 {
        match self.vmas[&vma].1 {
            0 => 4,
            v => v,
        }
    }

    fn set_ra_info(&mut self, vma: u64, v: u64) {
        self.vmas.get_mut(&vma).expect("vma").1 = v;
    }

    /// `swap_read_folio()` of a newly allocated folio.
    fn read(&mut self, offset: u64) {
        let s = self.slots.get_mut(&offset).expect("slot in use");
        s.cached = true;
        match s.how {
            OutKind::Zero => self.c.swpin_zero += 1,
            OutKind::Zswap => self.c.zswpin += 1,
            _ => self.c.pswpin += 1,
        }
    }

    /// `__read_swap_cache_async()` then, where it allocated a folio, the
    /// read and PG_readahead for a page other than the target.
    fn read_async(&mut self, offset: u64, target: bool) {
        if self.slots.get(&offset).is_some_and(|s| !s.cached) {
            self.read(offset);
            if !target {
                self.slots.get_mut(&offset).expect("slot").readahead = true;
                self.c.swap_ra += 1;
            }
        }
    }

    /// `swap_cluster_readahead()`.
    fn cluster_readahead(&mut self, offset: u64) {
        let max_pages = 1u32 << self.page_cluster;
        let pages = if max_pages <= 1 {
            1
        } else {
            let hits = std::mem::take(&mut self.swapin_readahead_hits);
            let p = swapin_nr_pages_inner(
                self.prev_offset,
                offset,
                hits,
                max_pages,
                self.last_readahead_pages,
            );
            if hits == 0 {
                self.prev_offset = offset;
            }
            self.last_readahead_pages = p;
            p
        };
        let mask = pages as u64 - 1;
        if mask != 0 {
            let start = (offset & !mask).max(1);
            for o in start..=(offset | mask) {
                self.read_async(o, o == offset);
            }
        }
        self.read_async(offset, true)
    }

    /// `swap_vma_ra_win()`: the window and `[start, end)` in pages.
    fn vma_ra_win(&mut self, vma: u64, faddr: u64) -> (u32, u64, u64) {
        let max_win = 1u32 << self.page_cluster.min(SWAP_RA_ORDER_CEILING);
        if max_win == 1 {
            return (1, 0, 0);
        }
        let v = self.ra_info(vma);
        let prev = ra_addr(v);
        let win = swapin_nr_pages_inner(prev, faddr, ra_hits(v), max_win, ra_win(v));
        self.set_ra_info(vma, ra_val(faddr, win, 0));
        if win == 1 {
            return (1, 0, 0);
        }
        let w = win as i64;
        let f = faddr as i64;
        let left = if faddr == prev + 1 {
            f
        } else if prev == faddr + 1 {
            f - w + 1
        } else {
            f - (w - 1) / 2
        };
        let right = left + w;
        let left = left.max(0) as u64;
        let pmd = faddr & !(PMD_PAGES - 1);
        let start = left.max(vma).max(pmd);
        let end = (right as u64).min(self.vmas[&vma].0).min(pmd + PMD_PAGES);
        (win, start, end)
    }

    /// `swap_vma_readahead()`.
    fn vma_readahead(&mut self, vma: u64, faddr: u64, offset: u64) {
        let (win, start, end) = self.vma_ra_win(vma, faddr);
        if win != 1 {
            for a in start..end {
                if let Some(Pte::Swap(o)) = self.ptes.get(&a).copied() {
                    self.read_async(o, a == faddr);
                }
            }
        }
        self.read_async(offset, true)
    }

    /// Reclaim wrote the page at `page` to `offset` and freed its folio.
    fn swap_out(&mut self, page: u64, offset: u64, how: OutKind) {
        assert_eq!(self.ptes.get(&page), Some(&Pte::Present));
        self.ptes.insert(page, Pte::Swap(offset));
        self.slots.insert(
            offset,
            Slot {
                how,
                cached: false,
                readahead: false,
            },
        );
    }

    /// `do_swap_page()`: returns (major, hit on a readahead page, the slot
    /// kept).
    fn fault(&mut self, page: u64, write: bool) -> (bool, bool, bool) {
        let Some(Pte::Swap(offset)) = self.ptes.get(&page).copied() else {
            panic!("fault on a present page")
        };
        let vma = self.vma_of(page);
        let vma_ra = self.policy == Policy::Vma;
        let cached = self.slots[&offset].cached;
        if !cached && self.synchronous {
            // SWP_SYNCHRONOUS_IO and __swap_count() == 1 (one address
            // space, no fork): the page alone, past the swap cache; the
            // slot goes with the PTE's swap entry.
            self.c.pgmajfault += 1;
            self.read(offset);
            self.slots.remove(&offset);
            self.ptes.insert(page, Pte::Present);
            return (true, false, false);
        }
        let (major, ra_hit) = if cached {
            let s = self.slots.get_mut(&offset).expect("slot");
            let readahead = std::mem::take(&mut s.readahead);
            if vma_ra {
                let v = self.ra_info(vma);
                let hits = if readahead {
                    (ra_hits(v) + 1).min(SWAP_RA_HITS_MAX)
                } else {
                    ra_hits(v)
                };
                self.set_ra_info(vma, ra_val(page, ra_win(v), hits));
            }
            if readahead {
                self.c.swap_ra_hit += 1;
                if !vma_ra {
                    self.swapin_readahead_hits += 1;
                }
            }
            (false, readahead)
        } else {
            self.c.pgmajfault += 1;
            match self.policy {
                Policy::Cluster => self.cluster_readahead(offset),
                Policy::Vma => self.vma_readahead(vma, page, offset),
            }
            (true, false)
        };
        self.ptes.insert(page, Pte::Present);
        if write {
            self.slots.remove(&offset);
        }
        (major, ra_hit, !write)
    }
}

/// A random trace made by the model: VMAs (some near address 0, some
/// across PMDs), swap-outs in runs and scattered, sequential and random
/// faults, reads and writes, a mix of stores. Returns the records and
/// the model's counters.
fn recorded(
    policy: Policy,
    page_cluster: u32,
    seed: u64,
    lookups: bool,
    synchronous: bool,
) -> (Vec<Record>, Counters) {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut vmas = Vec::new();
    let mut at = if next(&mut x).is_multiple_of(3) {
        next(&mut x) % 8
    } else {
        0x400
    };
    for _ in 0..1 + next(&mut x) % 4 {
        let len = 1 + next(&mut x) % 1200;
        vmas.push((at, at + len));
        at += len + next(&mut x) % 3 * (1 + next(&mut x) % 600);
    }
    let mut k = Kernel::new(policy, page_cluster, synchronous, &vmas);
    let pages: Vec<u64> = vmas.iter().flat_map(|&(s, e)| s..e).collect();
    let mut recs = vec![
        Record::Task {
            tid: TID,
            pid: TID,
            comm: "model".into(),
        },
        Record::AddressSpace { mm: MM, pid: TID },
    ];
    let mut ts = 1_000u64;
    for &(s, e) in &vmas {
        recs.push(Record::Vma {
            ts,
            mm: MM,
            start: s << PAGE_SHIFT,
            end: e << PAGE_SHIFT,
        });
    }
    // Slots: offsets 1..slots, at most a quarter in use (swap never more
    // than half full).
    let nslots = 4 * pages.len() as u64 + 64;
    let mut cursor = 1 + next(&mut x) % nslots;
    let mut last_fault = pages[0];
    // Pages mapped by a read fault, and the slot each keeps.
    let mut kept: HashMap<u64, u64> = HashMap::new();
    let mut swapped = BTreeSet::new();
    for _ in 0..40 + next(&mut x) % 60 {
        // Swap out a run of present pages, or scattered ones.
        let run = 1 + next(&mut x) % 200;
        let scattered = next(&mut x).is_multiple_of(3);
        let mut p = pages[(next(&mut x) % pages.len() as u64) as usize];
        let fresh_slots = !next(&mut x).is_multiple_of(4);
        for _ in 0..run {
            if scattered {
                p = pages[(next(&mut x) % pages.len() as u64) as usize];
            } else {
                p = pages[(pages.binary_search(&p).unwrap_or(0) + 1) % pages.len()];
            }
            if k.ptes[&p] != Pte::Present {
                continue;
            }
            // A read-faulted page keeps its slot: it goes back there.
            let offset = match kept.remove(&p) {
                Some(o) => o,
                None => {
                    if !fresh_slots {
                        cursor = 1 + next(&mut x) % nslots;
                    }
                    while k.slots.contains_key(&cursor) {
                        cursor = cursor % nslots + 1;
                    }
                    cursor
                }
            };
            let how = match next(&mut x) % 10 {
                0 => OutKind::Zero,
                1 => OutKind::Zswap,
                _ => OutKind::Io,
            };
            ts += 1_000;
            k.swap_out(p, offset, how);
            swapped.insert(p);
            recs.push(Record::SwapOut {
                ts,
                tid: TID,
                mm: MM,
                vaddr: p << PAGE_SHIFT,
                entry: SwapEntry { dev: 0, offset },
                nr: 1,
                how,
            });
        }
        // Fault on swapped-out pages: runs up or down, or random.
        let faults = next(&mut x) % 150;
        let mode = next(&mut x) % 4;
        for _ in 0..faults {
            if swapped.is_empty() {
                break;
            }
            let want = match mode {
                0 => last_fault + 1,
                1 => last_fault.saturating_sub(1),
                2 => last_fault + next(&mut x) % 5,
                _ => pages[(next(&mut x) % pages.len() as u64) as usize],
            };
            let p = match swapped.range(want..).next() {
                Some(&p) => p,
                None => *swapped.first().expect("swapped"),
            };
            swapped.remove(&p);
            let Pte::Swap(offset) = k.ptes[&p] else {
                unreachable!()
            };
            let write = next(&mut x).is_multiple_of(3);
            let before = k.c.clone();
            let (major, ra_hit, keeps) = k.fault(p, write);
            if keeps {
                kept.insert(p, offset);
            }
            last_fault = p;
            ts += 1_000;
            let entry = SwapEntry { dev: 0, offset };
            if lookups {
                recs.push(Record::CacheLookup {
                    ts: ts - 500,
                    tid: TID,
                    entry,
                    hit: !major,
                    ra_hit,
                });
            }
            recs.push(Record::SwapFault {
                ts,
                dur_ns: 0,
                tid: TID,
                mm: MM,
                addr: p << PAGE_SHIFT,
                entry: Some(entry),
                major,
                pages_read: (k.c.pswpin - before.pswpin) as u32,
                zero_reads: (k.c.swpin_zero - before.swpin_zero) as u32,
                zswap_loads: (k.c.zswpin - before.zswpin) as u32,
                write,
            });
        }
    }
    (recs, k.c)
}

fn header(policy: Policy, page_cluster: u32, synchronous: bool) -> Header {
    Header {
        swap_devices: vec![SwapDevice {
            path: if synchronous {
                "/dev/zram0"
            } else {
                "/dev/loop0"
            }
            .into(),
            kind: "partition".into(),
            size_kib: 1 << 20,
            used_kib: 0,
            priority: -2,
            rotational: Some(false),
            synchronous: Some(synchronous),
        }],
        format_version: FORMAT_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        kernel_release: "6.12.0-model".into(),
        page_size: 1 << PAGE_SHIFT,
        mem_total_kib: 1 << 20,
        readahead: Readahead {
            page_cluster: Some(page_cluster),
            vma_ra_enabled: Some(policy == Policy::Vma),
        },
        target: "kernel_model.rs".into(),
        ..Header::default()
    }
}

/// `swaptrace replay` of the trace with `policy` and unbounded memory.
fn replayed(path: &Path, policy: Policy) -> Counters {
    let out = Command::new(env!("CARGO_BIN_EXE_swaptrace"))
        .arg("replay")
        .arg(path)
        .args(["--memory-pages", "1000000000", "--json", "--policy"])
        .arg(policy.name())
        .output()
        .expect("run swaptrace");
    assert!(
        out.status.success(),
        "replay failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let m = &v["policies"][0]["metrics"];
    let n = |k: &str| m[k].as_u64().unwrap_or_else(|| panic!("no {k} in {m}"));
    Counters {
        pgmajfault: n("pgmajfault"),
        pswpin: n("pswpin"),
        swpin_zero: n("swpin_zero"),
        zswpin: n("zswpin"),
        swap_ra: n("swap_ra"),
        swap_ra_hit: n("swap_ra_hit"),
    }
}

/// Every page-cluster of each policy on `seeds` random traces: the
/// replay's counters equal the model's. Failures are listed together.
fn agree(policy: Policy, seeds: std::ops::Range<u64>, lookups: bool, synchronous: bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut wrong = Vec::new();
    let mut faults = 0;
    for seed in seeds {
        for pc in 0..=6 {
            let (recs, want) = recorded(policy, pc, seed, lookups, synchronous);
            let path = dir
                .path()
                .join(format!("{}-{seed}-{pc}.swt", policy.name()));
            let mut w =
                TraceWriter::create(&path, &header(policy, pc, synchronous)).expect("create");
            for r in &recs {
                w.push(r).expect("push");
            }
            w.finish(&Footer::default()).expect("finish");
            let got = replayed(&path, policy);
            faults += recs
                .iter()
                .filter(|r| matches!(r, Record::SwapFault { .. }))
                .count();
            if got != want {
                wrong.push(format!(
                    "seed {seed} page-cluster {pc}:\n  model  {want:?}\n  replay {got:?}"
                ));
            }
        }
    }
    assert!(faults > 10_000, "only {faults} faults");
    assert!(
        wrong.is_empty(),
        "{} of the traces disagree:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn cluster_replays_as_the_kernel_model() {
    agree(Policy::Cluster, 0..6, false, false);
}

#[test]
fn vma_replays_as_the_kernel_model() {
    agree(Policy::Vma, 0..6, false, false);
}

#[test]
fn replays_as_the_kernel_model_with_cache_lookups() {
    agree(Policy::Cluster, 100..103, true, false);
    agree(Policy::Vma, 100..103, true, false);
}

#[test]
fn replays_as_the_kernel_model_on_a_synchronous_device() {
    agree(Policy::Cluster, 200..203, false, true);
    agree(Policy::Vma, 200..203, true, true);
}
