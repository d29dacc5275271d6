//! What a fault does to its slot: a write fault frees it (the page is
//! written to a new slot when reclaimed), a read fault keeps it; a page
//! shared through fork faults with the page table it was copied from.

use super::*;

fn out(ts: u64, mm: u32, vpage: u64, offset: u64) -> Record {
    Record::SwapOut {
        ts,
        tid: 1,
        mm,
        vaddr: vpage << 12,
        entry: SwapEntry { dev: 0, offset },
        nr: 1,
        how: OutKind::Io,
    }
}

fn fault(ts: u64, mm: u32, vpage: u64, offset: u64, write: bool) -> Record {
    Record::SwapFault {
        ts,
        dur_ns: 0,
        tid: 1,
        mm,
        addr: vpage << 12,
        entry: Some(SwapEntry { dev: 0, offset }),
        major: true,
        pages_read: 1,
        zero_reads: 0,
        zswap_loads: 0,
        write,
    }
}

/// Page A (slot 1) faults (a write or not) and is reclaimed; then B
/// (slot 0) faults: a window of 8 (slots 0-7) reads A's slot again only
/// if the read fault kept it.
fn ra_after_reclaim(write: bool) -> Metrics {
    let mut b = InputBuilder::new(4096);
    b.add(&out(1, 1, 0x1001, 1));
    b.add(&out(2, 1, 0x2000, 16));
    b.add(&fault(3, 1, 0x1001, 1, write));
    // Memory of one page: this fault reclaims A.
    b.add(&fault(4, 1, 0x2000, 16, false));
    b.add(&out(5, 1, 0x1000, 0));
    b.add(&fault(6, 1, 0x1000, 0, false));
    let inp = b.finish(3, 1).unwrap();
    run("fixed:8", &inp)
}

#[test]
fn a_read_fault_keeps_the_slot_a_write_fault_frees_it() {
    let kept = ra_after_reclaim(false);
    assert_eq!(
        (kept.swap_ra, kept.pswpin),
        (1, 4),
        "A's kept slot read ahead"
    );
    let freed = ra_after_reclaim(true);
    assert_eq!((freed.swap_ra, freed.pswpin), (0, 3), "A's slot was freed");
    assert_eq!(kept.pgmajfault, freed.pgmajfault);
}

/// Pages of mm 1 swapped out at 0x1000-0x1007; mm 2 (its forked child)
/// faults on 0x1003: VMA readahead walks the page table the child copied.
#[test]
fn a_fault_on_a_page_shared_through_fork_reads_around_the_shared_ptes() {
    let mut b = InputBuilder::new(4096);
    for i in 0..8 {
        b.add(&out(1 + i, 1, 0x1000 + i, 100 + i));
    }
    b.add(&fault(20, 2, 0x1003, 103, true));
    let inp = b.finish(3, 1 << 20).unwrap();
    let m = run("vma", &inp);
    assert_eq!(m.pgmajfault, 1);
    assert!(m.swap_ra >= 3, "read around the parent's PTEs: {m:?}");
}

fn vma(ts: u64, start: u64, end: u64) -> Record {
    Record::Vma {
        ts,
        mm: 1,
        start: start << 12,
        end: end << 12,
    }
}

/// A VMA of pages 0x1000-0x103f swapped out (slots 1-64), faulted once at
/// 0x1030 (ts 100).
fn faulted_vma() -> InputBuilder {
    let mut b = InputBuilder::new(4096);
    b.add(&vma(1, 0x1000, 0x1040));
    for i in 0..64 {
        b.add(&out(2 + i, 1, 0x1000 + i, 1 + i));
    }
    b.add(&fault(100, 1, 0x1030, 49, false));
    b
}

/// A mapping of pages 0x1000-0x103f swapped out (slots 1-64) and faulted
/// once at 0x1030; then unmapped (`unmapped`), and a new mapping at the
/// same address swaps out 0x1010-0x1017 (slots 101-108) and faults 0x1014.
fn remapped(unmapped: bool) -> Metrics {
    let mut b = faulted_vma();
    if unmapped {
        b.add(&Record::Unmapped {
            ts: 101,
            mm: 1,
            start: 0x1000 << 12,
            end: 0x1040 << 12,
        });
    }
    b.add(&vma(102, 0x1000, 0x1040));
    for i in 0..8 {
        b.add(&out(103 + i, 1, 0x1010 + i, 101 + i));
    }
    b.add(&fault(200, 1, 0x1014, 105, false));
    let inp = b.finish(3, 1 << 20).unwrap();
    run("vma", &inp)
}

#[test]
fn an_unmapped_range_loses_its_swap_ptes_and_readahead_state() {
    // First fault: a fresh VMA (4 hits), window 8: 0x102d-0x1034 read.
    // Second, in the new VMA: fresh again, window 8 around 0x1014 is
    // 0x1011-0x1018, but only 0x1011-0x1017 hold swap PTEs now: 7 read.
    let m = remapped(true);
    assert_eq!(m.windows, [(8, 2)].into());
    assert_eq!((m.pswpin, m.swap_ra), (8 + 7, 7 + 6));
    // Without the record, the old VMA's state (0 hits, last window 8)
    // gives __swapin_nr_pages() = max(1, 8 / 2) = 4: 0x1013-0x1016.
    let stale = remapped(false);
    assert_eq!(stale.windows, [(4, 1), (8, 1)].into());
    assert_eq!((stale.pswpin, stale.swap_ra), (8 + 4, 7 + 3));
}

/// Pages 0x1000-0x103f of a VMA swapped out (slots 1-64) and faulted at
/// 0x1030; `madvise(MADV_DONTNEED)` of 0x1010-0x1017 (if `zapped`); a
/// fault at 0x1018 (slot 25).
fn after_madvise(zapped: bool) -> Metrics {
    let mut b = faulted_vma();
    if zapped {
        b.add(&Record::Zapped {
            ts: 101,
            mm: 1,
            start: 0x1010 << 12,
            end: 0x1018 << 12,
        });
    }
    b.add(&fault(200, 1, 0x1018, 25, false));
    run("vma", &b.finish(3, 1 << 20).unwrap())
}

#[test]
fn a_zapped_range_loses_its_swap_ptes_and_keeps_readahead_state() {
    // First fault: a fresh VMA (4 hits), window 8: 0x102d-0x1034 read.
    // The VMA keeps swap_readahead_info (0 hits, last window 8), so
    // __swapin_nr_pages() gives max(1, 8 / 2) = 4, centred on 0x1018:
    // 0x1017-0x101a, of which 0x1017 no longer holds a swap PTE.
    let m = after_madvise(true);
    assert_eq!(m.windows, [(8, 1), (4, 1)].into());
    assert_eq!((m.pswpin, m.swap_ra), (8 + 3, 7 + 2));
    let kept = after_madvise(false);
    assert_eq!(kept.windows, [(8, 1), (4, 1)].into());
    assert_eq!((kept.pswpin, kept.swap_ra), (8 + 4, 7 + 3));
}

/// Pages 0x1000-0x103f of a VMA swapped out (slots 1-64), one fault at
/// 0x1030; then `mremap()` moves them to 0x8000, and a fault at 0x8014
/// (slot 21).
#[test]
fn a_moved_range_keeps_its_swap_ptes_and_readahead_state() {
    let mut b = faulted_vma();
    b.add(&Record::Unmapped {
        ts: 101,
        mm: 1,
        start: 0x8000 << 12,
        end: 0x8041 << 12,
    });
    b.add(&moved(101, 0x1000, 0x8000, 0x40));
    b.add(&fault(200, 1, 0x8014, 21, false));
    let m = run("vma", &b.finish(3, 1 << 20).unwrap());
    // First fault: a fresh VMA (4 hits), window 8: 0x102d-0x1034 read.
    // The moved VMA keeps swap_readahead_info (vm_area_dup()): 0 hits, last
    // window 8, last address 0x1030, so __swapin_nr_pages() gives
    // max(1, 8 / 2) = 4, centred: 0x8013-0x8016, all swap PTEs.
    assert_eq!(m.windows, [(8, 1), (4, 1)].into());
    assert_eq!((m.pswpin, m.swap_ra), (8 + 4, 7 + 3));
}

fn moved(ts: u64, from: u64, to: u64, pages: u64) -> Record {
    Record::Moved {
        ts,
        mm: 1,
        from: from << 12,
        to: to << 12,
        len: pages << 12,
    }
}

/// As [`ra_after_reclaim`], page A (slot 1) moved by `mremap()` before its
/// write fault: the page is its own (exclusive), so the fault frees the
/// slot, only if the replay knows of the move.
#[test]
fn a_write_fault_on_a_moved_page_frees_its_slot() {
    let run_it = |record: bool| {
        let mut b = InputBuilder::new(4096);
        b.add(&out(1, 1, 0x1001, 1));
        b.add(&out(2, 1, 0x2000, 16));
        if record {
            b.add(&moved(3, 0x1000, 0x8000, 16));
        }
        b.add(&fault(4, 1, 0x8001, 1, true));
        b.add(&fault(5, 1, 0x2000, 16, false));
        b.add(&out(6, 1, 0x3000, 0));
        b.add(&fault(7, 1, 0x3000, 0, false));
        run("fixed:8", &b.finish(3, 1).unwrap())
    };
    let m = run_it(true);
    assert_eq!((m.swap_ra, m.pswpin), (0, 3), "A's slot was freed");
    // Unknown, the move leaves A at its old address, another's page: the
    // write keeps the slot, and the last fault reads it ahead.
    let m = run_it(false);
    assert_eq!((m.swap_ra, m.pswpin), (1, 4));
}

/// Swap PTEs of the unmapped range go with their slots; a slot another
/// page took since stays that page's.
#[test]
fn an_unmapped_range_frees_its_slots_but_not_reused_ones() {
    let mut b = InputBuilder::new(4096);
    for i in 0..8 {
        b.add(&out(1 + i, 1, 0x1000 + i, 1 + i));
    }
    // Slot 4 reused by a page of another mapping before the unmap.
    b.add(&out(10, 1, 0x5000, 4));
    b.add(&Record::Unmapped {
        ts: 11,
        mm: 1,
        start: 0x1000 << 12,
        end: 0x1008 << 12,
    });
    // Cluster readahead of 8 around slot 4 (0x5000): only slot 4 is
    // allocated, its neighbours were freed with the unmapped PTEs.
    b.add(&fault(12, 1, 0x5000, 4, false));
    let inp = b.finish(3, 1 << 20).unwrap();
    let m = run("fixed:8", &inp);
    assert_eq!((m.pgmajfault, m.pswpin, m.swap_ra), (1, 1, 0));
}

/// A range's leaves are walked one by one, or all leaves are filtered when
/// the range spans more PMDs than there are leaves: the same pages go.
#[test]
fn take_range_takes_the_same_pages_either_way() {
    use super::super::pages::PageTable;
    let e = |offset| SwapEntry { dev: 0, offset };
    let filled = || {
        let mut t = PageTable::default();
        for (i, v) in [0x1000u64, 0x11ff, 0x1200, 0x1400, 0x9_0000_0000]
            .into_iter()
            .enumerate()
        {
            t.insert((1, v), e(i as u64 + 1));
            t.insert((2, v), e(i as u64 + 100));
        }
        t
    };
    // 60 PMDs: all of `few`'s 10 leaves filtered, `many`'s walked by PMD.
    let mut few = filled();
    let small = few.take_range(1, 0x11ff, 0x8001);
    let mut many = filled();
    for i in 0..100 {
        many.insert((3, i * 512), e(1000 + i));
    }
    assert_eq!(many.take_range(1, 0x11ff, 0x8001), small);
    assert_eq!(small, vec![(0x11ff, e(2)), (0x1200, e(3)), (0x1400, e(4))]);
    let mut all = filled();
    all.take_range(1, 0x11ff, 0x1401);
    // The whole address space: the by-leaf walk would be 2^27 PMDs.
    let rest = all.take_range(1, 0, 1 << 40);
    assert_eq!(rest, vec![(0x1000, e(1)), (0x9_0000_0000, e(5))]);
    assert_eq!(all.get(&(1, 0x1000)), None);
    assert_eq!(
        all.get(&(2, 0x1200)),
        Some(e(102)),
        "another address space's stay"
    );
}
