//! swaptrace eBPF programs: the tracepoint-derived backend.
//!
//! Every struct offset and vm-event number comes from userspace (read from the
//! running kernel's BTF) through the `K_*` globals: Rust eBPF has no CO-RE.
//! Tracepoint argument positions are constants here and checked against BTF
//! by userspace before load. No code path may panic.
#![no_std]
#![no_main]

mod exact;
mod swap;
mod trial;

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 4] = *b"GPL\0";
