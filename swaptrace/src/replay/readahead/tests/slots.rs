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
