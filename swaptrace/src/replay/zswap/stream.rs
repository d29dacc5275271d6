//! The zswap family streamed from a trace file in bounded memory.
//!
//! A replay needs four things of the whole trace before its first event:
//! the memory figure the pool limit is a share of (the header's, else the
//! distinct entries swapped out), whether it has reclaim records (else
//! pressure comes every N swap-outs), the first and last event time (the
//! pool-size series' buckets), and the footer (the recorded pool's
//! compression ratio). A first pass learns them; a second decodes the
//! trace again and fans batches of events out to one thread per policy
//! over bounded channels. What grows is each policy's model (the pool and
//! its per-entry slots), the readahead windows waiting for their fault,
//! and, in the first pass only, the distinct entries when the header has
//! no memory figure. The events and their order are those of
//! [`ZswapInput::from_records`](super::ZswapInput::from_records).

use super::input::{kernel_policy, recorded, uses_vma_readahead, EventBuilder};
use super::replayer::{Replayer, Span};
use super::{asked, fan_out, ZswapError, ZswapEvent, ZswapLive, ZswapReplay};
use crate::replay::family::{Progress, ReplayRequest};
use crate::trace::{Header, StreamEnd, TraceStream};

/// Events sent to the policy threads at a time: a batch holds at most this
/// many and one record's (a large folio's pages).
pub(super) const EVENTS_BATCH: usize = 1 << 16;

/// A trace's first pass: its header, what the reader found (footer,
/// problems), and what the replay needs of the whole trace.
pub struct ZswapScanned {
    pub header: Header,
    pub end: StreamEnd,
    span: Span,
    live: ZswapLive,
    bad_records: u64,
    has_swap_outs: bool,
}

/// The events of `s`'s remaining records, converted by `b`, to `send` in
/// batches of about [`EVENTS_BATCH`]; `each` sees the stream after every
/// chunk. The most events held at once.
pub(super) fn events(
    s: &mut TraceStream,
    b: &mut EventBuilder,
    send: &mut dyn FnMut(&[ZswapEvent]),
    each: &mut dyn FnMut(&TraceStream),
) -> usize {
    let mut buf = Vec::new();
    let mut held = 0;
    while let Some(batch) = s.next_batch() {
        for r in &batch {
            b.convert(r, &mut buf);
            if buf.len() >= EVENTS_BATCH {
                held = held.max(buf.len());
                send(&buf);
                buf.clear();
            }
        }
        s.recycle(batch);
        each(s);
    }
    held = held.max(buf.len());
    send(&buf);
    held
}

/// The first pass over `s` (see the module doc).
pub fn scan(mut s: TraceStream, progress: Progress) -> ZswapScanned {
    let header = s.header().clone();
    let mut b = EventBuilder::new(header.page_size, header.mem_total_kib == 0)
        .vma_readahead(uses_vma_readahead(&header))
        .measure_residency(header.records_out_freed());
    events(&mut s, &mut b, &mut |_| {}, &mut |s| {
        let (done, total) = s.position();
        progress("scanning", done, total)
    });
    let end = s.finish();
    let mut live = b.live();
    let memory_pages = recorded(&header, end.footer.as_ref(), &mut live);
    let (t0, t1) = b.span();
    ZswapScanned {
        span: Span {
            memory_figure: memory_pages.unwrap_or_else(|| b.distinct_out_pages()),
            has_reclaim: b.has_reclaim,
            has_writebacks: b.has_writebacks,
            kernel_policy: kernel_policy(&header),
            stored: live.zswap_stores > 0,
            resident_pages: b.resident_pages(),
            t0,
            t1,
        },
        live,
        bad_records: b.bad_records,
        has_swap_outs: b.has_swap_outs(),
        header,
        end,
    }
}

impl ZswapScanned {
    /// [`run`](super::run) of the scanned trace, read again from `s`: the
    /// same replay, in bounded memory.
    pub fn replay(
        &self,
        req: &ReplayRequest,
        mut s: TraceStream,
        progress: Progress,
    ) -> Result<ZswapReplay, ZswapError> {
        let (params, policies) = asked(&self.header, self.end.footer.as_ref(), req)?;
        if !self.has_swap_outs {
            return Err(ZswapError::NothingToReplay);
        }
        let span = self.span;
        let mut b = EventBuilder::new(self.header.page_size, false)
            .vma_readahead(uses_vma_readahead(&self.header))
            .follow_frees(self.header.records_out_freed());
        let metrics = fan_out(
            &policies,
            |pol, batches| {
                let mut r = Replayer::new(span, pol, &params);
                for batch in batches {
                    batch.iter().for_each(|ev| r.step(ev));
                }
                r.finish()
            },
            |send| {
                events(&mut s, &mut b, send, &mut |s| {
                    let (done, total) = s.position();
                    progress("replaying", done, total)
                });
            },
        )?;
        Ok(ZswapReplay {
            live: self.live.clone(),
            metrics,
            bad_records: self.bad_records,
        })
    }
}

/// [`scan`], then [`ZswapScanned::replay`], of the trace `open` opens twice.
pub fn run_streamed<E: From<ZswapError>>(
    open: &dyn Fn() -> Result<TraceStream, E>,
    req: &ReplayRequest,
    progress: Progress,
) -> Result<(ZswapScanned, ZswapReplay), E> {
    let scanned = scan(open()?, progress);
    let r = scanned.replay(req, open()?, progress)?;
    Ok((scanned, r))
}
