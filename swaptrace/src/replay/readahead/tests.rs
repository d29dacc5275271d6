//! The readahead family's replays, end to end: engine, registry and run.

use super::*;
use crate::trace::{OutKind, Record, SwapEntry};
use std::collections::HashMap;

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
            store: if zero_every > 0 && p % zero_every == 0 {
                Store::Zero
            } else {
                Store::Device
            },
            lingers: false,
            in_fault: false,
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
            write: false,
            read: 0,
            cached: false,
            dur: 0,
        });
    }
    ReplayInput {
        events,
        page_cluster: 3,
        dev_max: vec![order.len() as u64],
        memory_pages,
        unknown_faults: 0,
        unknown_swapoffs: 0,
        bad_records: 0,
        swapoff_mode: SwapoffMode::LookupStats,
        frees: false,
        pressure: false,
        write_ends: false,
        keeps_unmapped_dirty: false,
        isolation_clears_readahead: false,
        synchronous: Vec::new(),
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
    // In address order VMA readahead reads whole 8-page windows (a few
    // read ahead are reclaimed from the inactive list before use).
    assert!(v.pgmajfault < 4096 / 8 + 32, "{v:?}");
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
fn swapoff_with_the_5_8_fix_grows_the_window() {
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

/// For each `(mm, first page, first slot)`, `n` pages swapped out in
/// address order onto consecutive slots, kept as `store`; then `faults`,
/// each `(mm, page)`. Page-cluster 3, memory for everything.
fn out_then_fault(
    spaces: &[(u32, u64, u64)],
    n: u64,
    store: Store,
    faults: &[(u32, u64)],
) -> ReplayInput {
    let mut events = Vec::new();
    let mut ts = 0;
    for &(mm, first, offset0) in spaces {
        for p in 0..n {
            ts += 1;
            events.push(Event::Out {
                ts,
                mm,
                vpage: first + p,
                entry: SwapEntry {
                    dev: 0,
                    offset: offset0 + p,
                },
                store,
                lingers: false,
                in_fault: false,
            });
        }
    }
    for &(mm, vpage) in faults {
        let &(_, first, offset0) = spaces.iter().find(|s| s.0 == mm).unwrap();
        ts += 1;
        events.push(Event::Fault {
            ts,
            mm,
            vpage,
            entry: SwapEntry {
                dev: 0,
                offset: offset0 + vpage - first,
            },
            write: false,
            read: 0,
            cached: false,
            dur: 0,
        });
    }
    ReplayInput {
        events,
        page_cluster: 3,
        dev_max: vec![spaces.len() as u64 * n + 1],
        memory_pages: 1 << 20,
        unknown_faults: 0,
        unknown_swapoffs: 0,
        bad_records: 0,
        swapoff_mode: SwapoffMode::LookupStats,
        frees: false,
        pressure: false,
        write_ends: false,
        keeps_unmapped_dirty: false,
        isolation_clears_readahead: false,
        synchronous: Vec::new(),
    }
}

#[test]
fn cluster_starts_at_4_hits_as_the_kernel() {
    // swapin_readahead_hits = ATOMIC_INIT(4); page-cluster 3: max 8.
    // 1st miss, offset 21: __swapin_nr_pages(0, 21, hits 4, 8, 0):
    //   4 + 2 = 6, rounded up from 4 -> 8, min 8 -> 8; aligned 16..=23:
    //   8 pages read, 7 readahead. hits != 0: prev_offset stays 0.
    // 2nd miss, offset 41 (no hits since): __swapin_nr_pages(0, 41, 0, 8, 8):
    //   2, 41 not 0 +- 1 -> 1; max(1, 8 / 2) -> 4; aligned 40..=43:
    //   4 pages read, 3 readahead.
    let inp = out_then_fault(
        &[(1, 0x1000, 1)],
        64,
        Store::Device,
        &[(1, 0x1014), (1, 0x1028)],
    );
    let m = run("cluster", &inp);
    assert_eq!(m.pgmajfault, 2);
    assert_eq!(m.windows, [(4, 1), (8, 1)].into());
    assert_eq!(m.pswpin, 8 + 4);
    assert_eq!(m.swap_ra, 7 + 3);
}

#[test]
fn cluster_takes_its_first_window_from_the_kernels_reads() {
    // The global state predates the recording: the first miss's window is
    // the one whose aligned cluster holds as many readable pages as the
    // kernel read. Misses at offsets 21 and 41, page-cluster 3.
    let with_first_read = |read: u32| {
        let mut inp = out_then_fault(
            &[(1, 0x1000, 1)],
            64,
            Store::Device,
            &[(1, 0x1014), (1, 0x1028)],
        );
        if let Some(Event::Fault { read: r, .. }) = inp
            .events
            .iter_mut()
            .find(|e| matches!(e, Event::Fault { .. }))
        {
            *r = read;
        }
        run("cluster", &inp)
    };
    // Read 1: window 1, taken as no hits (prev_offset 21); then 41 is not
    // adjacent: __swapin_nr_pages(21, 41, 0, 8, 1) = max(1, 1 / 2) = 1.
    let m = with_first_read(1);
    assert_eq!((m.pswpin, m.swap_ra), (2, 0));
    assert_eq!(m.windows, [(1, 2)].into());
    // Read 4: the cluster 20..=23 (window 4); then max(1, 4 / 2) = 2:
    // 40..=41.
    let m = with_first_read(4);
    assert_eq!((m.pswpin, m.swap_ra), (4 + 2, 3 + 1));
    assert_eq!(m.windows, [(2, 1), (4, 1)].into());
    // Read 8, or not recorded: the boot state (see below).
    for read in [8, 0] {
        let m = with_first_read(read);
        assert_eq!(m.windows, [(4, 1), (8, 1)].into(), "read {read}");
    }
}

#[test]
fn vma_starts_at_4_hits_as_the_kernel() {
    // A fresh VMA: GET_SWAP_RA_VAL() = 4 -> prev 0, win 0, hits 4.
    // Fault at 0x1014: __swapin_nr_pages(0, 0x1014, 4, 8, 0) = 8 (as above);
    // not adjacent to 0: left = 0x1014 - 3, right = left + 8: 0x1011..0x1019,
    // 8 pages read, 7 readahead.
    let inp = out_then_fault(&[(1, 0x1000, 1)], 64, Store::Device, &[(1, 0x1014)]);
    let m = run("vma", &inp);
    assert_eq!(m.windows, [(8, 1)].into());
    assert_eq!(m.pswpin, 8);
    assert_eq!(m.swap_ra, 7);
}

#[test]
fn vma_window_in_the_first_pages_ends_at_left_plus_win() {
    // Fresh VMAs (win 8, see above), faults in the first 7 pages:
    // mm 1, page 0: left = 0 - 3 = -3, right = 5 -> pages 0..5: 5 read.
    // mm 2, page 2: left = 2 - 3 = -1, right = 7 -> pages 0..7: 7 read.
    // (Clamping left before adding win would read 8 each.)
    let inp = out_then_fault(
        &[(1, 0, 1), (2, 0, 101)],
        64,
        Store::Device,
        &[(1, 0), (2, 2)],
    );
    let m = run("vma", &inp);
    assert_eq!(m.windows, [(8, 2)].into());
    assert_eq!(m.pswpin, 5 + 7);
    assert_eq!(m.swap_ra, 4 + 6);
}

/// Thread A misses on 0x102c and waits `dur` for the device; thread B
/// misses on 0x103c meanwhile; A then faults 0x102d at +100. After random
/// faults (windows 8, 4, 2, 1: `__swapin_nr_pages()` halving prev_win), the
/// last window is 2 when A's retry, at the end of its fault, has put
/// 0x102c back as the VMA's address (adjacent), else 1 (B's, far).
fn interleaved(policy: &str, store: Store, dur: u32) -> Metrics {
    let faults = [0x1004, 0x1014, 0x1024, 0x1034, 0x102c, 0x103c, 0x102d];
    let pages: Vec<_> = faults.iter().map(|&p| (1, p)).collect();
    let mut inp = out_then_fault(&[(1, 0x1000, 1)], 64, store, &pages);
    let timing = [(1_000, dur), (1_040, 10), (1_100, 10)];
    let late = inp.events.iter_mut().rev().take(3).rev();
    for (e, (at, took)) in late.zip(timing) {
        if let Event::Fault { ts, dur, .. } = e {
            (*ts, *dur) = (at, took);
        }
    }
    run(policy, &inp)
}

#[test]
fn a_fault_that_waits_for_its_read_retries_and_sets_its_address_again() {
    let retried = interleaved("vma", Store::Device, 90);
    assert_eq!(retried.windows, [(1, 3), (2, 2), (4, 1), (8, 1)].into());
    assert_eq!(retried.pswpin, 8 + 4 + 2 + 1 + 1 + 1 + 2);
    // Its read not done before A's next fault: B's address stands.
    let late = interleaved("vma", Store::Device, 200);
    assert_eq!(late.windows, [(1, 4), (2, 1), (4, 1), (8, 1)].into());
    assert_eq!(late.pswpin, 18);
    // zswap loads synchronously: the folio is unlocked, no retry.
    let zswap = interleaved("vma", Store::Zswap, 90);
    assert_eq!(zswap.windows, late.windows);
    // Cluster readahead keeps no address per VMA: the same either way.
    let cluster = |d| {
        let m = interleaved("cluster", Store::Device, d);
        (m.windows, m.pswpin)
    };
    assert_eq!(cluster(90), cluster(200));
}

#[test]
fn zswap_pages_count_as_zswpin_not_pswpin() {
    // swap_read_folio(): zswap_load() serves the page: ZSWPIN, no PSWPIN.
    let inp = out_then_fault(&[(1, 0x1000, 1)], 64, Store::Zswap, &[(1, 0x1014)]);
    let none = run("none", &inp);
    assert_eq!((none.pswpin, none.zswpin, none.io_requests), (0, 1, 0));
    // The cluster window of 8 (see above), all in zswap.
    let cluster = run("cluster", &inp);
    assert_eq!((cluster.pswpin, cluster.zswpin), (0, 8));
    assert_eq!(cluster.swap_ra, 7);
    assert_eq!(cluster.io_requests, 0);
}

#[test]
fn a_synchronous_device_reads_unshared_pages_alone() {
    // do_swap_page(): on a SWP_SYNCHRONOUS_IO device (zram) an entry with
    // __swap_count() == 1 skips swapin_readahead(): one page per fault,
    // past the swap cache, whatever the policy.
    let faults: Vec<(u32, u64)> = (0..64).map(|p| (1, 0x1000 + p)).collect();
    let mut inp = out_then_fault(&[(1, 0x1000, 1)], 64, Store::Device, &faults);
    let plain = run("cluster", &inp);
    assert!(plain.pgmajfault < 16 && plain.swap_ra > 48, "{plain:?}");
    inp.synchronous = vec![true];
    for p in ["cluster", "vma", "fixed:8", "leap"] {
        let m = run(p, &inp);
        assert_eq!(
            (
                m.pgmajfault,
                m.pswpin,
                m.swap_ra,
                m.swap_ra_hit,
                m.io_requests
            ),
            (64, 64, 0, 0, 64),
            "{p}"
        );
        assert!(m.windows.is_empty(), "{p}: {:?}", m.windows);
    }
    // Another device's pages are read ahead as before.
    inp.synchronous = vec![false, true];
    assert_eq!(run("cluster", &inp).pgmajfault, plain.pgmajfault);
    // A page shared through fork (the child faults the parent's entry:
    // its count is 2) goes through readahead: the cluster window of 8
    // around offset 10 (8..=15), start state 4 hits.
    inp.synchronous = vec![true];
    let shared = Event::Fault {
        ts: 65,
        mm: 2,
        vpage: 0x1009,
        entry: SwapEntry { dev: 0, offset: 10 },
        write: false,
        read: 0,
        cached: false,
        dur: 0,
    };
    inp.events.insert(64, shared);
    let m = run("cluster", &inp);
    assert_eq!((m.swap_ra, m.swap_ra_hit), (7, 7));
    // The parent's own faults on those 8 find them in the swap cache (the
    // shared page's folio too: its slot is still the parent's).
    assert_eq!(m.pgmajfault, 1 + 64 - 8);
}

#[test]
fn zswap_swap_outs_of_a_trace_are_stored_in_zswap() {
    let mut b = InputBuilder::new(4096);
    for (ts, how) in [(1, OutKind::Zswap), (2, OutKind::Io), (3, OutKind::Zero)] {
        b.add(&Record::SwapOut {
            ts,
            tid: 1,
            mm: 1,
            vaddr: ts << 12,
            entry: SwapEntry { dev: 0, offset: ts },
            nr: 1,
            how,
        });
    }
    for ts in 1..=3 {
        b.add(&Record::SwapFault {
            ts: 10 + ts,
            dur_ns: 0,
            tid: 1,
            mm: 1,
            addr: ts << 12,
            entry: Some(SwapEntry { dev: 0, offset: ts }),
            major: true,
            pages_read: 1,
            zero_reads: 0,
            zswap_loads: 0,
            write: false,
        });
    }
    let inp = b.finish(0, 1 << 20).unwrap();
    let m = run("none", &inp);
    assert_eq!((m.zswpin, m.pswpin, m.swpin_zero), (1, 1, 1));
}

/// A synthetic trace as `synth` writes it, loaded (a test file of its
/// own may not import `synth`: `layers`).
fn loaded(swapoff: bool) -> crate::trace::Loaded {
    use crate::synth::{generate, header, SynthSpec};
    use crate::trace::Syscall;
    let spec = SynthSpec {
        pattern: "shuffled-blocks:4".parse().unwrap(),
        pages: 256,
        faults: 256,
        seed: 1,
        memory_pages: 64,
    };
    let mut records = Vec::new();
    generate(&spec, |r| records.push(r));
    if swapoff {
        // Then a successful swapoff of the device, after the faults.
        let end = 1_000_000_000;
        records.push(Record::Syscall {
            ts: end,
            tid: 9,
            call: Syscall::Swapoff,
            ret: None,
        });
        records.push(Record::Syscall {
            ts: end + 1,
            tid: 9,
            call: Syscall::Swapoff,
            ret: Some(0),
        });
    }
    crate::trace::Loaded {
        header: header(&spec),
        records,
        footer: None,
        problems: Vec::new(),
        skipped: 0,
        chunks: Vec::new(),
    }
}

mod cache;
// Input no kernel could make: bounded, never expanded.
mod hostile;
mod registry;
mod slots;
mod streamed;

/// A batch that counts how many batches the replay holds at once.
struct Counted<'a> {
    events: Vec<Event>,
    alive: &'a std::cell::Cell<(usize, usize)>,
}

impl AsRef<[Event]> for Counted<'_> {
    fn as_ref(&self) -> &[Event] {
        &self.events
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        let (now, most) = self.alive.get();
        self.alive.set((now - 1, most));
    }
}

#[test]
fn the_oracle_holds_no_run_of_swap_outs_for_its_future() {
    // 20,000 swap-outs in 200 batches, then the faults.
    let order: Vec<u64> = (0..20_000).collect();
    let inp = input(&order, 5_000, 0);
    let whole = run("oracle", &inp);
    let alive = std::cell::Cell::new((0, 0));
    let batches = inp.events.chunks(100).map(|c| {
        let (now, most) = alive.get();
        alive.set((now + 1, most.max(now + 1)));
        Counted {
            events: c.to_vec(),
            alive: &alive,
        }
    });
    let mut p = policy_by_name("oracle", &inp).unwrap();
    let m = engine::replay_batches(&inp, space::SlotTable::for_input(&inp), p.as_mut(), batches);
    assert_eq!(m.pgmajfault, whole.pgmajfault);
    assert_eq!(m.pswpin, whole.pswpin);
    assert!(whole.pgmajfault > 0 && whole.pgmajfault < 20_000);
    // The 28 faults it reads ahead fit in the next batch.
    let (now, most) = alive.get();
    assert_eq!(now, 0);
    assert!(most <= 3, "{most} batches held at once");
}
