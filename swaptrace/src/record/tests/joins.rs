//! The joins of `record/joins.rs`: a fault to its page's swap-out, across
//! mremap(), fork, unmaps, GUP calls and two VMAs at one page offset.

use super::*;

#[test]
fn faults_join_the_swap_out_of_their_page() {
    let mut r = Recorder::new(4096);
    let mut out = Vec::new();
    let mut o = ev(kind::SWAP_OUT);
    o.mm = 0xffff_8880_0000_1000;
    o.addr = 0x7f00_0000_3000;
    o.entry = (1u64 << 58) | 42;
    o.nr = 1;
    o.flags = flag::OUT_IO;
    r.ingest(&o, &mut out);
    let mut f = ev(kind::SWAP_FAULT);
    f.mm = o.mm;
    f.addr = 0x7f00_0000_3abc;
    f.nr = 4;
    f.flags = flag::MAJOR;
    r.ingest(&f, &mut out);
    // A second fault on the page without a new swap-out (a clean page
    // dropped and read again) has the same entry.
    r.ingest(&f, &mut out);
    let faults: Vec<_> = out
        .iter()
        .filter_map(|r| match r {
            Record::SwapFault { entry, mm, .. } => Some((*entry, *mm)),
            _ => None,
        })
        .collect();
    assert_eq!(
        faults,
        vec![
            (Some(SwapEntry { dev: 1, offset: 42 }), 1),
            (Some(SwapEntry { dev: 1, offset: 42 }), 1)
        ]
    );
    assert!(matches!(out[0], Record::Task { tid: 10, .. }));
    assert!(matches!(out[1], Record::AddressSpace { mm: 1, pid: 0 }));
    let s = &r.summary;
    assert_eq!((s.faults, s.faults_major, s.faults_joined), (2, 2, 2));
    assert_eq!((s.swap_outs, s.swap_out_io, s.fault_pages_read), (1, 1, 8));
}

/// mremap() moved swapped-out pages: a fault at the new address joins
/// the swap-out made at the old one, a fault at the old one joins none.
/// A move that names a range the probe read wrongly makes no record.
#[test]
fn faults_after_mremap_join_the_swap_out_before_it() {
    let mut r = Recorder::new(4096);
    let mut out = Vec::new();
    let (mm, old, new) = (
        0xffff_8880_0000_1000u64,
        0x7f00_0010_0000u64,
        0x7e00_0000_0000u64,
    );
    for (i, off) in [(0u64, 42u64), (3, 43), (16, 44)] {
        let mut o = ev(kind::SWAP_OUT);
        (o.mm, o.addr, o.entry, o.nr) = (mm, old + i * 4096, (1u64 << 58) | off, 1);
        r.ingest(&o, &mut out);
    }
    // 16 pages move: the third swap-out's page is past them.
    let mut m = ev(kind::MOVED);
    (m.mm, m.addr, m.entry, m.nr) = (mm, new, old, 16);
    r.ingest(&m, &mut out);
    let Some(Record::Moved {
        mm: 1,
        from,
        to,
        len,
        ..
    }) = out.last()
    else {
        panic!("no move: {out:?}")
    };
    assert_eq!((*from, *to, *len), (old, new, 16 * 4096));
    fn fault_at(r: &mut Recorder, out: &mut Vec<Record>, mm: u64, addr: u64) -> Option<u64> {
        let mut f = ev(kind::SWAP_FAULT);
        (f.mm, f.addr, f.flags) = (mm, addr, flag::MAJOR);
        r.ingest(&f, out);
        match out.last() {
            Some(Record::SwapFault { entry, .. }) => entry.map(|e| e.offset),
            other => panic!("not a fault: {other:?}"),
        }
    }
    macro_rules! fault {
        ($a:expr) => {
            fault_at(&mut r, &mut out, mm, $a)
        };
    }
    assert_eq!(fault!(new + 3 * 4096 + 5), Some(43));
    assert_eq!(fault!(new), Some(42));
    assert_eq!(fault!(old + 3 * 4096), None);
    assert_eq!(fault!(old + 16 * 4096), Some(44));
    // Reclaim during the move names the page through the old VMA (on
    // the anon_vma until the move ends) by its old address: the page is
    // at the new one.
    let out_at = |addr: u64, vma: (u64, u64), offset: u64| {
        let mut o = ev(kind::SWAP_OUT);
        (o.mm, o.addr, o.entry, o.nr) = (mm, addr, (1u64 << 58) | offset, 1);
        (o.ts_ns, o.flags2) = (1000, exact2::BOUNDS);
        o.aux = ((addr - vma.0) >> 12) as u32;
        o.zero = ((vma.1 - addr) >> 12) as u16;
        o
    };
    r.ingest(
        &out_at(old + 5 * 4096, (old, old + 16 * 4096), 45),
        &mut out,
    );
    assert_eq!(fault!(new + 5 * 4096), Some(45));
    // The moved VMA grew in place over the old range (mremap() with no
    // move): its page there is named through it, and stays.
    let grown = (new, old + 32 * 4096);
    r.ingest(&out_at(old + 7 * 4096, grown, 47), &mut out);
    assert_eq!(fault!(old + 7 * 4096), Some(47));
    // A new mapping took the old range: its pages are its own.
    let mut u = ev(kind::UNMAPPED);
    (u.mm, u.addr, u.entry) = (mm, old, 4096 * 16);
    r.ingest(&u, &mut out);
    r.ingest(
        &out_at(old + 6 * 4096, (old, old + 16 * 4096), 46),
        &mut out,
    );
    assert_eq!(fault!(old + 6 * 4096), Some(46));
    assert_eq!(fault!(new + 6 * 4096), None);
    let before = out.len();
    let mut bad = ev(kind::MOVED);
    (bad.mm, bad.addr, bad.entry, bad.nr) = (mm, new, u64::MAX - 4096, 16);
    r.ingest(&bad, &mut out);
    assert!(!out[before..]
        .iter()
        .any(|r| matches!(r, Record::Moved { .. })));
}

/// A page swapped out under the parent's mm and faulted in a forked
/// child (or a grandchild) joins the parent's swap-out; a stranger at
/// the same address does not.
#[test]
fn swap_ins_of_pages_shared_by_fork_join_the_family_swap_out() {
    let (parent, child, grandchild, stranger) = (0x1000u64, 0x2000, 0x3000, 0x4000);
    let mut r = Recorder::new(4096);
    let mut out = Vec::new();
    let mut o = ev(kind::SWAP_OUT);
    (o.mm, o.addr, o.entry, o.nr) = (parent, 0x7f00_0000_3000, (1u64 << 58) | 42, 1);
    r.ingest(&o, &mut out);
    for (p, c) in [(parent, child), (child, grandchild)] {
        let mut f = ev(kind::FORK);
        (f.mm, f.entry) = (c, p);
        r.ingest(&f, &mut out);
    }
    let fault = |mm: u64, write: bool, r: &mut Recorder| {
        let mut f = ev(kind::SWAP_FAULT);
        (f.mm, f.addr) = (mm, 0x7f00_0000_3008);
        f.flags = if write { flag::WRITE } else { 0 };
        let mut out = Vec::new();
        r.ingest(&f, &mut out);
        match out.pop() {
            Some(Record::SwapFault { entry, write, .. }) => (entry, write),
            other => panic!("{other:?}"),
        }
    };
    let e = Some(SwapEntry { dev: 1, offset: 42 });
    assert_eq!(fault(child, false, &mut r), (e, false));
    assert_eq!(fault(grandchild, true, &mut r), (e, true));
    assert_eq!(fault(stranger, false, &mut r), (None, false));
    // The other way: swapped out under the child, faulted by the parent.
    let mut o2 = o;
    (o2.mm, o2.addr, o2.entry) = (child, 0x7f00_0000_5000, (1u64 << 58) | 43);
    r.ingest(&o2, &mut out);
    let mut f = ev(kind::SWAP_FAULT);
    (f.mm, f.addr) = (parent, 0x7f00_0000_5000);
    let mut out = Vec::new();
    r.ingest(&f, &mut out);
    assert!(matches!(
        out.last(),
        Some(Record::SwapFault {
            entry: Some(SwapEntry { offset: 43, .. }),
            ..
        })
    ));
}

/// A range cleared from an address space (munmap) arrives as wide as the
/// maple tree's empty span around it: its record keeps only what the
/// trace may hold (swap-outs, faults, VMAs of that mm); a range of an
/// address space the trace holds nothing of, or one outside what it
/// holds, makes no record.
#[test]
fn a_cleared_range_is_cut_to_what_the_trace_holds() {
    let mut r = Recorder::new(4096);
    let mut out = Vec::new();
    let mm = 0xffff_8880_0000_2000;
    let cleared = |start: u64, last: u64| {
        let mut u = ev(kind::UNMAPPED);
        (u.mm, u.addr, u.entry, u.nr) = (mm, start, (last - start).saturating_add(1), 1);
        u
    };
    // Nothing recorded of this mm yet.
    r.ingest(&cleared(0x1000, u64::MAX), &mut out);
    assert!(!out.iter().any(|r| matches!(r, Record::Unmapped { .. })));
    let mut o = ev(kind::SWAP_OUT);
    (o.mm, o.addr, o.entry, o.nr) = (mm, 0x7f00_0001_0000, (1u64 << 58) | 7, 1);
    r.ingest(&o, &mut out);
    let mut f = ev(kind::SWAP_FAULT);
    (f.mm, f.addr) = (mm, 0x7f00_0004_0123);
    r.ingest(&f, &mut out);
    let unmapped = |out: &mut Vec<Record>| -> Vec<(u64, u64)> {
        out.drain(..)
            .filter_map(|r| match r {
                Record::Unmapped { start, end, .. } => Some((start, end)),
                _ => None,
            })
            .collect()
    };
    out.clear();
    // Terabytes wide: cut to the pages recorded.
    r.ingest(&cleared(0x5555_0000_0000, 0x7fff_ffff_ffff), &mut out);
    assert_eq!(
        unmapped(&mut out),
        vec![(0x7f00_0001_0000, 0x7f00_0004_1000)]
    );
    // Inside: kept as it is.
    r.ingest(&cleared(0x7f00_0002_0000, 0x7f00_0002_ffff), &mut out);
    assert_eq!(
        unmapped(&mut out),
        vec![(0x7f00_0002_0000, 0x7f00_0003_0000)]
    );
    // Outside: no record.
    r.ingest(&cleared(0x7f00_0005_0000, 0x7f00_0005_ffff), &mut out);
    assert_eq!(unmapped(&mut out), vec![]);
    // A range a new mapping found free is not cut.
    let mut u = ev(kind::UNMAPPED);
    (u.mm, u.addr, u.entry) = (mm, 0x7f00_0005_0000, 0x1_0000);
    r.ingest(&u, &mut out);
    assert_eq!(
        unmapped(&mut out),
        vec![(0x7f00_0005_0000, 0x7f00_0006_0000)]
    );
    // A recorded VMA counts whole: its cleared tail, past every page the
    // trace holds, is kept (the replay's VMA shrinks with it).
    let mut o = ev(kind::SWAP_OUT);
    (o.mm, o.addr, o.entry, o.nr) = (mm, 0x7f10_0000_0000, (1u64 << 58) | 9, 1);
    o.flags2 = exact2::BOUNDS;
    (o.aux, o.zero) = (0, 64);
    r.ingest(&o, &mut out);
    out.clear();
    r.ingest(&cleared(0x7f10_0002_0000, 0x7fff_ffff_ffff), &mut out);
    assert_eq!(
        unmapped(&mut out),
        vec![(0x7f10_0002_0000, 0x7f10_0004_0000)]
    );
    // Outside, with VMAs recorded: still no record (and no empty range
    // taken out of them).
    r.ingest(&cleared(0x7f20_0000_0000, 0x7f20_0000_ffff), &mut out);
    assert_eq!(unmapped(&mut out), vec![]);
}

/// A GUP fault ([`exact2::GUP`]) names its call's range, not its page:
/// the recorder takes the pages still swapped out in ascending order, from
/// the range's start again for a new call. From the first GUP fault on, a
/// page a read fault mapped holds its slot, and reclaim freeing its clean
/// folio swaps it out again without a write; a write fault's page does
/// not.
#[test]
fn gup_faults_take_the_swapped_out_pages_of_their_range_in_order() {
    const MM: u64 = 0xffff_8880_0000_1000;
    const BASE: u64 = 0x7f00_0000_0000;
    let mut r = Recorder::new(4096);
    let mut out = Vec::new();
    let out_page = |r: &mut Recorder, out: &mut Vec<Record>, page: u64| {
        let mut o = ev(kind::SWAP_OUT);
        o.mm = MM;
        o.addr = BASE + page * 4096;
        o.entry = (1u64 << 58) | (100 + page);
        o.flags = flag::OUT_IO;
        r.ingest(&o, out);
    };
    let user_fault = |r: &mut Recorder, out: &mut Vec<Record>, page: u64, write: bool| {
        let mut f = ev(kind::SWAP_FAULT);
        f.mm = MM;
        f.addr = BASE + page * 4096;
        f.flags = if write { flag::WRITE } else { 0 };
        r.ingest(&f, out);
    };
    let gup = |r: &mut Recorder, out: &mut Vec<Record>, first: u64, pages: u32| {
        let mut f = ev(kind::SWAP_FAULT);
        f.mm = MM;
        f.addr = BASE + first * 4096;
        f.flags2 = exact2::GUP;
        f.zero = pages as u16;
        f.zswap = (pages >> 16) as u16;
        r.ingest(&f, out);
        match out.last() {
            Some(Record::SwapFault { addr, entry, .. }) => {
                entry.map(|e| ((addr - BASE) / 4096, e.offset))
            }
            other => panic!("no fault: {other:?}"),
        }
    };
    for page in 0..8 {
        out_page(&mut r, &mut out, page);
    }
    // A first call over pages 6..8 (from here on, kept slots are followed).
    assert_eq!(gup(&mut r, &mut out, 6, 2), Some((6, 106)));
    assert_eq!(gup(&mut r, &mut out, 6, 2), Some((7, 107)));
    // Pages 2 (read) and 3 (write) faulted by the program itself.
    user_fault(&mut r, &mut out, 2, false);
    user_fault(&mut r, &mut out, 3, true);
    // A call over pages 1..6: 1, 4, 5, in order.
    assert_eq!(gup(&mut r, &mut out, 1, 5), Some((1, 101)));
    assert_eq!(gup(&mut r, &mut out, 1, 5), Some((4, 104)));
    assert_eq!(gup(&mut r, &mut out, 1, 5), Some((5, 105)));
    // Reclaim drops the clean folios of pages 2 and 3: page 2 holds its
    // slot, page 3's write fault freed it. Page 1 is written out again.
    for page in [2u64, 3] {
        let mut f = ev(kind::OUT_FREED);
        f.entry = (1u64 << 58) | (100 + page);
        r.ingest(&f, &mut out);
    }
    out_page(&mut r, &mut out, 1);
    // A new call over the same range starts again from its start.
    assert_eq!(gup(&mut r, &mut out, 1, 5), Some((1, 101)));
    assert_eq!(gup(&mut r, &mut out, 1, 5), Some((2, 102)));
    // Nothing of the range left: no page, no entry.
    assert_eq!(gup(&mut r, &mut out, 1, 5), None);
    // Pages 6 and 7 written out again, then zapped by madvise(MADV_DONTNEED).
    out_page(&mut r, &mut out, 6);
    out_page(&mut r, &mut out, 7);
    let mut z = ev(kind::ZAP);
    z.mm = MM;
    z.nr = zap_range::MADVISE;
    z.addr = BASE + 6 * 4096;
    z.aux = 2;
    z.entry = 0;
    r.ingest(&z, &mut out);
    assert_eq!(gup(&mut r, &mut out, 0, 8), Some((0, 100)));
    assert_eq!(gup(&mut r, &mut out, 0, 8), None);
}

/// The per-region counts of swapped-out pages stay what the slots hold
/// (swapped, in the mm's life) through random swap-outs, faults (user and
/// GUP), zaps, unmaps, moves, clean re-swaps and exits of two address
/// spaces over several regions; and a GUP fault takes the first such page
/// of its range, as a search of every slot would.
#[test]
fn swapped_regions_count_what_the_slots_hold() {
    const BASE: u64 = 0x7f00_0000_0000;
    const PAGES: u64 = 3000;
    let mms = [0xffff_8880_0000_1000u64, 0xffff_8880_0000_2000];
    let mut r = Recorder::new(4096);
    let mut out = Vec::new();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut offset = 0u64;
    for step in 0..20_000 {
        let mm = mms[rnd(2) as usize];
        let page = rnd(PAGES);
        let mut e = ev(kind::SWAP_OUT);
        e.mm = mm;
        e.addr = BASE + page * 4096;
        let mut gup = None;
        match rnd(100) {
            0..40 => {
                offset += 1;
                e.entry = (1u64 << 58) | offset;
                e.flags = flag::OUT_IO;
            }
            40..70 => {
                e.kind = kind::SWAP_FAULT;
                e.flags = if rnd(2) == 0 { flag::WRITE } else { 0 };
            }
            70..80 => {
                let pages = 1 + rnd(1200) as u32;
                e.kind = kind::SWAP_FAULT;
                e.flags2 = exact2::GUP;
                e.zero = pages as u16;
                e.zswap = (pages >> 16) as u16;
                let first = (BASE >> 12) + page;
                gup = Some((first, first + u64::from(pages)));
            }
            80..85 => {
                e.kind = kind::ZAP;
                e.nr = zap_range::MADVISE;
                e.aux = 1 + rnd(1500) as u32;
            }
            85..89 => {
                e.kind = kind::UNMAPPED;
                e.entry = (1 + rnd(1500)) * 4096;
                e.nr = (rnd(2) as u32) * UNMAPPED_CLEARED;
            }
            89..92 => {
                e.kind = kind::MOVED;
                e.entry = e.addr;
                e.addr = BASE + rnd(PAGES) * 4096;
                e.nr = 1 + rnd(1000) as u32;
            }
            92..99 => {
                e.kind = kind::OUT_FREED;
                e.entry = (1u64 << 58) | (1 + rnd(offset.max(1)));
                e.nr = 1;
            }
            _ => {
                e.kind = kind::ZAP;
                e.flags = flag::EXITING;
            }
        }
        // What a search of every slot finds for a GUP fault.
        let id = r.mms.get(&mm).copied();
        let swapped = |r: &Recorder, m: u32, p: u64| {
            r.slots
                .get(&(m, p))
                .is_some_and(|h| h.swapped && h.life == r.life(m))
        };
        let want = gup.and_then(|(first, end)| {
            let m = id?;
            let from = match r.gup.get(&10) {
                Some(&(gm, f, e, last)) if (gm, f, e) == (m, first, end) => last + 1,
                _ => first,
            };
            let find = |lo: u64, hi: u64| (lo..hi).find(|&p| swapped(&r, m, p));
            find(from.max(first), end).or_else(|| find(first, from.min(end)))
        });
        out.clear();
        r.ingest(&e, &mut out);
        if let Some((first, end)) = gup {
            let got = out.iter().find_map(|o| match o {
                Record::SwapFault { addr, entry, .. } => Some(entry.map(|_| addr >> 12)),
                _ => None,
            });
            assert_eq!(got.flatten(), want, "step {step}: GUP over {first}..{end}");
        }
        let mut brute = BTreeMap::new();
        for (&(m, p), h) in &r.slots {
            if h.swapped && h.life == r.life(m) {
                *brute.entry((m, p >> 9)).or_insert(0u32) += 1;
            }
        }
        assert_eq!(r.swapped.counts(), &brute, "step {step}: {e:?}");
    }
    assert!(offset > 5000 && r.swapped.counts().len() > 2);
}

/// A kernel mm, and one page offset's address in two VMAs of it.
const TWO_VMAS: (u64, u64, u64) = (0xffff_8880_0000_2000, 0x7f00_0000_0000, 0x7e00_0000_0000);

/// An OUT_ALT naming `alt`, then the swap-out of entry `off` at `addr`
/// (16 pages of VMA from there): the address of its record, if one came.
fn two_vma_swap_out(
    r: &mut Recorder,
    out: &mut Vec<Record>,
    (addr, alt, off): (u64, u64, u64),
) -> Option<u64> {
    let mm = TWO_VMAS.0;
    let mut a = ev(kind::OUT_ALT);
    (a.mm, a.addr, a.entry) = (mm, alt, off);
    r.ingest(&a, out);
    let mut o = ev(kind::SWAP_OUT);
    (o.mm, o.addr, o.entry, o.nr, o.flags2) = (mm, addr, off, 1, exact2::BOUNDS);
    (o.aux, o.zero) = (0, 16);
    let n = out.len();
    r.ingest(&o, out);
    out[n..].iter().find_map(|r| match *r {
        Record::SwapOut { vaddr, .. } => Some(vaddr),
        _ => None,
    })
}

/// A page table for tests: (pid, address) -> the swap entry its PTE holds.
struct FakePtes(HashMap<(u32, u64), SwapEntry>);

impl PteReader for FakePtes {
    fn swap_entry(&mut self, pid: u32, vaddr: u64) -> Option<SwapEntry> {
        self.0.get(&(pid, vaddr & !0xfff)).copied()
    }
}

/// Two VMAs on one anon_vma cover the swap-out's page offset
/// ([`kind::OUT_ALT`] names the second): the page goes where the page
/// table holds its entry, without the first VMA's bounds; where the table
/// says nothing (no reader, an unknown process, a page faulted back), at
/// the first VMA's address, as the kernel's first match.
#[test]
fn a_swap_out_with_two_vmas_goes_where_the_page_table_holds_it() {
    let (mm, first, second) = TWO_VMAS;
    let e = |offset: u64| SwapEntry { dev: 0, offset };
    let swap_out = |r: &mut Recorder, out: &mut Vec<Record>, addr, alt, off| {
        two_vma_swap_out(r, out, (addr, alt, off))
    };
    let ptes = FakePtes(HashMap::from([
        ((10, second), e(7)),
        ((10, first + 4096), e(8)),
    ]));
    let mut r = Recorder::new(4096);
    r.set_pte_reader(Box::new(ptes));
    let mut out = Vec::new();
    // The fault of another page tells the mm's process.
    let mut f = ev(kind::SWAP_FAULT);
    (f.mm, f.addr) = (mm, first + 8 * 4096);
    r.ingest(&f, &mut out);
    // The table holds entry 7 in the second VMA, not in the first.
    assert_eq!(swap_out(&mut r, &mut out, first, second, 7), Some(second));
    assert!(!out
        .iter()
        .any(|r| matches!(*r, Record::Vma { start, .. } if start == first)));
    // Entry 8 is in the first VMA.
    assert_eq!(
        swap_out(&mut r, &mut out, first + 4096, second + 4096, 8),
        Some(first + 4096)
    );
    // In neither (faulted back already): no record until the page's
    // fault, at either address, or the drain's end, tells.
    assert_eq!(
        swap_out(&mut r, &mut out, first + 8192, second + 8192, 9),
        None
    );
    r.settle(&mut out);
    assert!(
        matches!(out.last(), Some(Record::SwapOut { vaddr, .. }) if *vaddr == first + 8192),
        "settled at the first"
    );
    assert_eq!(r.alt_outs, (3, 1));
    // An OUT_ALT of another entry does not apply.
    let mut a = ev(kind::OUT_ALT);
    (a.mm, a.addr, a.entry) = (mm, second + 3 * 4096, 99);
    r.ingest(&a, &mut out);
    let mut o = ev(kind::SWAP_OUT);
    (o.mm, o.addr, o.entry, o.nr) = (mm, first + 3 * 4096, 7, 1);
    r.ingest(&o, &mut out);
    assert!(
        matches!(out.last(), Some(Record::SwapOut { vaddr, .. }) if *vaddr == first + 3 * 4096)
    );
    assert_eq!(r.alt_outs, (3, 1));
    // The fault at the second VMA's page joins entry 7.
    let mut f = ev(kind::SWAP_FAULT);
    (f.mm, f.addr) = (mm, second);
    r.ingest(&f, &mut out);
    assert!(matches!(out.last(), Some(Record::SwapFault { entry: Some(x), .. }) if *x == e(7)));
}

/// A swap-out the page table no longer places (its page faulted back
/// before the recorder looked) goes where its fault is; where the first
/// VMA's page at that address is swapped out with another entry, it is
/// the second's at once, and a fault there is that page's.
#[test]
fn a_swap_out_faulted_back_before_its_page_table_was_read_goes_where_its_fault_is() {
    let (mm, first, second) = TWO_VMAS;
    let e = |offset: u64| SwapEntry { dev: 0, offset };
    let swap_out = |r: &mut Recorder, out: &mut Vec<Record>, addr, alt, off| {
        two_vma_swap_out(r, out, (addr, alt, off))
    };
    // The table holds no entry anywhere: every page was faulted back.
    let mut r = Recorder::new(4096);
    r.set_pte_reader(Box::new(FakePtes(HashMap::new())));
    let mut out = Vec::new();
    let fault = |r: &mut Recorder, out: &mut Vec<Record>, addr: u64| {
        let mut f = ev(kind::SWAP_FAULT);
        (f.mm, f.addr) = (mm, addr);
        r.ingest(&f, out);
        match out.last() {
            Some(Record::SwapFault { entry, .. }) => *entry,
            _ => None,
        }
    };
    // A fault tells the mm's process.
    assert_eq!(fault(&mut r, &mut out, first + 64 * 4096), None);
    // Entry 5 waits; the fault at the second VMA's page places it there,
    // its record first, and the fault joins it.
    assert_eq!(swap_out(&mut r, &mut out, first, second, 5), None);
    assert_eq!(fault(&mut r, &mut out, second), Some(e(5)));
    let n = out.len();
    assert!(
        matches!(out[n - 2], Record::SwapOut { vaddr, entry, .. } if vaddr == second && entry == e(5))
    );
    // Entry 6 waits too; a fault at the first VMA's page places it there.
    assert_eq!(
        swap_out(&mut r, &mut out, first + 4096, second + 4096, 6),
        None
    );
    assert_eq!(fault(&mut r, &mut out, first + 4096), Some(e(6)));
    // A page without a second VMA, swapped out at the first's page 2.
    let mut o = ev(kind::SWAP_OUT);
    (o.mm, o.addr, o.entry, o.nr) = (mm, first + 8192, 7, 1);
    r.ingest(&o, &mut out);
    // Entry 8 names the same page: the first's holds 7, so 8 is the second's.
    assert_eq!(
        swap_out(&mut r, &mut out, first + 8192, second + 8192, 8),
        Some(second + 8192)
    );
    // Entry 9 waits on the first's page 3; page 3 is then swapped out
    // alone with entry 10, and its fault is entry 10's, not 9's.
    assert_eq!(
        swap_out(&mut r, &mut out, first + 3 * 4096, second + 3 * 4096, 9),
        None
    );
    let mut o = ev(kind::SWAP_OUT);
    (o.mm, o.addr, o.entry, o.nr) = (mm, first + 3 * 4096, 10, 1);
    r.ingest(&o, &mut out);
    assert_eq!(fault(&mut r, &mut out, first + 3 * 4096), Some(e(10)));
    assert_eq!(fault(&mut r, &mut out, second + 3 * 4096), Some(e(9)));
    // Settling leaves nothing behind.
    let n = out.len();
    r.settle(&mut out);
    assert_eq!(out.len(), n);
    assert_eq!(r.alt_outs, (4, 3));
    // Entry 11 waits on the first's page 4 when mremap() moves 16 pages
    // from there: it is placed (at the first's page) before the move, and
    // follows it, so that the fault at the new address joins it.
    assert_eq!(
        swap_out(&mut r, &mut out, first + 4 * 4096, second + 4 * 4096, 11),
        None
    );
    let new = 0x7d00_0000_0000u64;
    let mut m = ev(kind::MOVED);
    (m.mm, m.addr, m.entry, m.nr) = (mm, new, first + 4 * 4096, 16);
    r.ingest(&m, &mut out);
    let moved = out.iter().position(|r| matches!(r, Record::Moved { .. }));
    let placed = out
        .iter()
        .position(|r| matches!(*r, Record::SwapOut { entry, .. } if entry == e(11)));
    assert!(placed < moved && placed.is_some(), "{placed:?} {moved:?}");
    assert_eq!(fault(&mut r, &mut out, new), Some(e(11)));
}
