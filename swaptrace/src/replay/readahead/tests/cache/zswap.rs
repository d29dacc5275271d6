//! zswap stores and writebacks, and folios the kernel's lookup found.

use super::*;

#[test]
fn a_stored_folios_own_free_is_not_a_second_free() {
    // A folio stored to zswap leaves at its swap-out; the free the
    // recorder saw right after it is that folio's. A free a second or more
    // later (a folio read ahead since) is one, and so is a free after a
    // fault of the entry, after a store to the device, or after a store of
    // the entry with no owner.
    let out_as = |ts, offset, how| swap_out(1, ts, 0x1000 + offset, offset, how);
    let mut b = InputBuilder::new(4096).out_freed(true);
    for r in [
        out_as(1_000, 1, OutKind::Zswap),
        freed(2_000, 1),
        out_as(1_000, 2, OutKind::Zswap),
        freed(2_000_000_000, 2),
        out_as(1_000, 3, OutKind::Io),
        freed(2_000, 3),
        out_as(1_000, 4, OutKind::Zswap),
        read(1_500, 4, 0, 1),
        freed(2_000, 4),
        // A zero-filled store's free stays a free (the host's readahead
        // replay balances memory with it).
        out_as(1_000, 6, OutKind::Zero),
        freed(2_000, 6),
        // Stored, then its entry's folio read ahead and stored again with
        // no owner (never mapped): that free is the read-ahead folio's.
        out_as(1_000, 5, OutKind::Zswap),
        swap_out(0, 1_500, 0, 5, OutKind::Zswap),
        freed(1_600, 5),
    ] {
        b.add(&r);
    }
    let input = b.finish(3, 100).expect("input");
    let frees: Vec<u64> = input
        .events
        .iter()
        .filter_map(|ev| match ev {
            Event::Freed { entry, .. } => Some(entry.offset),
            _ => None,
        })
        .collect();
    assert_eq!(frees, vec![5, 3, 4, 6, 2]);
    let paid = input
        .events
        .iter()
        .filter(|ev| matches!(ev, Event::Paid { .. }))
        .count();
    assert_eq!(paid, 1, "the one own free of a zswap store");
}

#[test]
fn a_zswap_writeback_puts_the_page_on_the_device() {
    // Three pages stored to zswap; zswap writes two back. One folio is
    // freed: that free is the writeback's, not a page the kernel held
    // beyond the model, and the fault reads the page from the device. The
    // other is still in the swap cache when its page faults: a minor
    // fault, where the model alone would read it from zswap.
    let s = 1_000_000_000;
    let replay_with = |with_writeback: bool| {
        let mut records = on_disk(0);
        records.extend([stored(10, 10), stored(20, 20), stored(30, 30)]);
        if with_writeback {
            records.push(writeback(2 * s, 2, None));
        }
        records.extend([
            freed(2 * s + 10, 10),
            read(3 * s, 10, 1, 0),
            read(3 * s + 10, 20, 0, 1),
            read(3 * s + 20, 30, 0, 0),
        ]);
        replay_of(&records, true, "none")
    };
    let with = replay_with(true);
    assert_eq!((with.pswpin, with.zswpin, with.pgmajfault), (1, 1, 2));
    assert_eq!(with.faults, 3);
    // Without the writeback record, every page is read from zswap.
    let without = replay_with(false);
    assert_eq!(
        (without.pswpin, without.zswpin, without.pgmajfault),
        (0, 3, 3)
    );
}

#[test]
fn a_writeback_that_names_its_entry_leaves_that_folio_in_the_swap_cache() {
    // Pages 12-15 stored to zswap, page 13 written back. The fault on 12
    // reads the aligned window 12-15 (fixed:4): 12, 14 and 15 from zswap,
    // not 13, whose writeback folio is in the swap cache; its fault is a
    // hit, not a readahead one. Unnamed, the writeback changes nothing
    // here: 13 is read ahead from zswap like the others.
    let replay_with = |named: Option<u64>| {
        let mut records = on_disk(0);
        records.extend((12..16).map(|o| stored(o, o)));
        records.push(writeback(100, 1, named));
        records.extend([read(200, 12, 0, 4), read(300, 13, 0, 0)]);
        replay_of(&records, true, "fixed:4")
    };
    let named = replay_with(Some(13));
    assert_eq!((named.zswpin, named.swap_ra, named.swap_ra_hit), (3, 2, 0));
    assert_eq!((named.faults, named.pgmajfault, named.pswpin), (2, 1, 0));
    let unnamed = replay_with(None);
    assert_eq!(
        (unnamed.zswpin, unnamed.swap_ra, unnamed.swap_ra_hit),
        (4, 3, 1)
    );
    assert_eq!(unnamed.pgmajfault, 1);
}

#[test]
fn a_written_back_page_the_kernel_served_without_a_read_is_a_hit() {
    // Memory of two pages. Page 20 is written back; faults on 10 and 30
    // read them from zswap, and reclaim takes 20's folio, the oldest. The
    // kernel still had it: its fault on 20 read nothing. So does the
    // model's, rather than read the device.
    let mut b = InputBuilder::new(4096).out_freed(true);
    let mut records = on_disk(0);
    records.extend([stored(10, 10), stored(20, 20), stored(30, 30)]);
    records.extend([
        writeback(100, 1, Some(20)),
        read(200, 10, 0, 1),
        read(300, 30, 0, 1),
        read(400, 20, 0, 0),
    ]);
    for r in &records {
        b.add(r);
    }
    let m = run("none", &b.finish(3, 2).unwrap());
    assert_eq!(m.faults, 3);
    assert_eq!((m.pswpin, m.zswpin, m.pgmajfault), (0, 2, 2));
}

#[test]
fn a_fault_served_without_a_read_is_a_hit_on_an_unseen_swap_out() {
    // No swap-out recorded for either entry: the first fault read nothing
    // (its folio was in the swap cache, unmapped by reclaim before its
    // write), the second read its page from the device.
    let m = replay_of(
        &[fault(10, 0x1040, 40, 0), fault(20, 0x1050, 50, 1)],
        false,
        "none",
    );
    assert_eq!((m.faults, m.pgmajfault, m.pswpin), (2, 1, 1));
}

/// The kernel's lookup for the fault on `offset` found a folio, not read
/// ahead, in the swap cache.
fn found(ts: u64, offset: u64, ra_hit: bool) -> Record {
    Record::CacheLookup {
        ts,
        tid: 1,
        entry: SwapEntry { dev: 0, offset },
        hit: true,
        ra_hit,
    }
}

#[test]
fn a_stored_folio_the_kernel_still_had_is_a_hit() {
    // Pages 10 and 20 stored to zswap; the model lets their folios go at
    // the store. The kernel's lookups found 10's folio (reclaim had not
    // freed it yet): a hit with nothing read. 20's lookup found a readahead
    // folio, which this policy (none) never made: a miss, read from zswap.
    // Without a lookup the rule does not apply either.
    let records = [
        stored(10, 10),
        stored(20, 20),
        stored(30, 30),
        found(101, 10, false),
        read(100, 10, 0, 0),
        found(201, 20, true),
        read(200, 20, 0, 0),
        read(300, 30, 0, 0),
    ];
    let m = replay_of(&records, false, "none");
    assert_eq!(m.faults, 3);
    assert_eq!((m.zswpin, m.pgmajfault), (2, 2));
    // Another task's lookup, or one of another entry, tells nothing.
    let mut other = found(101, 10, false);
    if let Record::CacheLookup { tid, .. } = &mut other {
        *tid = 2;
    }
    let m = replay_of(&[stored(10, 10), other, read(100, 10, 0, 0)], false, "none");
    assert_eq!(m.pgmajfault, 1);
    let m = replay_of(
        &[stored(10, 10), found(101, 11, false), read(100, 10, 0, 0)],
        false,
        "none",
    );
    assert_eq!(m.pgmajfault, 1);
}

#[test]
fn a_stored_folio_stays_until_its_recorded_free() {
    // A recording that watched stored folios: pages 8 (zswap) and 10
    // (zero-filled) keep their folios, 9's is freed. The fault on 9 reads
    // it from zswap, and its window of 8 passes over 8 and 10, whose
    // faults are plain hits. An older recording (stored folios let go at
    // the store) reads both ahead, and their faults are readahead hits.
    let records = [
        on_disk(0)[0].clone(),
        stored(1, 8),
        stored(2, 9),
        swap_out(1, 3, 0x1000 + 10, 10, OutKind::Zero),
        freed(4, 9),
        read(100, 9, 0, 1),
        read(200, 8, 0, 0),
        read(300, 10, 0, 0),
    ];
    let replay = |stored_frees| {
        let mut b = InputBuilder::new(4096)
            .out_freed(true)
            .stored_frees(stored_frees);
        for r in &records {
            b.add(r);
        }
        let m = run("fixed:8", &b.finish(3, 1 << 20).expect("input"));
        (m.faults, m.pgmajfault, m.zswpin, m.swap_ra, m.swap_ra_hit)
    };
    assert_eq!(replay(true), (3, 1, 1, 0, 0));
    assert_eq!(replay(false), (3, 1, 2, 2, 2));
}
