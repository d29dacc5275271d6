//! Address ranges that were unmapped: `vm_unmapped_area()` picks the free
//! range a new mapping goes to, so whatever the replay holds of that range
//! (swap PTEs, resident pages, VMAs) was unmapped since. No munmap probe is
//! needed, and no syscall tracepoint (those slow every system call).

use crate::twin::twin;
use aya_ebpf::{helpers::bpf_ktime_get_ns, macros::raw_tracepoint, programs::RawTracePointContext};
use swaptrace_common::kind;

use crate::konst::*;
use crate::swap::{current_mm, emit, event, g, holds_swap, read_u64, selected};

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
    emit(ev);
    0
}
}
