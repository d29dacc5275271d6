//! Hostile replay input: impossible folios and far swap offsets.

use super::*;

fn out_record(ts: u64, offset: u64, nr: u32) -> Record {
    Record::SwapOut {
        ts,
        tid: 1,
        mm: 1,
        vaddr: 0x7000_0000 + (ts << 12),
        entry: SwapEntry { dev: 0, offset },
        nr,
        how: OutKind::Io,
    }
}

#[test]
fn impossible_folios_and_entries_are_skipped_not_expanded() {
    let mut b = InputBuilder::new(4096);
    // u32::MAX pages near the end of the offsets: neither expanded nor wrapped.
    b.add(&out_record(1, u64::MAX - 5, u32::MAX));
    // Within the folio bound, but the last page is past the type bits.
    b.add(&out_record(2, (1 << SwapEntry::OFFSET_BITS) - 2, 4));
    // A type no kernel has (MAX_SWAPFILES < 32).
    b.add(&Record::SwapOut {
        ts: 3,
        tid: 1,
        mm: 1,
        vaddr: 0x5000,
        entry: SwapEntry { dev: 40, offset: 1 },
        nr: 1,
        how: OutKind::Io,
    });
    b.add(&out_record(4, 10, crate::trace::MAX_FOLIO_PAGES));
    b.add(&Record::SwapFault {
        ts: 5,
        dur_ns: 0,
        tid: 1,
        mm: 1,
        addr: 0x7000_4000,
        entry: Some(SwapEntry {
            dev: 0,
            offset: u64::MAX,
        }),
        major: true,
        pages_read: 1,
        zero_reads: 0,
        zswap_loads: 0,
        write: false,
    });
    b.add(&Record::SwapFault {
        ts: 6,
        dur_ns: 0,
        tid: 1,
        mm: 1,
        addr: 0x7000_4000,
        entry: Some(SwapEntry { dev: 0, offset: 10 }),
        major: true,
        pages_read: 1,
        zero_reads: 0,
        zswap_loads: 0,
        write: false,
    });
    let inp = b.finish(3, 100).unwrap();
    assert_eq!(inp.bad_records, 4);
    // The folio at the bound is kept whole: 8192 swap-outs and one fault.
    assert_eq!(inp.events.len(), crate::trace::MAX_FOLIO_PAGES as usize + 1);
    assert_eq!(
        inp.dev_max,
        vec![10 + crate::trace::MAX_FOLIO_PAGES as u64 - 1]
    );
    let m = run("cluster", &inp);
    assert_eq!(m.faults, 1);
}

#[test]
fn far_swap_offsets_take_only_their_own_slots() {
    let mut b = InputBuilder::new(4096);
    let typed = SwapEntry::from_val(1 << 58 | 1 << 30);
    let far = [
        SwapEntry { dev: 0, offset: 5 },
        SwapEntry {
            dev: 0,
            offset: 1 << 30,
        },
        SwapEntry {
            dev: 0,
            offset: (1 << SwapEntry::OFFSET_BITS) - 1,
        },
        typed,
        // Skipped: past the type bits.
        SwapEntry {
            dev: 0,
            offset: 1 << 63,
        },
        SwapEntry {
            dev: 0,
            offset: u64::MAX,
        },
    ];
    for (i, &entry) in far.iter().enumerate() {
        let (ts, vaddr) = (i as u64 + 1, 0x7000_0000 + ((i as u64) << 12));
        b.add(&Record::SwapOut {
            ts,
            tid: 1,
            mm: 1,
            vaddr,
            entry,
            nr: 1,
            how: OutKind::Io,
        });
        b.add(&Record::SwapFault {
            ts: ts + 100,
            dur_ns: 0,
            tid: 1,
            mm: 1,
            addr: vaddr,
            entry: Some(entry),
            major: true,
            pages_read: 1,
            zero_reads: 0,
            zswap_loads: 0,
            write: false,
        });
    }
    let inp = b.finish(3, 2).unwrap();
    assert_eq!(inp.bad_records, 4);
    let mut t = space::SlotTable::for_input(&inp);
    for ev in &inp.events {
        if let Event::Out {
            mm,
            vpage,
            entry,
            store,
            ..
        } = *ev
        {
            t.insert(
                entry,
                space::Slot {
                    mm,
                    vpage,
                    store,
                    cache: space::Cache::No,
                },
            );
        }
    }
    for e in &far[..4] {
        assert!(t.get(e).is_some(), "{e:?}");
    }
    assert!(t.allocated() < 64, "{} slots", t.allocated());
    for name in default_names(&inp) {
        let m = run(&name, &inp);
        assert_eq!(m.faults, 4, "{name}");
    }
}

#[test]
fn dense_swap_offsets_stay_directly_indexed() {
    let order: Vec<u64> = (0..5000).collect();
    let inp = input(&order, 100, 0);
    let mut t = space::SlotTable::for_input(&inp);
    for (i, ev) in inp.events.iter().enumerate() {
        if let Event::Out {
            mm,
            vpage,
            entry,
            store,
            ..
        } = *ev
        {
            t.insert(
                entry,
                space::Slot {
                    mm,
                    vpage,
                    store,
                    cache: space::Cache::No,
                },
            );
            assert!(t.dense_len(0) > entry.offset as usize, "event {i}");
        }
    }
    assert!(t.allocated() <= 2 * 5001, "{} slots", t.allocated());
}

/// Slots filled in offset order (a swap device's allocator) reallocate the
/// dense table by doubling, not once per few slots, and never past its
/// bound.
#[test]
fn a_dense_table_grows_by_doubling_up_to_its_bound() {
    let cap = 100_000u64;
    let mut t = space::SlotTable::for_counts(&[cap], &[cap - 1]);
    let slot = space::Slot {
        mm: 1,
        vpage: 0,
        store: Store::Device,
        cache: space::Cache::No,
    };
    let mut capacities = vec![0];
    for offset in 0..cap {
        t.insert(SwapEntry { dev: 0, offset }, slot);
        // Dense only: the table's memory is the vector's capacity.
        let c = t.allocated();
        if capacities.last() != Some(&c) {
            capacities.push(c);
        }
    }
    // 0, then each at least twice the last, the last the bound.
    assert!(capacities.len() <= 19, "{} reallocations", capacities.len());
    assert!(capacities
        .windows(2)
        .skip(1)
        .all(|w| w[1] >= 2 * w[0] || w[1] == cap as usize));
    assert_eq!(capacities.last(), Some(&(cap as usize)));
    assert_eq!(t.dense_len(0), cap as usize);
}
