//! Taking the probes' events out of the ring buffer, a batch at a time
//! (`record` and `top`).

use super::Recorder;
use crate::trace::Record;
use swaptrace_common::{kind, FreeBatchEvent, RawEvent, FREE_BATCH_EVENT_SIZE, RAW_EVENT_SIZE};

/// Events [`drain`] takes at most before it returns: where the probes
/// send as fast as the recorder ingests, the ring is never empty, and the
/// loop must still write what it has, sample, and stop when asked.
const DRAIN_BATCH: usize = 1 << 16;

/// Ingests up to [`DRAIN_BATCH`] events from the ring; true if it stopped
/// there (more may wait). The swap-outs no fault placed are then settled:
/// a page faulted back before its swap-out was read has its fault in the
/// ring already ([`Recorder::settle`]).
pub(super) fn drain(
    ring: &mut aya::maps::RingBuf<aya::maps::MapData>,
    rec: &mut Recorder,
    out: &mut Vec<Record>,
) -> bool {
    let more = drain_batch(ring, rec, out);
    rec.settle(out);
    more
}

fn drain_batch(
    ring: &mut aya::maps::RingBuf<aya::maps::MapData>,
    rec: &mut Recorder,
    out: &mut Vec<Record>,
) -> bool {
    for _ in 0..DRAIN_BATCH {
        let Some(item) = ring.next() else {
            return false;
        };
        if item.len() < RAW_EVENT_SIZE {
            continue;
        }
        // SAFETY: RawEvent is repr(C) plain data of RAW_EVENT_SIZE bytes;
        // read_unaligned copies it out of the ring.
        let ev: RawEvent = unsafe { std::ptr::read_unaligned(item.as_ptr().cast()) };
        if ev.kind == kind::FREE_BATCH {
            if item.len() >= FREE_BATCH_EVENT_SIZE {
                // SAFETY: as above, for the larger FreeBatchEvent.
                let fb: FreeBatchEvent = unsafe { std::ptr::read_unaligned(item.as_ptr().cast()) };
                rec.ingest_free(&fb, out);
            }
            continue;
        }
        rec.ingest(&ev, out);
    }
    true
}

/// Calls of [`drain`] that take what a ring of `bytes` holds now.
pub(super) fn drains_for(bytes: usize) -> usize {
    bytes / (RAW_EVENT_SIZE * DRAIN_BATCH) + 1
}
