//! The kernel's swap cache from a trace that records folio frees
//! (`Record::OutFreed`): a written folio stays cached until freed, a freed
//! one is read again, and reads beyond the kernel's cost a reclaim.

use super::*;

mod own_reclaim;
mod zswap;

/// A swap-out of `vpage` of address space `mm` (0: no owner) to `offset`.
fn swap_out(mm: u32, ts: u64, vpage: u64, offset: u64, how: OutKind) -> Record {
    Record::SwapOut {
        ts,
        tid: 1,
        mm,
        vaddr: vpage << 12,
        entry: SwapEntry { dev: 0, offset },
        nr: 1,
        how,
    }
}

fn out(ts: u64, vpage: u64, offset: u64) -> Record {
    swap_out(1, ts, vpage, offset, OutKind::Io)
}

/// A read fault that read `pages_read` from the device and `zswap_loads`
/// from zswap (minor if neither).
fn fault_from(ts: u64, vpage: u64, offset: u64, pages_read: u32, zswap_loads: u32) -> Record {
    Record::SwapFault {
        ts,
        dur_ns: 0,
        tid: 1,
        mm: 1,
        addr: vpage << 12,
        entry: Some(SwapEntry { dev: 0, offset }),
        major: pages_read + zswap_loads > 0,
        pages_read,
        zero_reads: 0,
        zswap_loads,
        write: false,
    }
}

fn fault(ts: u64, vpage: u64, offset: u64, pages_read: u32) -> Record {
    fault_from(ts, vpage, offset, pages_read, 0)
}

/// Page 0x1000 + `offset` stored to zswap at `offset`.
fn stored(ts: u64, offset: u64) -> Record {
    swap_out(1, ts, 0x1000 + offset, offset, OutKind::Zswap)
}

/// A read fault of page 0x1000 + `offset` ([`fault_from`]).
fn read(ts: u64, offset: u64, pages_read: u32, zswap_loads: u32) -> Record {
    fault_from(ts, 0x1000 + offset, offset, pages_read, zswap_loads)
}

/// zswap wrote `nr` pages back, naming the entry at `offset` if given.
fn writeback(ts: u64, nr: u32, offset: Option<u64>) -> Record {
    Record::ZswapWriteback {
        ts,
        tid: 2,
        nr,
        entry: offset.map(|offset| SwapEntry { dev: 0, offset }),
    }
}

fn freed(ts: u64, offset: u64) -> Record {
    Record::OutFreed {
        ts,
        entry: SwapEntry { dev: 0, offset },
        nr: 1,
    }
}

/// Pages 0x1000 + i for i in 0..n written to slot i by memcg reclaim
/// (memory is full), their folios freed.
fn on_disk(n: u64) -> Vec<Record> {
    let reclaim = Record::Reclaim {
        ts: 0,
        tid: 1,
        begin: true,
        memcg: true,
        nr_reclaimed: 0,
    };
    std::iter::once(reclaim)
        .chain((0..n).flat_map(|i| [out(1 + 2 * i, 0x1000 + i, i), freed(2 + 2 * i, i)]))
        .collect()
}

fn replay_of(records: &[Record], frees: bool, policy: &str) -> Metrics {
    let mut b = InputBuilder::new(4096).out_freed(frees);
    for r in records {
        b.add(r);
    }
    let inp = b.finish(3, 1 << 20).unwrap();
    run(policy, &inp)
}

/// `records` (frees recorded, stored folios watched) through `policy`,
/// with what `set` changes in the input.
fn replay_stored(records: &[Record], policy: &str, set: impl FnOnce(&mut ReplayInput)) -> Metrics {
    let mut b = InputBuilder::new(4096).out_freed(true).stored_frees(true);
    for r in records {
        b.add(r);
    }
    let mut inp = b.finish(3, 1 << 20).expect("input");
    set(&mut inp);
    run(policy, &inp)
}

/// Page A is written and faulted before its folio is freed: the fault
/// finds it in the swap cache (minor). Page B's folio is freed first: its
/// fault reads it (major).
#[test]
fn a_written_folio_serves_faults_until_the_kernel_frees_it() {
    let records = [
        on_disk(0)[0].clone(),
        out(1, 0x1000, 1),
        fault(2, 0x1000, 1, 0),
        out(3, 0x2000, 2),
        freed(4, 2),
        fault(5, 0x2000, 2, 1),
    ];
    let m = replay_of(&records, true, "none");
    assert_eq!((m.faults, m.pgmajfault, m.pswpin), (2, 1, 1));
    // A trace without frees: both pages were on disk only.
    let m = replay_of(&records, false, "none");
    assert_eq!((m.pgmajfault, m.pswpin), (2, 2));
}

/// Without any reclaim recorded (MADV_PAGEOUT alone), a written folio
/// still stays in the swap cache until its recorded free: the fault on
/// page A finds it, page B's (freed first) reads. Memory follows the
/// model's own LRU: the kernel reading 8 pages where `fixed:1` reads 1
/// leaves no room to keep B.
#[test]
fn written_folios_wait_for_their_free_without_reclaim_too() {
    let records = [
        out(1, 0x1000, 0),
        out(2, 0x1001, 1),
        fault(3, 0x1002, 2, 8),
        freed(4, 1),
        fault(5, 0x1000, 0, 0),
        fault(6, 0x1001, 1, 1),
    ];
    let m = replay_of(&records, true, "fixed:1");
    assert_eq!((m.faults, m.pgmajfault, m.pswpin), (3, 2, 2));
}

/// A fault on slot 0 reads the window of 8 (slots 0-7). The kernel then
/// frees slot 1's readahead folio unused: the fault on it reads the
/// window again, where only slot 1 is not cached (9 pages, 1 polluting).
#[test]
fn a_readahead_folio_the_kernel_freed_is_read_again() {
    let mut records = on_disk(8);
    records.push(fault(20, 0x1000, 0, 8));
    records.push(freed(21, 1));
    records.push(fault(22, 0x1001, 1, 1));
    let m = replay_of(&records, true, "fixed:8");
    assert_eq!((m.pgmajfault, m.pswpin, m.swap_ra_hit), (2, 9, 0));
    assert_eq!(m.pollution, 1);
    let m = replay_of(&records, false, "fixed:8");
    assert_eq!((m.pgmajfault, m.pswpin, m.swap_ra_hit), (1, 8, 1));
}

/// A clean page faulted in keeps its slot; the kernel drops it without a
/// write. A fault on its neighbour reads it ahead again, as the kernel did.
#[test]
fn a_clean_page_the_kernel_dropped_is_read_ahead_again() {
    let records = [
        on_disk(0)[0].clone(),
        out(1, 0x1001, 1),
        freed(2, 1),
        fault(3, 0x1001, 1, 1),
        out(4, 0x1000, 0),
        freed(5, 0),
        freed(6, 1),
        fault(7, 0x1000, 0, 2),
    ];
    let m = replay_of(&records, true, "fixed:8");
    assert_eq!((m.pswpin, m.swap_ra), (3, 1));
    // Believed mapped, page 0x1001 is not read again.
    let m = replay_of(&records, false, "fixed:8");
    assert_eq!((m.pswpin, m.swap_ra), (2, 0));
}

/// The kernel read 1 page where the policy reads 8: memory was as full as
/// the kernel's, so the 7 extra pages cost 7 reclaims of the oldest pages
/// (the unused readahead), one per page the kernel frees meanwhile (its
/// reclaim runs then); the next fault misses and reads 7 beyond again.
/// Without frees (a read-back without pressure) the pages stay.
#[test]
fn reads_beyond_the_kernel_s_reclaim_the_oldest_pages() {
    let mut records = on_disk(16);
    records.push(fault(40, 0x1000, 0, 1));
    let mut with_frees = records.clone();
    let first_free = with_frees.len();
    // The kernel frees pages of its own (slots the model never read).
    with_frees.extend((8..15).map(|i| freed(41 + i, i)));
    for r in [&mut records, &mut with_frees] {
        r.push(fault(60, 0x1001, 1, 1));
    }
    let m = replay_of(&with_frees, true, "fixed:8");
    assert_eq!((m.pgmajfault, m.pswpin, m.pollution), (2, 15, 7));
    // Fewer frees, fewer reclaims: 3 of the 7 pages went, and are read again.
    with_frees.drain(first_free..first_free + 4);
    let m = replay_of(&with_frees, true, "fixed:8");
    assert_eq!((m.pgmajfault, m.pswpin, m.pollution), (2, 11, 3));
    let m = replay_of(&records, true, "fixed:8");
    assert_eq!((m.pgmajfault, m.pswpin, m.pollution), (1, 8, 0));
    // No reclaim recorded (MADV_PAGEOUT): the frees are not followed, and
    // the pages stay, as without them.
    let m = replay_of(&with_frees[1..], true, "fixed:8");
    assert_eq!((m.pgmajfault, m.pswpin, m.pollution), (1, 8, 0));
    let m = replay_of(&with_frees, false, "fixed:8");
    assert_eq!((m.pgmajfault, m.pswpin, m.pollution), (1, 8, 0));
}

/// The kernel read 16 pages where the policy reads 8: memory has room for
/// 8 more here, so a page the kernel then frees (slot 1, read ahead) stays,
/// and its fault is a readahead hit. With the kernel's 8, it goes. With 9,
/// one of which the kernel freed before (slot 100, never this model's),
/// memory is even again, and it goes too; so where the freed one is a folio
/// the model holds no slot for (300: the kernel's extra page, or one of a
/// range unmapped since). Where memory was even already, such a free gives
/// no room; with 10, slot 1 keeps the other page of room.
#[test]
fn reads_below_the_kernel_s_keep_pages_the_kernel_freed() {
    let run_with = |kernel_read: u32, freed_first: Option<u64>| {
        let mut records = on_disk(8);
        records.push(out(17, 0x1100, 100));
        records.push(freed(18, 100));
        records.push(fault(20, 0x1000, 0, kernel_read));
        if let Some(slot) = freed_first {
            records.push(freed(21, slot));
        }
        records.push(freed(22, 1));
        records.push(fault(23, 0x1001, 1, 1));
        let m = replay_of(&records, true, "fixed:8");
        (m.pgmajfault, m.swap_ra_hit, m.pollution)
    };
    assert_eq!(run_with(16, None), (1, 1, 0));
    assert_eq!(run_with(8, None), (2, 0, 1));
    assert_eq!(run_with(9, Some(100)), (2, 0, 1));
    assert_eq!(run_with(9, None), (1, 1, 0));
    assert_eq!(run_with(9, Some(300)), (2, 0, 1));
    assert_eq!(run_with(8, Some(300)), (2, 0, 1));
    assert_eq!(run_with(10, Some(300)), (1, 1, 0));
}

/// `madvise(MADV_WILLNEED)` of pages 0x1000-0x1007 (slots 0-7 on disk,
/// page 0x1001 faulted in): each read takes the next page of the range
/// not in memory, in order (0x1000, 0x1002, 0x1003), alone; a new call
/// starts over (0x1005). Their faults then find them in the swap cache:
/// minor, and no readahead hit.
#[test]
fn willneed_reads_the_range_s_next_pages_into_the_swap_cache() {
    let willneed = |ts: u64, tid: u32| Record::WillNeed {
        ts,
        tid,
        mm: 1,
        start: 0x1000 << 12,
        end: 0x1008 << 12,
        how: crate::trace::ReadKind::Io,
        nr: 1,
    };
    let mut records = on_disk(8);
    records.push(fault(20, 0x1001, 1, 1));
    records.extend([willneed(21, 5), willneed(22, 5), willneed(23, 5)]);
    records.push(fault(30, 0x1002, 2, 0));
    records.push(fault(31, 0x1004, 4, 1));
    let m = replay_of(&records, true, "fixed:1");
    assert_eq!(
        (m.pgmajfault, m.pswpin, m.swap_ra, m.swap_ra_hit),
        (2, 5, 0, 0)
    );
    records.push(willneed(40, 6));
    records.push(fault(41, 0x1005, 5, 0));
    records.push(fault(42, 0x1000, 0, 0));
    let m = replay_of(&records, true, "fixed:1");
    assert_eq!((m.faults, m.pgmajfault, m.pswpin), (5, 2, 6));
}

/// Below the kernel's memory (it read 20 pages where `fixed:4` reads 4),
/// the kernel drops pages 0 and 1, mapped and clean, after their faults.
/// The replay unmaps them too: the next miss in their block reads both
/// again (the kernel read 2), and the fault on page 1 is a readahead hit.
/// Kept mapped, page 1 was neither read nor a readahead hit.
#[test]
fn a_mapped_page_the_kernel_freed_goes_below_the_kernel_s_memory_too() {
    let mut records = on_disk(4);
    records.push(fault(20, 0x1000, 0, 20));
    records.extend((1..4).map(|i| fault(20 + i, 0x1000 + i, i, 0)));
    records.extend([freed(24, 0), freed(25, 1)]);
    records.extend([fault(26, 0x1000, 0, 2), fault(27, 0x1001, 1, 0)]);
    let m = replay_of(&records, true, "fixed:4");
    assert_eq!(m.pgmajfault, 2);
    assert_eq!((m.pswpin, m.swap_ra, m.swap_ra_hit), (4 + 2, 3 + 1, 3 + 1));
    assert_eq!(m.pollution, 0);
}

/// Slots 8 and 9 stored, their folios freed; the fault on 8 reads 9
/// ahead (fixed:2), `between` comes, and 9 is faulted.
fn read_ahead_then(between: Option<Record>, isolation_clears: bool) -> Metrics {
    let mut records = vec![
        on_disk(0)[0].clone(),
        stored(1, 8),
        stored(2, 9),
        freed(3, 8),
        freed(4, 9),
        read(100, 8, 0, 1),
    ];
    records.extend(between);
    records.push(read(200, 9, 0, 0));
    replay_stored(&records, "fixed:2", |inp| {
        inp.isolation_clears_readahead = isolation_clears
    })
}

#[test]
fn a_readahead_folio_written_again_is_no_readahead_hit() {
    // Reclaim writes 9's folio again (a swap-out with no owner: it was
    // never mapped), which clears its PG_readahead: the fault on 9 finds
    // it, a plain hit, and the readahead page counts as unused. Without
    // that write, the fault is a readahead hit.
    let replay = |rewrite: bool| {
        let m = read_ahead_then(
            rewrite.then(|| swap_out(0, 150, 0, 9, OutKind::Zswap)),
            false,
        );
        (m.pgmajfault, m.swap_ra, m.swap_ra_hit, m.pollution)
    };
    assert_eq!(replay(false), (1, 1, 1, 0));
    assert_eq!(replay(true), (1, 1, 0, 1));
}

/// Slots 0-15 stored to zswap, their folios freed. The fault on 0 reads
/// 0-7 where the kernel read only 0: 7 pages beyond the kernel's, which
/// the kernel's next 7 frees (of its own pages, 8-14) have reclaim pay
/// for. Pages read ahead from zswap are dirty and were never mapped: where
/// `pageout()` activates those (6.18), reclaim finds nothing to take and the
/// fault on 1 is a readahead hit; where it writes them again (6.12), they
/// go, and the fault on 1 reads again.
#[test]
fn a_dirty_readahead_folio_stays_where_pageout_keeps_it() {
    let replay = |keeps: bool| {
        let mut records = vec![on_disk(0)[0].clone()];
        records.extend((0..16).flat_map(|i| [stored(1 + 2 * i, i), freed(2 + 2 * i, i)]));
        records.push(read(40, 0, 0, 1));
        records.extend((8..15).map(|i| freed(41 + i, i)));
        records.push(read(60, 1, 0, 1));
        let m = replay_stored(&records, "fixed:8", |inp| inp.keeps_unmapped_dirty = keeps);
        (m.pgmajfault, m.swap_ra_hit, m.pollution)
    };
    assert_eq!(replay(true), (1, 1, 0));
    assert_eq!(replay(false), (2, 0, 7));
}

/// Slot 9 read ahead from zswap ([`read_ahead_then`]); reclaim then
/// isolates its folio and keeps it (`Record::Isolated`). Where MGLRU's
/// isolation clears PG_readahead, the fault on 9 is a plain hit; elsewhere
/// (or with no such record) a readahead hit.
#[test]
fn a_readahead_folio_reclaim_isolated_loses_its_flag_under_mglru() {
    let replay = |isolated: bool, clears: bool| {
        let isolation = Record::Isolated {
            ts: 150,
            entry: SwapEntry { dev: 0, offset: 9 },
        };
        let m = read_ahead_then(isolated.then_some(isolation), clears);
        (m.pgmajfault, m.swap_ra, m.swap_ra_hit)
    };
    assert_eq!(replay(true, true), (1, 1, 0));
    assert_eq!(replay(true, false), (1, 1, 1));
    assert_eq!(replay(false, true), (1, 1, 1));
}

/// The fault on slot 0 reads 0-7 where the kernel read 1: 1-7 are pages the
/// kernel may not hold, owed to memory. The fault on 16 reads 16-23 as the
/// kernel did. The kernel then frees readahead page `unused` unused, and
/// the fault on slot 100's page (the kernel still had its written folio,
/// oldest on the list) and on slot 1 follow. Pages are on the device, or in
/// zswap (`zswap`), where `pageout()` keeps those read ahead (`keeps`).
/// (faults, major faults, readahead hits, pollution).
fn pay_after_free(unused: u64, zswap: bool, keeps: bool) -> (u64, u64, u64, u64) {
    let how = if zswap { OutKind::Zswap } else { OutKind::Io };
    let read_at = |ts, vpage, offset, n| match zswap {
        true => fault_from(ts, vpage, offset, 0, n),
        false => fault(ts, vpage, offset, n),
    };
    let mut records = vec![on_disk(0)[0].clone()];
    records.extend((0..24).flat_map(|i| {
        [
            swap_out(1, 1 + 2 * i, 0x1000 + i, i, how),
            freed(2 + 2 * i, i),
        ]
    }));
    records.push(out(50, 0x1100, 100));
    records.push(read_at(100, 0x1000, 0, 1));
    records.push(read_at(200, 0x1010, 16, 8));
    records.push(freed(210, unused));
    records.push(fault(300, 0x1100, 100, 0));
    records.push(read_at(310, 0x1001, 1, 1));
    let m = replay_stored(&records, "fixed:8", |inp| inp.keeps_unmapped_dirty = keeps);
    (m.faults, m.pgmajfault, m.swap_ra_hit, m.pollution)
}

/// Where the kernel freed 17, read after 1-7, its inactive list has let
/// those go (unused readahead leaves in the order read): the debt is paid
/// with slot 1, slot 100's folio stays and its fault is a hit, and slot 1's
/// fault reads it. Where it freed 2, read with them, the oldest page pays:
/// slot 100's folio goes, its fault reads it, and slot 1's is a readahead
/// hit. Pages read ahead from zswap that `pageout()` keeps are not paid.
#[test]
fn reads_beyond_the_kernel_s_pay_first_with_readahead_it_let_go() {
    assert_eq!(pay_after_free(17, false, false), (4, 3, 0, 2));
    assert_eq!(pay_after_free(2, false, false), (4, 3, 1, 1));
    assert_eq!(pay_after_free(17, true, false), (4, 3, 0, 2));
    assert_eq!(pay_after_free(17, true, true), (4, 3, 1, 1));
}

/// Reclaim unmapped a page and kept its folio in the swap cache: the
/// kernel's second fault on it reads nothing, a hit, though the model had
/// the page mapped still. Where the kernel read it, its folio had gone.
#[test]
fn a_page_reclaim_unmapped_and_kept_is_a_hit() {
    let second = |kernel_read| {
        let records = [
            on_disk(0)[0].clone(),
            out(1, 0x1000, 1),
            fault(2, 0x1000, 1, 0),
            fault(3, 0x1000, 1, kernel_read),
        ];
        let m = replay_of(&records, true, "none");
        (m.faults, m.pgmajfault, m.pswpin)
    };
    assert_eq!(second(0), (2, 0, 0));
    assert_eq!(second(1), (2, 1, 1));
}

/// A written folio waits for its free; the kernel's fault on the page
/// reads it, so the free was not seen: the model reads it too. A folio the
/// kernel freed that the model kept (it read 8 pages fewer) stays a hit.
#[test]
fn a_written_folio_the_kernel_read_again_had_been_freed() {
    let records = [
        on_disk(0)[0].clone(),
        out(1, 0x1000, 1),
        fault(2, 0x1000, 1, 1),
    ];
    let m = replay_of(&records, true, "none");
    assert_eq!((m.faults, m.pgmajfault, m.pswpin), (1, 1, 1));

    let mut records = on_disk(8);
    records.push(fault(20, 0x1000, 0, 16));
    records.push(out(21, 0x1100, 100));
    records.push(freed(22, 100));
    records.push(fault(23, 0x1100, 100, 1));
    let m = replay_of(&records, true, "fixed:8");
    assert_eq!((m.faults, m.pgmajfault, m.pswpin), (2, 1, 8));
}

/// With swap more than half full, `should_try_to_free_swap()` frees a read
/// fault's slot: the page goes out again to another slot, or its slot to
/// another page. Each such fault counts once; a write fault's slot (freed
/// anyway) and a page written back to its own slot do not.
#[test]
fn a_read_fault_whose_slot_the_kernel_freed_is_counted_once() {
    let write = |ts, vpage, offset| {
        let mut r = fault(ts, vpage, offset, 1);
        if let Record::SwapFault { write, .. } = &mut r {
            *write = true;
        }
        r
    };
    let mut records = on_disk(4);
    records.extend([
        fault(100, 0x1000, 0, 1),
        fault(101, 0x1001, 1, 1),
        write(102, 0x1002, 2),
        fault(103, 0x1003, 3, 1),
        // Page 0 elsewhere; slot 1 to another page, then page 1 elsewhere.
        out(200, 0x1000, 10),
        out(201, 0x2000, 1),
        out(202, 0x1001, 11),
        // The written page elsewhere; page 3 back to its own slot.
        out(203, 0x1002, 12),
        out(204, 0x1003, 3),
    ]);
    for policy in ["none", "cluster", "vma"] {
        let m = replay_of(&records, true, policy);
        assert_eq!(m.faults, 4, "{policy}");
        assert_eq!(m.slots_freed_at_read, 2, "{policy}: {m:?}");
    }
    // Without the frees recorded the model keeps its own LRU: the same.
    assert_eq!(replay_of(&records, false, "none").slots_freed_at_read, 2);
}

/// A large folio written whole and freed whole (`mm_page_free` of its
/// order): every page's entry leaves the swap cache, so readahead reads
/// them again. Freed as its head page only (older traces), the others
/// stay cached and readahead passes over them.
#[test]
fn a_large_folio_freed_whole_frees_every_page() {
    let run = |nr: u32| {
        let mut records = on_disk(0);
        records.push(Record::SwapOut {
            ts: 1,
            tid: 1,
            mm: 1,
            vaddr: 0x1000 << 12,
            entry: SwapEntry { dev: 0, offset: 0 },
            nr: 4,
            how: OutKind::Io,
        });
        records.push(Record::OutFreed {
            ts: 2,
            entry: SwapEntry { dev: 0, offset: 0 },
            nr,
        });
        records.push(fault(3, 0x1000, 0, 4));
        let m = replay_of(&records, true, "fixed:4");
        (m.pswpin, m.swap_ra)
    };
    assert_eq!(run(4), (4, 3));
    assert_eq!(run(1), (1, 0));
    // A count no kernel makes is skipped as a bad record: nothing freed.
    assert_eq!(run(1 << 20), (1, 0));
}

/// Reads beyond the kernel's are paid first with a folio left in the swap
/// cache after its write (`folio_rotate_reclaimable()` put it where reclaim
/// looks first), not the oldest readahead page. The fault on slot 30 reads
/// 24-31; page 0x5000's folio is written and stays; the fault on slot 20
/// reads 8 pages where the kernel read 1 (7 owed). The kernel's free of
/// readahead page 25 pays one: 0x5000's folio goes, and its fault is
/// major; readahead page 24 stays, and its fault is a readahead hit.
#[test]
fn reads_beyond_the_kernel_s_are_paid_with_written_folios_first() {
    let mut records = on_disk(0);
    for s in 16..32 {
        records.extend([out(1, 0x1000 + s, s), freed(1, s)]);
    }
    records.extend([
        fault(2, 0x1000 + 30, 30, 8),
        out(3, 0x5000, 50),
        fault(5, 0x1000 + 20, 20, 1),
        freed(6, 25),
        fault(7, 0x5000, 50, 0),
        fault(8, 0x1000 + 24, 24, 0),
    ]);
    let m = replay_of(&records, true, "fixed:8");
    assert_eq!((m.pgmajfault, m.pswpin, m.swap_ra_hit), (3, 17, 1));
}

/// Cluster readahead (page-cluster 3) after a window of 8 shrank to 1 by
/// three lone misses (`__swapin_nr_pages()`: no hits, not adjacent, half the
/// last window at least): page 0x3000 is written to slot 60 and faulted
/// (minor) before or after its write's I/O ends, then slot 70 misses.
/// During the write its folio has PG_reclaim, the bit of PG_readahead:
/// `swap_update_readahead()` counts a readahead hit, so the miss gets 3
/// pages (a hit plus 2), rounded to a window of 4 (68..71) instead of 1.
/// Without the trace's write ends nothing tells: no hit.
#[test]
fn a_fault_during_the_write_s_io_is_a_readahead_hit() {
    let replay = |end_at: u64, ends: bool| {
        let mut records = on_disk(80);
        // Windows 8 (the kernel's initial 4 hits), 4, 2, 1.
        records.extend([
            read(200, 0, 8, 0),
            read(201, 20, 4, 0),
            read(202, 30, 2, 0),
            read(203, 50, 1, 0),
        ]);
        records.extend([
            out(300, 0x3000, 60),
            Record::WriteEnd {
                ts: end_at,
                entry: SwapEntry { dev: 0, offset: 60 },
                nr: 1,
            },
            fault(302, 0x3000, 60, 0),
            read(400, 70, 4, 0),
        ]);
        let mut b = InputBuilder::new(4096).out_freed(true).write_ends(ends);
        for r in &records {
            b.add(r);
        }
        let m = run("cluster", &b.finish(3, 1 << 20).expect("input"));
        (m.pswpin, m.swap_ra_hit, m.writeback_hits, m.accuracy())
    };
    // The hit is no readahead page's: accuracy counts readahead's own.
    assert_eq!(replay(303, true), (8 + 4 + 2 + 1 + 4, 1, 1, 0.0));
    assert_eq!(replay(301, true), (8 + 4 + 2 + 1 + 1, 0, 0, 0.0));
    assert_eq!(replay(303, false), (8 + 4 + 2 + 1 + 1, 0, 0, 0.0));
}

/// Two pages of memory, windows of 2 (the aligned pair): pages 3 (2 read
/// ahead), then 2 (a hit), 4 (5 ahead) and 6 (7 ahead). As
/// `folio_check_references()` has it, the fault's PTE reference spares a
/// mapped page one trip around the inactive list (PG_referenced), and the
/// next finds it unreferenced: reclaim takes 5 and 3, then 2 and 4, and
/// readahead page 7 is still there for its fault, a hit. Activated at its
/// first scan instead, page 4 would outlast 7 (read 1 page more).
#[test]
fn a_mapped_page_goes_round_the_inactive_list_once_more() {
    let mut records: Vec<Record> = (2..8)
        .flat_map(|i| [out(2 * i, 0x1000 + i, i), freed(2 * i + 1, i)])
        .collect();
    records.extend([
        fault(20, 0x1003, 3, 2),
        fault(21, 0x1002, 2, 0),
        fault(22, 0x1004, 4, 2),
        fault(23, 0x1006, 6, 2),
        fault(24, 0x1007, 7, 0),
    ]);
    let m = replay_stored(&records, "fixed:2", |inp| inp.memory_pages = 2);
    assert_eq!(
        (m.pgmajfault, m.pswpin, m.swap_ra, m.swap_ra_hit),
        (3, 6, 3, 2)
    );
}

/// Three pages of memory, windows of 2 (slots 3 and 6 unused): the kernel
/// frees page 2's folio, so its scan had passed page 1 before it and
/// spared it (PG_referenced) to the young end. When page 7's fault needs
/// room, page 1 goes, unreferenced since; readahead page 5, read after
/// the spare, is still there for its fault. Without the spare, the scan
/// would reach page 1 first, spare it then, and take 5.
#[test]
fn the_kernel_s_free_spares_the_referenced_pages_its_scan_passed() {
    let mut records: Vec<Record> = [1, 2, 4, 5, 7]
        .into_iter()
        .flat_map(|i| [out(2 * i, 0x1000 + i, i), freed(2 * i + 1, i)])
        .collect();
    records.extend([
        fault(20, 0x1001, 1, 1),
        fault(21, 0x1002, 2, 1),
        freed(22, 2),
        fault(23, 0x1004, 4, 2),
        fault(24, 0x1007, 7, 1),
        fault(25, 0x1005, 5, 0),
    ]);
    let m = replay_stored(&records, "fixed:2", |inp| inp.memory_pages = 3);
    assert_eq!((m.pgmajfault, m.pswpin, m.swap_ra_hit), (4, 5, 1));
}
