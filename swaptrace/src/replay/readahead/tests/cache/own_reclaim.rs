//! A fault's own reclaim: the slots it filled and freed while the fault ran.

use super::*;

/// Slots 8-15: pages 0x1000 + slot on disk, but for `free` (no swap-out).
/// Then a fault of task 1 on `slot` from ts 100 for 50 ns that read
/// `kernel_read` pages, during which task `tid`'s reclaim wrote pages
/// 0x2000.. to the free slots and their folios were freed. Recorded at
/// its end, the fault's record follows theirs.
fn fault_with_reclaim(free: &[u64], slot: u64, kernel_read: u32, tid: u32) -> Vec<Record> {
    let mut records = on_disk(0);
    for s in (8..16).filter(|s| !free.contains(s)) {
        records.extend([out(s, 0x1000 + s, s), freed(s, s)]);
    }
    for (i, &s) in free.iter().enumerate() {
        let ts = 110 + 2 * i as u64;
        records.push(Record::SwapOut {
            ts,
            tid,
            mm: 1,
            vaddr: (0x2000 + s) << 12,
            entry: SwapEntry { dev: 0, offset: s },
            nr: 1,
            how: OutKind::Io,
        });
        records.push(freed(ts + 1, s));
    }
    let mut f = fault(100, 0x1000 + slot, slot, kernel_read);
    if let Record::SwapFault { dur_ns, .. } = &mut f {
        *dur_ns = 50;
    }
    records.push(f);
    records
}

/// The fault's own reclaim ran at the first allocation of its window
/// (slot 8): the slots it filled after it (12, 13) were read, 8 pages as
/// the kernel. The swap-outs and frees go before the fault's reads; before,
/// ordered after the fault's start, they were not (6 pages).
#[test]
fn a_fault_reads_the_slots_its_own_reclaim_filled_and_freed() {
    let records = fault_with_reclaim(&[12, 13], 8, 8, 1);
    let m = replay_of(&records, true, "fixed:8");
    assert_eq!((m.pgmajfault, m.pswpin, m.swap_ra), (1, 8, 7));
    // Another task's reclaim meanwhile: after the fault's start, as recorded.
    let m = replay_of(&fault_with_reclaim(&[12, 13], 8, 6, 2), true, "fixed:8");
    assert_eq!((m.pgmajfault, m.pswpin, m.swap_ra), (1, 6, 5));
    // The events: the own swap-outs and frees at the fault's start, before it.
    let mut b = InputBuilder::new(4096).out_freed(true);
    for r in &records {
        b.add(r);
    }
    let inp = b.finish(3, 1 << 20).expect("input");
    let at = |want: &dyn Fn(&Event) -> bool| inp.events.iter().position(want).expect("event");
    let fault = at(&|e| matches!(e, Event::Fault { .. }));
    for s in [12, 13] {
        let entry = SwapEntry { dev: 0, offset: s };
        let o = at(&|e| matches!(*e, Event::Out { entry: x, .. } if x == entry));
        let f = at(&|e| matches!(*e, Event::Freed { entry: x, .. } if x == entry));
        assert!(o < f && f < fault, "slot {s}: {:?}", inp.events);
        assert!(matches!(
            inp.events[o],
            Event::Out {
                ts: 100,
                in_fault: true,
                ..
            }
        ));
        assert_eq!(inp.events[f].ts(), 100);
    }
}

/// A slot another task's write fault freed while the fault ran, which the
/// fault's reclaim then filled: that swap-out stays after the write fault
/// (its slot was not free before), and so does its free.
#[test]
fn a_slot_freed_by_another_fault_meanwhile_is_filled_after_it() {
    let mut records = on_disk(0);
    for s in 8..16 {
        records.extend([out(s, 0x1000 + s, s), freed(s, s)]);
    }
    let entry = SwapEntry { dev: 0, offset: 13 };
    records.extend([
        // Task 2 writes page 0x100d: its slot is freed.
        Record::SwapFault {
            ts: 105,
            dur_ns: 1,
            tid: 2,
            mm: 1,
            addr: 0x100d << 12,
            entry: Some(entry),
            major: true,
            pages_read: 1,
            zero_reads: 0,
            zswap_loads: 0,
            write: true,
        },
        // Task 1's reclaim writes page 0x200d to that slot.
        Record::SwapOut {
            ts: 110,
            tid: 1,
            mm: 1,
            vaddr: 0x200d << 12,
            entry,
            nr: 1,
            how: OutKind::Io,
        },
        freed(111, 13),
    ]);
    let mut f = fault(100, 0x1008, 8, 8);
    if let Record::SwapFault { dur_ns, .. } = &mut f {
        *dur_ns = 50;
    }
    records.push(f);
    let mut b = InputBuilder::new(4096).out_freed(true);
    for r in &records {
        b.add(r);
    }
    let inp = b.finish(3, 1 << 20).expect("input");
    let at = |want: &dyn Fn(&Event) -> bool| inp.events.iter().position(want).expect("event");
    let write = at(&|e| matches!(*e, Event::Fault { ts: 105, .. }));
    let o = at(&|e| matches!(*e, Event::Out { vpage: 0x200d, .. }));
    let fr = at(&|e| matches!(*e, Event::Freed { ts, entry: x } if x == entry && ts > 100));
    assert!(write < o && o < fr, "{:?}", inp.events);
    assert!(matches!(
        inp.events[o],
        Event::Out {
            ts: 110,
            in_fault: false,
            ..
        }
    ));
}

/// Slots 8 and 9 were free when the kernel's walk of the window passed
/// them; its first allocation (slot 10) reclaimed, and the reclaim filled
/// them: not read (6 pages, slots 10-15).
#[test]
fn slots_the_fault_s_reclaim_filled_below_its_first_allocation_are_not_read() {
    let records = fault_with_reclaim(&[8, 9], 12, 6, 1);
    let m = replay_of(&records, true, "fixed:8");
    assert_eq!((m.pgmajfault, m.pswpin, m.swap_ra), (1, 6, 5));
}
