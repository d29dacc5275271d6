//! swaptrace eBPF programs: the tracepoint-derived backend (`swap`), the
//! swap cache's folios and their frees (`cache`), address ranges a new
//! mapping takes (`unmap`), the
//! exact fentry/fexit and kprobe programs (`exact`), and the programs only
//! loaded to learn what the kernel allows (`trial`).
//!
//! Every struct offset, vm-event number and symbol address comes from
//! userspace (read from the running kernel's BTF and kallsyms) through the
//! `K_*` globals (`konst`): Rust eBPF has no CO-RE. Tracepoint argument
//! positions are constants here and checked against BTF by userspace before
//! load. No code path may panic.
#![no_std]
#![no_main]

mod cache;
mod exact;
mod konst;
mod owner;
mod swap;
mod trial;
mod twin;
mod unmap;

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 4] = *b"GPL\0";
