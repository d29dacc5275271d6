//! Programs attached twice where the kernel may preempt them
//! (`swaptrace_common::twin`): of the two runs of one call, one records.

use aya_ebpf::{
    helpers::bpf_get_current_pid_tgid,
    macros::map,
    maps::{Array, PerCpuArray},
};
use swaptrace_common::twin::{COUNTERS, HOOKS};

use crate::{konst::K_TWINS, swap::g};

/// The token a hook's run leaves for its twin, tagged with the task.
#[derive(Clone, Copy)]
#[repr(C)]
pub struct Token {
    tid: u64,
    value: u64,
}

/// Slots by the low bits of the tid, times the hooks (2.4 MiB): a slot is
/// written and read within one call, so tasks sharing it rarely meet.
const TASK_BITS: u32 = 12;
const NHOOKS: u32 = HOOKS.len() as u32;
#[map]
static TWIN_TOKENS: Array<Token> = Array::with_max_entries(NHOOKS << TASK_BITS, 0);

/// 1 for a hook whose twin is attached (set by userspace once it is).
#[map]
static TWIN_ON: Array<u32> = Array::with_max_entries(NHOOKS, 0);

#[map]
static TWIN_COUNTS: PerCpuArray<u64> = PerCpuArray::with_max_entries(COUNTERS, 0);

#[inline(always)]
fn count(i: u32) {
    if let Some(c) = TWIN_COUNTS.get_ptr_mut(i) {
        // SAFETY: this CPU's slot. A task preempted between the load and the
        // store can lose another's count here (BPF has no atomic add in core).
        unsafe { *c += 1 };
    }
}

/// Whether this run records the call: false when the hook's twin already
/// did (its token is taken), else true with this run's token left for the
/// twin. `value` tells calls apart (the call's first argument). The token is
/// keyed by the task: another task preempting this one has its own.
/// Not inlined: its map keys would add to every program's frame, and 6.1's
/// verifier counts 512 bytes for a whole call chain.
#[inline(never)]
pub fn first(hook: u32, value: u64) -> bool {
    // K_TWINS (load-time) spares the lookup where no program has a twin.
    if g(&K_TWINS) == 0 || TWIN_ON.get(hook) != Some(&1) {
        return true;
    }
    let tid = bpf_get_current_pid_tgid() & 0xffff_ffff;
    let slot = (tid as u32 & ((1 << TASK_BITS) - 1)) * NHOOKS + hook;
    let Some(t) = TWIN_TOKENS.get_ptr_mut(slot) else {
        return true;
    };
    // SAFETY: an array slot; only this task's runs of this hook use it now.
    unsafe {
        if (*t).tid == tid && (*t).value == value {
            (*t).tid = 0;
            count(2 * hook + 1);
            return false;
        }
        *t = Token { tid, value };
    }
    count(2 * hook);
    true
}

/// Defines a program and its twin (`<name>_2`, checked at build time) with
/// one body, recorded once per call ([`first`]).
macro_rules! twin {
    ($(#[$m:meta])* pub fn $name:ident / $twin:ident ($ctx:ident : $cty:ty) -> $ret:ty $body:block) => {
        const _: () = assert!(swaptrace_common::twin::same(
            stringify!($twin),
            concat!(stringify!($name), "_2")
        ));
        $crate::twin::twin!(@one $name, [$(#[$m])*] $name ($ctx: $cty) -> $ret $body);
        $crate::twin::twin!(@one $name, [$(#[$m])*] $twin ($ctx: $cty) -> $ret $body);
    };
    (@one $hook:ident, [$(#[$m:meta])*] $fname:ident ($ctx:ident : $cty:ty) -> $ret:ty $body:block) => {
        $(#[$m])*
        pub fn $fname($ctx: $cty) -> $ret {
            let hook = const { swaptrace_common::twin::index(stringify!($hook)) };
            if !crate::twin::first(hook, $ctx.arg::<u64>(0)) {
                return Default::default();
            }
            $body
        }
    };
}
pub(crate) use twin;
