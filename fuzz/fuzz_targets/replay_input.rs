//! Bytes → the trace reader → replay through `cluster` (the kernel's
//! readahead) and the free family: no panic, no unbounded allocation.
#![no_main]

use libfuzzer_sys::fuzz_target;
use swaptrace::replay::{family, ReplayRequest};
use swaptrace::trace::read_trace_bytes;

fuzz_target!(|data: &[u8]| {
    let Ok(t) = read_trace_bytes(data.to_vec()) else {
        return;
    };
    for (fam, policy) in [("readahead", "cluster"), ("free", "all")] {
        let Some(f) = family(fam) else {
            panic!("family {fam} is missing");
        };
        let req = ReplayRequest {
            policies: Some(policy),
            params: &[],
            memory_pages: Some(64),
            device: None,
        };
        let _ = f.run(&t, &req);
    }
});
