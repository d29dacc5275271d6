//! How the recorder joins events to pages: the address spaces a pointer
//! names, the page a swap-out's entry left, what an unmap or a move does
//! to those joins, and the pages a GUP call faults.

use super::*;

/// Which of two VMAs a swap-out's page is in ([`Recorder::out_address`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Placed {
    First,
    Second,
    /// The page table holds the entry at neither: the page was faulted
    /// back before the recorder looked.
    Unknown,
}

/// `ev` at the second VMA's address `alt`, without the first VMA's bounds.
pub(super) fn at_second(ev: &RawEvent, alt: u64) -> RawEvent {
    RawEvent {
        addr: alt,
        flags2: ev.flags2 & !exact2::BOUNDS,
        ..*ev
    }
}

impl Recorder {
    /// Where `ev`'s page is: in the second VMA, `alt`, where the page
    /// table holds the entry there and not at the first's
    /// (`page_vma_mapped_walk()` of the kernel's rmap walk), or where the
    /// first's page at that address is swapped out with another entry.
    /// Without a page table to read, the first (the kernel's first match).
    pub(super) fn out_address(&mut self, ev: &RawEvent, alt: u64) -> Placed {
        self.alt_outs.0 += 1;
        let placed = self.read_placement(ev, alt);
        let placed = match placed {
            Placed::Unknown if self.other_swapped_at(ev.mm, ev.addr, ev.entry) => Placed::Second,
            p => p,
        };
        self.alt_outs.1 += (placed == Placed::Second) as u64;
        placed
    }

    fn read_placement(&mut self, ev: &RawEvent, alt: u64) -> Placed {
        let (Some(&pid), Some(ptes)) = (self.pids.get(&ev.mm), self.ptes.as_mut()) else {
            return Placed::First;
        };
        let entry = SwapEntry::from_val(ev.entry);
        let mut at = |a| ptes.swap_entry(pid, a) == Some(entry);
        if at(ev.addr) {
            Placed::First
        } else if at(alt) {
            Placed::Second
        } else {
            Placed::Unknown
        }
    }

    /// Whether the recording holds the page at `addr` of kernel mm `mm`
    /// swapped out with an entry other than `entry` (its PTE holds that).
    fn other_swapped_at(&self, mm: u64, addr: u64, entry: u64) -> bool {
        let Some(&id) = self.mms.get(&mm) else {
            return false;
        };
        self.slots
            .get(&(id, addr >> self.page_shift))
            .is_some_and(|h| h.out(self.life(id)) && h.entry != SwapEntry::from_val(entry))
    }

    /// A swap-out whose page the page table no longer tells: its record
    /// waits for the page's fault, at either address, which does
    /// ([`Recorder::place_deferred`]; until [`Recorder::settle`]).
    pub(super) fn defer_out(&mut self, ev: &RawEvent, alt: u64) {
        let i = self.deferred.len();
        self.deferred.push(Some((*ev, alt)));
        self.deferred_at.insert((ev.mm, ev.addr), i);
        self.deferred_at.insert((ev.mm, alt), i);
    }

    /// A fault at `addr` of kernel mm `mm`: the swap-out waiting for a
    /// fault there goes to this address, its record before the fault's.
    /// Not where another swapped-out page is there: the fault is that
    /// page's.
    pub(super) fn place_deferred(&mut self, mm: u64, addr: u64, out: &mut Vec<Record>) {
        let Some(&i) = self.deferred_at.get(&(mm, addr)) else {
            return;
        };
        let Some(&Some((ev, alt))) = self.deferred.get(i) else {
            self.deferred_at.remove(&(mm, addr));
            return;
        };
        if self.other_swapped_at(mm, addr, ev.entry) {
            return;
        }
        self.deferred_at.remove(&(mm, addr));
        self.deferred[i] = None;
        let other = if addr == alt { ev.addr } else { alt };
        if self.deferred_at.get(&(mm, other)) == Some(&i) {
            self.deferred_at.remove(&(mm, other));
        }
        let ev = if addr == alt {
            self.alt_outs.1 += 1;
            at_second(&ev, alt)
        } else {
            ev
        };
        let rec = self.swap_out(&ev, out);
        out.extend(rec);
    }

    /// The swap-outs no fault placed: at the first VMA's address.
    pub fn settle(&mut self, out: &mut Vec<Record>) {
        if self.deferred.is_empty() {
            return;
        }
        let start = out.len();
        for (ev, _) in std::mem::take(&mut self.deferred).into_iter().flatten() {
            let rec = self.swap_out(&ev, out);
            out.extend(rec);
        }
        self.deferred_at.clear();
        for r in &out[start..] {
            self.summary.add(r);
        }
    }

    pub(super) fn mm(&mut self, ptr: u64, pid: u32, out: &mut Vec<Record>) -> u32 {
        if ptr == 0 {
            return 0;
        }
        if pid != 0 && self.pids.get(&ptr) != Some(&pid) {
            self.pids.insert(ptr, pid);
        }
        let next = self.mms.len() as u32 + 1;
        *self.mms.entry(ptr).or_insert_with(|| {
            out.push(Record::AddressSpace { mm: next, pid });
            next
        })
    }

    /// The entry of a page shared through fork (copy-on-write): the
    /// swap-out was resolved to another address space of the family (the
    /// first VMA on the anon_vma), an ancestor's or a child's.
    pub(super) fn shared_entry(&self, mm: u64, vpage: u64) -> Option<SwapEntry> {
        let at = |m: &u64| {
            let id = *self.mms.get(m)?;
            self.slots.get(&(id, vpage)).map(|h| h.entry)
        };
        let mut m = mm;
        for _ in 0..FORK_DEPTH {
            let Some(p) = self.forked_from.get(&m) else {
                break;
            };
            if let Some(e) = at(p) {
                return Some(e);
            }
            m = *p;
        }
        self.forks.get(&mm)?.iter().find_map(at)
    }

    /// `mremap()` moved `[from, from + len)` to `to`: the joins of its pages
    /// move with them. Its VMAs are forgotten, so that the next swap-out
    /// there records the moved VMA's bounds.
    pub(super) fn moved(&mut self, mm: u32, from: u64, to: u64, len: u64) {
        let shift = self.page_shift;
        let (from_p, to_p) = (from >> shift, to >> shift);
        let life = self.life(mm);
        let taken = pages::take_range(
            &mut self.slots,
            mm,
            from_p,
            from_p.saturating_add(len >> shift),
        );
        for (p, h) in &taken {
            if h.out(life) {
                self.swapped.remove(mm, *p);
            }
        }
        for (p, h) in taken {
            let q = p - from_p + to_p;
            if self.slots.insert((mm, q), h).is_some_and(|o| o.out(life)) {
                self.swapped.remove(mm, q);
            }
            if h.out(life) {
                self.swapped.add(mm, q);
            }
        }
        self.forget_vmas(mm, from, from + len);
    }

    /// Bytes `[start, end)` of `mm` no longer hold swap entries (zapped,
    /// unmapped). Only the regions that hold swapped-out pages are visited.
    pub(super) fn unswap(&mut self, mm: u32, start: u64, end: u64) {
        let (start, end) = self.held(mm, start, end);
        let (first, end) = (start >> self.page_shift, end.div_ceil(1 << self.page_shift));
        let life = self.life(mm);
        let spans: Vec<_> = self.swapped.spans(mm, first, end).collect();
        for p in spans.into_iter().flat_map(|(a, b)| a..b) {
            self.mapped(mm, p, life);
        }
    }

    /// Page `page` of `mm` holds its swap entry no more (faulted, zapped,
    /// unmapped): the entry it was joined to, if any.
    pub(super) fn mapped(&mut self, mm: u32, page: u64, life: u32) -> Option<SwapEntry> {
        let h = self.slots.get_mut(&(mm, page))?;
        if h.out(life) {
            self.swapped.remove(mm, page);
        }
        h.swapped = false;
        Some(h.entry)
    }

    /// `mm` exited (`exit_mmap()`): nothing it held is swapped out.
    pub(super) fn exited(&mut self, mm: u32) {
        *self.lives.entry(mm).or_default() += 1;
        self.swapped.clear(mm);
    }

    pub(super) fn life(&self, mm: u32) -> u32 {
        self.lives.get(&mm).copied().unwrap_or(0)
    }

    /// The swap-cache folio of `entry` freed: a page that a read fault
    /// mapped, keeping the slot, went back to it (reclaim dropped the clean
    /// folio): its PTE holds the entry again.
    pub(super) fn freed(&mut self, entry: SwapEntry, nr: u32) {
        if self.kept.is_empty() {
            return;
        }
        for e in entry.folio(nr.max(1) as u64) {
            if let Some(page) = self.kept.remove(&e) {
                let life = self.life(page.0);
                if let Some(h) = self.slots.get_mut(&page).filter(|h| h.entry == e) {
                    let was = h.out(life);
                    h.swapped = true;
                    if !was && h.out(life) {
                        self.swapped.add(page.0, page.1);
                    }
                }
            }
        }
    }

    /// A fault mapped `(mm, page)`: a read fault keeps its slot `entry`
    /// (until reclaim drops the clean folio: [`Recorder::freed`]), a write
    /// fault frees it.
    pub(super) fn kept(&mut self, mm: u32, page: u64, entry: Option<SwapEntry>, write: bool) {
        if !self.gup_seen {
            return;
        }
        match entry {
            Some(e) if !write => {
                self.kept.insert(e, (mm, page));
            }
            Some(e) if self.kept.get(&e) == Some(&(mm, page)) => {
                self.kept.remove(&e);
            }
            _ => {}
        }
    }

    /// The page a GUP fault of `tid` swapped in: GUP faults its call's
    /// range `[first, end)` in ascending order, so the first page still
    /// swapped out after the task's last one (from the range's start for
    /// a new call). None if the trace holds no such page.
    pub(super) fn gup_page(&mut self, tid: u32, mm: u32, first: u64, end: u64) -> Option<u64> {
        let from = match self.gup.get(&tid) {
            Some(&(m, f, e, last)) if (m, f, e) == (mm, first, end) => last + 1,
            _ => first,
        };
        // Swapped out in this life of the mm, region by region.
        let life = self.life(mm);
        let next = |lo: u64, hi: u64| {
            let mut pages = self.swapped.spans(mm, lo, hi).flat_map(|(a, b)| a..b);
            pages.find(|&p| self.slots.get(&(mm, p)).is_some_and(|h| h.out(life)))
        };
        // Nothing left after the last one: a new call over the same range.
        let page = next(from.max(first), end).or_else(|| next(first, from.min(end)))?;
        self.gup.insert(tid, (mm, first, end, page));
        Some(page)
    }

    /// Forgets the VMAs recorded in `[start, end)` of `mm`: the next
    /// swap-out there records its VMA's bounds again, even if the same.
    pub(super) fn forget_vmas(&mut self, mm: u32, start: u64, end: u64) {
        let gone: Vec<_> = self
            .vmas
            .range((mm, start)..(mm, end))
            .map(|(&k, _)| k)
            .collect();
        for k in gone {
            self.vmas.remove(&k);
        }
    }

    /// Where a swap-out at `addr` of `mm` at `ts`, named through the VMA
    /// starting at `vma_start`, is: named through the old VMA of the last
    /// move of `mm` (about then), it is at its new address; true if so.
    /// A page the moved VMA took in place since (it grew into the old
    /// range) is named through that VMA, which starts elsewhere.
    pub(super) fn moved_since(
        &self,
        mm: u32,
        ts: u64,
        addr: u64,
        vma_start: Option<u64>,
    ) -> (u64, bool) {
        match (self.moves.get(&mm), vma_start) {
            (Some(&(at, from, to, len)), Some(start))
                if ts.abs_diff(at) < MOVE_WINDOW_NS
                    && start.wrapping_sub(from) < len
                    && addr.wrapping_sub(from) < len =>
            {
                (addr - from + to, true)
            }
            _ => (addr, false),
        }
    }

    /// `[start, end)` of `mm` may hold what the trace recorded.
    pub(super) fn spans(&mut self, mm: u32, start: u64, end: u64) {
        let e = self.extent.entry(mm).or_insert((start, end));
        *e = (e.0.min(start), e.1.max(end));
        // Every swap-out and fault passes here: no hashing while no zap is.
        if !self.zapped.is_empty() {
            self.zapped.remove(&mm);
        }
    }

    /// `[start, end)` of `mm` cut to what the trace may hold of it.
    pub(super) fn held(&self, mm: u32, start: u64, end: u64) -> (u64, u64) {
        let (lo, hi) = self.extent.get(&mm).copied().unwrap_or_default();
        (start.max(lo), end.min(hi))
    }

    /// `[start, end)` of `mm` unmapped: `cleared` from the maple tree, else
    /// found free by a new mapping.
    pub(super) fn unmapped(
        &mut self,
        ts: u64,
        mm: u32,
        start: u64,
        end: u64,
        cleared: bool,
    ) -> Option<Record> {
        let (mut start, mut end) = (start, end);
        // A new mapping in a moved-from range: its swap-outs are its own.
        // Not so the old range cleared after its move.
        if cleared {
            // The maple tree widens a cleared range over the empty ones
            // around it (terabytes): only what the trace may hold counts.
            (start, end) = self.held(mm, start, end);
        } else if self
            .moves
            .get(&mm)
            .is_some_and(|&(_, from, _, len)| from < end && start < from + len)
        {
            self.moves.remove(&mm);
        }
        // The VMAs recorded there are gone, and their swap entries.
        (start < end).then(|| {
            self.unswap(mm, start, end);
            self.forget_vmas(mm, start, end);
            Record::Unmapped { ts, mm, start, end }
        })
    }

    /// The range a zap's system call named ([`zap_range`]): `munmap()` and
    /// `mmap(MAP_FIXED)` as a cleared range, `madvise()` as a zapped one
    /// (its VMAs stay). Once per call, and only what the trace may hold.
    pub(super) fn zap_range(&mut self, ev: &RawEvent, mm: u32, out: &mut Vec<Record>) {
        if ev.nr == zap_range::NONE || ev.aux == 0 || mm == 0 {
            return;
        }
        let mask = (1u64 << self.page_shift) - 1;
        let start = ev.addr & !mask;
        let end = ev.addr.saturating_add((ev.aux as u64) << self.page_shift);
        if self.zapped.get(&mm) == Some(&(ev.nr, start, end)) {
            return;
        }
        self.zapped.insert(mm, (ev.nr, start, end));
        let ts = ev.ts_ns;
        if ev.nr == zap_range::UNMAP {
            out.extend(self.unmapped(ts, mm, start, end, true));
            return;
        }
        let (start, end) = self.held(mm, start, end);
        if start < end {
            self.unswap(mm, start, end);
            out.push(Record::Zapped { ts, mm, start, end });
        }
    }

    /// A Task record the first time a thread is seen.
    pub(super) fn first_sight(&mut self, ev: &RawEvent, out: &mut Vec<Record>) {
        if self.tasks.insert(ev.tid) {
            out.push(Record::Task {
                tid: ev.tid,
                pid: ev.pid,
                comm: comm(&ev.comm),
            });
        }
    }
}
