//! The `K_*` globals, declared from swaptrace-common's one list
//! ([`swaptrace_common::kernel_constants`]); userspace sets them by the
//! names in `swaptrace_common::konst` before load.

macro_rules! globals {
    ($($(#[$doc:meta])* $name:ident = $default:expr),* $(,)?) => {
        $(
            $(#[$doc])*
            #[unsafe(no_mangle)]
            pub(crate) static $name: u64 = $default;
        )*
    };
}

swaptrace_common::kernel_constants!(globals);
