//! Programs loaded only to learn what the kernel allows (`swaptrace doctor`).

use aya_ebpf::{macros::fentry, programs::FEntryContext};

/// Loaded against a BTF function to see whether fentry is allowed; never attached.
#[fentry(function = "do_swap_page")]
pub fn trial_fentry(_ctx: FEntryContext) -> u32 {
    0
}
