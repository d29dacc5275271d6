//! The kernel's swap cache from a trace that records folio frees
//! (`Record::OutFreed`): a written folio stays cached until freed, a freed
//! one is read again, and reads beyond the kernel's cost a reclaim.

use super::*;

fn out(ts: u64, vpage: u64, offset: u64) -> Record {
    Record::SwapOut {
        ts,
        tid: 1,
        mm: 1,
        vaddr: vpage << 12,
        entry: SwapEntry { dev: 0, offset },
        nr: 1,
        how: OutKind::Io,
    }
}

fn fault(ts: u64, vpage: u64, offset: u64, pages_read: u32) -> Record {
    Record::SwapFault {
        ts,
        dur_ns: 0,
        tid: 1,
        mm: 1,
        addr: vpage << 12,
        entry: Some(SwapEntry { dev: 0, offset }),
        major: pages_read > 0,
        pages_read,
        zero_reads: 0,
        zswap_loads: 0,
        write: false,
    }
}

fn freed(ts: u64, offset: u64) -> Record {
    Record::OutFreed {
        ts,
        entry: SwapEntry { dev: 0, offset },
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
/// memory is even again, and it goes too.
#[test]
fn reads_below_the_kernel_s_keep_pages_the_kernel_freed() {
    let run_with = |kernel_read: u32, kernel_had_100: bool| {
        let mut records = on_disk(8);
        records.push(out(17, 0x1100, 100));
        records.push(freed(18, 100));
        records.push(fault(20, 0x1000, 0, kernel_read));
        if kernel_had_100 {
            records.push(freed(21, 100));
        }
        records.push(freed(22, 1));
        records.push(fault(23, 0x1001, 1, 1));
        let m = replay_of(&records, true, "fixed:8");
        (m.pgmajfault, m.swap_ra_hit, m.pollution)
    };
    assert_eq!(run_with(16, false), (1, 1, 0));
    assert_eq!(run_with(8, false), (2, 0, 1));
    assert_eq!(run_with(9, true), (2, 0, 1));
    assert_eq!(run_with(9, false), (1, 1, 0));
}
