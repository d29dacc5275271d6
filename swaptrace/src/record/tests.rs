//! The event-to-record state machine: each event kind's record, VMA
//! bounds, frees, zaps and lost counts (the joins: `tests/joins.rs`).

use super::*;

fn ev(k: u8) -> RawEvent {
    RawEvent {
        kind: k,
        tid: 10,
        pid: 10,
        comm: *b"work\0\0\0\0\0\0\0\0\0\0\0\0",
        ..RawEvent::default()
    }
}

mod joins;

/// A swap-out's VMA bounds become a Vma record the first time, and
/// again only when they change.
#[test]
fn vma_bounds_are_recorded_when_first_seen_or_changed() {
    let mut r = Recorder::new(4096);
    let out_at = |r: &mut Recorder, addr: u64, before: u32, after: u32| {
        let mut o = ev(kind::SWAP_OUT);
        (o.mm, o.addr, o.entry, o.nr) = (0x1000, addr, 42, 1);
        o.flags2 = exact2::BOUNDS;
        o.aux = before;
        (o.zero, o.zswap) = (after as u16, (after >> 16) as u16);
        let mut out = Vec::new();
        r.ingest(&o, &mut out);
        out.into_iter()
            .filter_map(|x| match x {
                Record::Vma { start, end, .. } => Some((start, end)),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    let vma = (0x7f00_0000_0000, 0x7f00_0000_0000 + (70_000 << 12));
    assert_eq!(out_at(&mut r, 0x7f00_0000_3000, 3, 69_997), vec![vma]);
    assert_eq!(out_at(&mut r, 0x7f00_0000_5000, 5, 69_995), vec![]);
    // Shrunk (munmap of its tail): recorded again.
    assert_eq!(
        out_at(&mut r, 0x7f00_0000_5000, 5, 10),
        vec![(vma.0, 0x7f00_0000_f000)]
    );
    // Unmapped, and mapped again with the same bounds: recorded again.
    let mut u = ev(kind::UNMAPPED);
    (u.mm, u.addr, u.entry) = (0x1000, vma.0, 0x10_0000);
    let mut out = Vec::new();
    r.ingest(&u, &mut out);
    let (start, end) = (vma.0, vma.0 + 0x10_0000);
    assert!(
        matches!(out[..], [Record::Unmapped { mm: 1, start: s, end: e, .. }] if (s, e) == (start, end))
    );
    assert_eq!(
        out_at(&mut r, 0x7f00_0000_5000, 5, 10),
        vec![(vma.0, 0x7f00_0000_f000)]
    );
}

#[test]
fn a_range_free_becomes_a_batch_of_consecutive_entries() {
    let mut r = Recorder::new(4096);
    let mut out = Vec::new();
    // Device 1, offset 1022: two entries cross into cluster 2.
    let head = RawEvent {
        nr: 3,
        aux: 700,
        entry: (1 << 58) | 1022,
        flags: exact::RANGE | exact::FENTRY,
        ..ev(kind::FREE_BATCH)
    };
    let entries = [0xdead; swaptrace_common::FREE_BATCH_MAX];
    r.ingest_free(&FreeBatchEvent { head, entries }, &mut out);
    let Some(Record::FreeBatch {
        entries, lat_ns, ..
    }) = out.last()
    else {
        panic!("no batch: {out:?}")
    };
    assert_eq!(*lat_ns, 700);
    let got: Vec<(u8, u64)> = entries.iter().map(|e| (e.dev, e.offset)).collect();
    assert_eq!(got, [(1, 1022), (1, 1023), (1, 1024)]);
    // A corrupt count is cut at RANGE_MAX.
    let head = RawEvent {
        nr: u32::MAX,
        ..head
    };
    let entries = [0; swaptrace_common::FREE_BATCH_MAX];
    r.ingest_free(&FreeBatchEvent { head, entries }, &mut out);
    let Some(Record::FreeBatch { entries, .. }) = out.last() else {
        panic!("no batch")
    };
    assert_eq!(entries.len(), RANGE_MAX as usize);
}

#[test]
fn every_event_kind_becomes_the_record_of_its_name() {
    // A fork makes no record: it joins later swap-ins.
    for k in (1..kind::COUNT as u8).filter(|&k| k != kind::FORK) {
        let mut r = Recorder::new(4096);
        let mut out = Vec::new();
        if k == kind::FREE_BATCH {
            let head = RawEvent { nr: 1, ..ev(k) };
            let entries = [0; swaptrace_common::FREE_BATCH_MAX];
            r.ingest_free(&FreeBatchEvent { head, entries }, &mut out);
        } else if k == kind::MOVED {
            let (mm, nr, entry) = (0x1000, 1, 0x7000_0000);
            r.ingest(
                &RawEvent {
                    mm,
                    nr,
                    entry,
                    ..ev(k)
                },
                &mut out,
            );
        } else if k == kind::WRITE_END {
            r.ingest(&RawEvent { nr: 1, ..ev(k) }, &mut out);
        } else if k == kind::OUT_ALT {
            // No record of its own: it comes before its swap-out's.
            r.ingest(&ev(k), &mut out);
            assert!(!out.iter().any(|r| matches!(r, Record::SwapOut { .. })));
            r.ingest(&ev(kind::SWAP_OUT), &mut out);
        } else if k == kind::UNMAPPED {
            // An empty range makes no record.
            r.ingest(&RawEvent { entry: 0, ..ev(k) }, &mut out);
            assert!(!out.iter().any(|r| matches!(r, Record::Unmapped { .. })));
            r.ingest(
                &RawEvent {
                    entry: 4096,
                    ..ev(k)
                },
                &mut out,
            );
        } else {
            r.ingest(&ev(k), &mut out);
        }
        let last = out.last().map(|r| r.kind_name());
        assert_eq!(last, Some(kind::name(k)), "kind {k}");
    }
}

#[test]
fn lost_counts_become_records_per_kind() {
    let mut r = Recorder::new(4096);
    let mut out = Vec::new();
    let mut lost = [0u64; kind::COUNT];
    lost[kind::SWAP_FAULT as usize] = 3;
    lost[kind::RECLAIM_BEGIN as usize] = 1;
    lost[kind::RECLAIM_END as usize] = 2;
    r.lost(5, &lost, &mut out);
    assert_eq!(out.len(), 2);
    assert_eq!(r.summary.lost_total(), 6);
    assert_eq!(r.summary.lost["reclaim"], 3);
}

#[test]
fn a_zap_names_its_call_range_once() {
    let mut r = Recorder::new(4096);
    let mut out = Vec::new();
    let mm = 0xffff_8880_0000_3000;
    let vma = 0x7f10_0000_0000u64;
    // A swap-out in a VMA of 64 pages.
    let swap_out = |r: &mut Recorder, out: &mut Vec<Record>| {
        let mut o = ev(kind::SWAP_OUT);
        (o.mm, o.addr, o.entry, o.nr) = (mm, vma, (1u64 << 58) | 9, 1);
        o.flags2 = exact2::BOUNDS;
        (o.aux, o.zero) = (0, 64);
        r.ingest(&o, out);
    };
    let zap = |call: u32, start: u64, pages: u32| {
        let mut z = ev(kind::ZAP);
        (z.mm, z.entry, z.nr, z.addr, z.aux) = (mm, 5, call, start, pages);
        z
    };
    let ranges = |out: &mut Vec<Record>| -> Vec<(&'static str, u64, u64)> {
        out.drain(..)
            .filter_map(|r| match r {
                Record::Unmapped { start, end, .. } => Some(("unmapped", start, end)),
                Record::Zapped { start, end, .. } => Some(("zapped", start, end)),
                Record::Vma { start, end, .. } => Some(("vma", start, end)),
                _ => None,
            })
            .collect()
    };
    swap_out(&mut r, &mut out);
    assert_eq!(ranges(&mut out), vec![("vma", vma, vma + 64 * 4096)]);
    // madvise(): zapped, the VMA kept. Its next PTE table's zap is the
    // same call: no second record.
    let z = zap(zap_range::MADVISE, vma + 0x2000, 4);
    r.ingest(&z, &mut out);
    r.ingest(&z, &mut out);
    assert_eq!(
        ranges(&mut out),
        vec![("zapped", vma + 0x2000, vma + 0x6000)]
    );
    swap_out(&mut r, &mut out);
    assert_eq!(ranges(&mut out), vec![], "the VMA is still known");
    // After that swap-out, the same call again is another zap.
    r.ingest(&z, &mut out);
    assert_eq!(
        ranges(&mut out),
        vec![("zapped", vma + 0x2000, vma + 0x6000)]
    );
    // munmap(): unmapped, cut to what the trace holds, the VMA forgotten.
    r.ingest(&zap(zap_range::UNMAP, vma, 1 << 20), &mut out);
    assert_eq!(ranges(&mut out), vec![("unmapped", vma, vma + 64 * 4096)]);
    swap_out(&mut r, &mut out);
    assert_eq!(ranges(&mut out), vec![("vma", vma, vma + 64 * 4096)]);
    // No call named (exit, another call): the zap alone.
    r.ingest(&zap(zap_range::NONE, vma, 4), &mut out);
    assert!(out.iter().any(|r| matches!(r, Record::Zap { .. })));
    assert_eq!(ranges(&mut out), vec![]);
    // Outside what the trace holds: nothing.
    r.ingest(&zap(zap_range::MADVISE, 0x1000, 4), &mut out);
    assert_eq!(ranges(&mut out), vec![]);
}

/// A swap read inside `madvise(MADV_WILLNEED)` becomes a will_need record
/// with the call's range and address space; one outside stays a swap_read.
#[test]
fn willneed_reads_carry_their_call_s_range() {
    let mut r = Recorder::new(4096);
    let mut out = Vec::new();
    let mut e = ev(kind::SWAP_READ);
    e.nr = 1;
    e.aux = read_kind::ZERO;
    r.ingest(&e, &mut out);
    e.flags2 = exact2::WILLNEED;
    e.mm = 0xffff_8880_0000_1000;
    e.addr = 0x7f00_0000_0000;
    e.entry = 0x20_0000;
    r.ingest(&e, &mut out);
    let reads: Vec<_> = out
        .iter()
        .filter(|o| matches!(o, Record::SwapRead { .. } | Record::WillNeed { .. }))
        .collect();
    assert_eq!(
        reads,
        [
            &Record::SwapRead {
                ts: 0,
                tid: 10,
                how: ReadKind::Zero,
                nr: 1
            },
            &Record::WillNeed {
                ts: 0,
                tid: 10,
                mm: 1,
                start: 0x7f00_0000_0000,
                end: 0x7f00_0020_0000,
                how: ReadKind::Zero,
                nr: 1
            }
        ]
    );
}

/// A write's end becomes a write_end record of its entries, and names no
/// task (an interrupt ends the I/O); one naming no page is dropped.
#[test]
fn write_ends_name_their_entries_and_no_task() {
    let mut r = Recorder::new(4096);
    let mut out = Vec::new();
    let mut e = ev(kind::WRITE_END);
    e.ts_ns = 77;
    e.entry = (1u64 << 58) | 4096;
    e.nr = 32;
    r.ingest(&e, &mut out);
    e.nr = 0;
    r.ingest(&e, &mut out);
    assert_eq!(
        out,
        [Record::WriteEnd {
            ts: 77,
            entry: SwapEntry {
                dev: 1,
                offset: 4096
            },
            nr: 32
        }]
    );
}
