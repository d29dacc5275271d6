//! Address ranges that were unmapped. `munmap()`, `brk()` shrinking and
//! `mremap()` clear the range from the address space's maple tree: a NULL
//! store (`ma_write`), seen as it happens. `vm_unmapped_area()` picks the
//! free range a new mapping goes to, so whatever the replay holds of that
//! range (swap PTEs, resident pages, VMAs) was unmapped since. No syscall
//! tracepoint is needed (those slow every system call). Inside `mremap()`
//! the range found is where the old one moves (its page tables, swap PTEs
//! included): the syscall's saved registers name it.

use crate::twin::twin;
use aya_ebpf::{
    helpers::{
        bpf_get_current_task_btf, bpf_ktime_get_ns, bpf_probe_read_kernel, bpf_task_pt_regs,
    },
    macros::raw_tracepoint,
    programs::RawTracePointContext,
};
use swaptrace_common::{kind, zap_range, UNMAPPED_CLEARED};

use crate::konst::*;
use crate::swap::{current_mm, emit, event, g, holds_swap, known, read_u64, selected};

/// `IS_ERR_VALUE()`: the top 4095 values are errors.
const MAX_ERRNO: u64 = 4095;

twin! {
/// Args: (addr, info). In the mapping task: `addr` the range's start (or
/// an error), `info->length` its length.
#[raw_tracepoint(tracepoint = "vm_unmapped_area")]
pub fn vm_unmapped_area / vm_unmapped_area_2 (ctx: RawTracePointContext) -> i32 {
    let addr = ctx.arg::<u64>(0);
    if addr >= MAX_ERRNO.wrapping_neg() || !selected() {
        return 0;
    }
    // Only a process that may hold swap entries has state there to drop.
    let tgid = (aya_ebpf::helpers::bpf_get_current_pid_tgid() >> 32) as u32;
    if !holds_swap(tgid) {
        return 0;
    }
    let Some(len) = read_u64(ctx.arg::<u64>(1), g(&K_VMUA_LENGTH)).filter(|&l| l > 0) else {
        return 0;
    };
    let mm = current_mm();
    if mm == 0 {
        return 0;
    }
    // SAFETY: a helper without arguments.
    let mut ev = event(kind::UNMAPPED, unsafe { bpf_ktime_get_ns() });
    ev.mm = mm;
    ev.addr = addr;
    ev.entry = len;
    let ts = ev.ts_ns;
    emit(ev);
    if let Some((from, old_len)) = mremap_source() {
        let mut mv = event(kind::MOVED, ts);
        mv.mm = mm;
        mv.addr = addr;
        mv.entry = from;
        let pages = old_len.div_ceil(1 << g(&K_PAGE_SHIFT));
        mv.nr = pages.min(u32::MAX as u64) as u32;
        emit(mv);
    }
    0
}
}

/// Args: (fn, mas, piv, val). A NULL store in the current task's own
/// address space (`mas->tree == &mm->mm_mt`) clears `[mas->index,
/// mas->last]`: the maple tree extends a NULL store over the empty ranges
/// around it, so the range may be wider than the unmapped one, and is
/// empty all the same. A store of a VMA (a split, a merge, a new mapping)
/// is not one. A NULL store that replaces one slot in place (exact fit)
/// is not traced by the kernel: such a munmap is not seen. No twin: its
/// calls share their first argument (the name of the maple tree
/// function), which is how twins tell calls apart.
#[raw_tracepoint(tracepoint = "ma_write")]
pub fn ma_write(ctx: RawTracePointContext) -> i32 {
    if ctx.arg::<u64>(3) != 0 || !selected() {
        return 0;
    }
    let tgid = (aya_ebpf::helpers::bpf_get_current_pid_tgid() >> 32) as u32;
    if !holds_swap(tgid) {
        return 0;
    }
    let mm = current_mm();
    let mt = g(&K_MM_MT);
    if mm == 0 || !known(mt) {
        return 0;
    }
    let mas = ctx.arg::<u64>(1);
    if read_u64(mas, g(&K_MAS_TREE)) != Some(mm.wrapping_add(mt)) {
        return 0;
    }
    let (Some(first), Some(last)) = (
        read_u64(mas, g(&K_MAS_INDEX)),
        read_u64(mas, g(&K_MAS_LAST)),
    ) else {
        return 0;
    };
    if last < first {
        return 0;
    }
    // SAFETY: a helper without arguments.
    let mut ev = event(kind::UNMAPPED, unsafe { bpf_ktime_get_ns() });
    ev.mm = mm;
    ev.addr = first;
    // The length, up to the end of the address space.
    ev.entry = (last - first).saturating_add(1);
    ev.nr = UNMAPPED_CLEARED;
    emit(ev);
    0
}

/// In `mremap(MREMAP_MAYMOVE)` that cannot grow in place (it asks
/// `get_unmapped_area()` for the new range), the old range: `old_addr` and
/// `old_len`, from the syscall's saved registers.
#[inline(always)]
fn mremap_source() -> Option<(u64, u64)> {
    let nr = g(&K_NR_MREMAP);
    if !known(nr) || saved_reg(g(&K_REGS_NR))? != nr {
        return None;
    }
    let from = saved_reg(g(&K_REGS_ARG0))?;
    let len = saved_reg(g(&K_REGS_ARG1))?;
    (len > 0).then_some((from, len))
}

/// The current task's saved user register at `off` in `struct pt_regs`.
#[inline(always)]
fn saved_reg(off: u64) -> Option<u64> {
    if !known(off) {
        return None;
    }
    // SAFETY: the current task's saved user registers; read by probe only.
    let regs = unsafe { bpf_task_pt_regs(bpf_get_current_task_btf()) } as *const u8;
    // A typed pointer: the offsets (constants once loaded) may be added to
    // it, but it may not be logged or otherwise computed on (read_u64).
    // SAFETY: bpf_probe_read_kernel checks the address.
    unsafe { bpf_probe_read_kernel(regs.wrapping_add(off as usize).cast::<u64>()) }.ok()
}

const MAP_FIXED: u64 = 0x10;
/// MADV_REMOVE, MADV_DONTNEED, MADV_FREE, MADV_DONTNEED_LOCKED.
const MADV_REMOVE: u64 = 9;
const MADV_DONTNEED: u64 = 4;
const MADV_FREE: u64 = 8;
const MADV_DONTNEED_LOCKED: u64 = 24;

const MADV_POPULATE_READ: u64 = 22;
const MADV_POPULATE_WRITE: u64 = 23;
/// Reads the range's swap entries into the swap cache.
const MADV_WILLNEED: u64 = 3;
const USER_TOP: u64 = 1 << 47;

/// The system call that faults the current task's pages in without a user
/// fault (GUP, `populate_vma_page_range()`), and its range: `madvise(addr,
/// len, MADV_POPULATE_READ | _WRITE)`, `mlock(addr, len)`, `mlock2()`, and
/// `mlockall()` over the whole address space; and the buffer of `read()`,
/// `pread64()`, `write()`, `pwrite64()`, which direct I/O pins
/// (`pin_user_pages_fast()`; a copy's kernel-mode fault is traced as a
/// fault). mlock faults a writable private mapping for write (FOLL_WRITE,
/// to break COW), and so does a read into its buffer. Only `io`, the
/// direct-I/O calls, may read swap otherwise (a tmpfs file's pages).
/// `(start, len, write, io)`.
#[inline(always)]
pub(crate) fn gup_range() -> Option<(u64, u64, bool, bool)> {
    let nr = saved_reg(g(&K_REGS_NR))?;
    let reads = nr == g(&K_NR_READ) || nr == g(&K_NR_PREAD64);
    if reads || nr == g(&K_NR_WRITE) || nr == g(&K_NR_PWRITE64) {
        let buf = saved_reg(g(&K_REGS_ARG1))?;
        let len = saved_reg(g(&K_REGS_ARG2))?;
        return (len > 0).then_some((buf, len, reads, true));
    }
    let write = if nr == g(&K_NR_MADVISE) {
        match saved_reg(g(&K_REGS_ARG2))? {
            MADV_POPULATE_READ => false,
            MADV_POPULATE_WRITE => true,
            _ => return None,
        }
    } else if nr == g(&K_NR_MLOCKALL) {
        return Some((0, USER_TOP, true, false));
    } else if nr == g(&K_NR_MLOCK) || nr == g(&K_NR_MLOCK2) {
        true
    } else {
        return None;
    };
    let (start, len) = addr_len()?;
    Some((start, len, write, false))
}

/// Inside `madvise(addr, len, MADV_WILLNEED)`: `(addr, len)`. Its swap
/// reads are the range's swap PTEs not in the swap cache, in ascending
/// order (`swapin_walk_pmd_entry()`).
#[inline(always)]
pub(crate) fn willneed_range() -> Option<(u64, u64)> {
    if saved_reg(g(&K_REGS_NR))? != g(&K_NR_MADVISE) || saved_reg(g(&K_REGS_ARG2))? != MADV_WILLNEED
    {
        return None;
    }
    addr_len()
}

/// The system call that zaps the current task's swap entries, if it names
/// their range ([`zap_range`]): `munmap(addr, len)`, `mmap(addr, len, _,
/// MAP_FIXED)` over a mapping, `madvise(addr, len, MADV_DONTNEED | _FREE
/// | _REMOVE | _DONTNEED_LOCKED)`. `(kind, start, len)`.
#[inline(always)]
pub(crate) fn zap_range() -> Option<(u32, u64, u64)> {
    let nr = saved_reg(g(&K_REGS_NR))?;
    let kind = if nr == g(&K_NR_MUNMAP) {
        zap_range::UNMAP
    } else if nr == g(&K_NR_MMAP) {
        if saved_reg(g(&K_REGS_ARG3))? & MAP_FIXED == 0 {
            return None;
        }
        zap_range::UNMAP
    } else if nr == g(&K_NR_MADVISE) {
        match saved_reg(g(&K_REGS_ARG2))? {
            MADV_DONTNEED | MADV_FREE | MADV_REMOVE | MADV_DONTNEED_LOCKED => zap_range::MADVISE,
            _ => return None,
        }
    } else {
        return None;
    };
    let (start, len) = addr_len()?;
    Some((kind, start, len))
}

/// The system call's `(addr, len)`, its first two arguments, if the range
/// is not empty.
#[inline(always)]
fn addr_len() -> Option<(u64, u64)> {
    let start = saved_reg(g(&K_REGS_ARG0))?;
    let len = saved_reg(g(&K_REGS_ARG1))?;
    (len > 0).then_some((start, len))
}
