//! Record encoding inside a chunk: `kind: u8, len: varint, body[len]`.
//! Bodies are LEB128 varints, delta-coded against the previous record of the
//! same chunk (times, pages, swap offsets), so every chunk decodes alone.
//! Unknown kinds are skipped by their length.

use super::{OutKind, RaSource, ReadKind, Record, SwapEntry, Syscall};

const K_TASK: u8 = 1;
const K_ADDRESS_SPACE: u8 = 2;
const K_SWAP_OUT: u8 = 3;
const K_SWAP_FAULT: u8 = 4;
const K_SWAP_READ: u8 = 5;
const K_RECLAIM: u8 = 6;
const K_KHUGEPAGED: u8 = 7;
const K_SYSCALL: u8 = 8;
const K_LOST: u8 = 9;
const K_ZSWAP_WB: u8 = 10;
const K_RA_WINDOW: u8 = 11;
const K_CACHE_LOOKUP: u8 = 12;
const K_FREE_BATCH: u8 = 13;
const K_ZSWAP_OP: u8 = 14;
const K_ZAP: u8 = 15;
const K_KHUGEPAGED_SCAN: u8 = 16;
const K_COLLAPSE: u8 = 17;
const K_VMA: u8 = 18;
const K_OUT_FREED: u8 = 19;
const K_UNMAPPED: u8 = 20;
const K_ISOLATED: u8 = 21;
const K_MOVED: u8 = 22;
/// An `out_freed` of a large folio freed whole, with its page count.
const K_OUT_FREED_FOLIO: u8 = 23;
/// A range `madvise()` zapped (older readers skip it).
const K_ZAPPED: u8 = 24;
const K_WILLNEED: u8 = 25;
const K_WRITE_END: u8 = 26;

const PAGE_SHIFT: u32 = 12;

/// Delta-coding state; starts at zero in every chunk.
#[derive(Default, Clone)]
pub struct DeltaState {
    ts: u64,
    out_page: u64,
    out_off: u64,
    fault_page: u64,
    fault_off: u64,
    freed_off: u64,
    /// Chains of their own for kinds newer readers added: a reader that
    /// skips the kind keeps the chains it knows.
    iso_ts: u64,
    iso_off: u64,
    moved_ts: u64,
    folio_ts: u64,
    folio_off: u64,
    willneed_ts: u64,
    wend_ts: u64,
    wend_off: u64,
}

fn put(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// A varint of up to 65 bits: as [`put`] below 2^64 (so the bytes are
/// the same), and 2^64 itself in ten bytes (the last one 2).
fn put_wide(buf: &mut Vec<u8>, mut v: u128) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn put_delta(buf: &mut Vec<u8>, prev: &mut u64, v: u64) {
    put(buf, zigzag(v.wrapping_sub(*prev) as i64));
    *prev = v;
}

fn put_str(buf: &mut Vec<u8>, s: &str) {
    put(buf, s.len() as u64);
    buf.extend_from_slice(s.as_bytes());
}

/// Appends one record to `buf`.
pub fn encode_record(buf: &mut Vec<u8>, st: &mut DeltaState, r: &Record) {
    let mut b = Vec::with_capacity(32);
    let kind = match r {
        Record::Task { tid, pid, comm } => {
            put(&mut b, *tid as u64);
            put(&mut b, *pid as u64);
            put_str(&mut b, comm);
            K_TASK
        }
        Record::AddressSpace { mm, pid } => {
            put(&mut b, *mm as u64);
            put(&mut b, *pid as u64);
            K_ADDRESS_SPACE
        }
        Record::SwapOut {
            ts,
            tid,
            mm,
            vaddr,
            entry,
            nr,
            how,
        } => {
            put_delta(&mut b, &mut st.ts, *ts);
            put(&mut b, *tid as u64);
            put(&mut b, *mm as u64);
            put_delta(&mut b, &mut st.out_page, vaddr >> PAGE_SHIFT);
            put(&mut b, entry.dev as u64);
            put_delta(&mut b, &mut st.out_off, entry.offset);
            let how = match how {
                OutKind::Io => 0,
                OutKind::Zero => 1,
                OutKind::Zswap => 2,
                OutKind::Unknown => 3,
            };
            // nr and how share a varint: nr << 2 | how.
            put(&mut b, ((*nr as u64) << 2) | how);
            K_SWAP_OUT
        }
        Record::SwapFault {
            ts,
            dur_ns,
            tid,
            mm,
            addr,
            entry,
            major,
            pages_read,
            zero_reads,
            zswap_loads,
            write,
        } => {
            put_delta(&mut b, &mut st.ts, *ts);
            put(&mut b, *dur_ns as u64);
            put(&mut b, *tid as u64);
            put(&mut b, *mm as u64);
            put_delta(&mut b, &mut st.fault_page, addr >> PAGE_SHIFT);
            // The in-page offset, and above it the write bit: readers that
            // predate it mask it off.
            put(
                &mut b,
                (addr & ((1 << PAGE_SHIFT) - 1)) | (*write as u64) << PAGE_SHIFT,
            );
            match entry {
                Some(e) => {
                    put(&mut b, e.dev as u64 + 1);
                    put_delta(&mut b, &mut st.fault_off, e.offset);
                }
                None => put(&mut b, 0),
            }
            let extra = *zero_reads != 0 || *zswap_loads != 0;
            // pages_read << 2 | extra << 1 | major.
            put(
                &mut b,
                ((*pages_read as u64) << 2) | ((extra as u64) << 1) | *major as u64,
            );
            if extra {
                put(&mut b, *zero_reads as u64);
                put(&mut b, *zswap_loads as u64);
            }
            K_SWAP_FAULT
        }
        Record::SwapRead { ts, tid, how, nr } => {
            put_delta(&mut b, &mut st.ts, *ts);
            put(&mut b, *tid as u64);
            put(&mut b, ((*nr as u64) << 2) | read_bits(*how));
            K_SWAP_READ
        }
        Record::WillNeed {
            ts,
            tid,
            mm,
            start,
            end,
            how,
            nr,
        } => {
            put_delta(&mut b, &mut st.willneed_ts, *ts);
            put(&mut b, *tid as u64);
            put(&mut b, *mm as u64);
            put(&mut b, *start);
            put(&mut b, end.wrapping_sub(*start));
            put(&mut b, ((*nr as u64) << 2) | read_bits(*how));
            K_WILLNEED
        }
        Record::Reclaim {
            ts,
            tid,
            begin,
            memcg,
            nr_reclaimed,
        } => {
            put_delta(&mut b, &mut st.ts, *ts);
            put(&mut b, *tid as u64);
            put(&mut b, ((*memcg as u64) << 1) | *begin as u64);
            put(&mut b, *nr_reclaimed);
            K_RECLAIM
        }
        Record::KhugepagedSwapin {
            ts,
            tid,
            mm,
            swapped_in,
            referenced,
            ret,
        } => {
            put_delta(&mut b, &mut st.ts, *ts);
            put(&mut b, *tid as u64);
            put(&mut b, *mm as u64);
            put(&mut b, *swapped_in as u64);
            put(&mut b, *referenced as u64);
            put(&mut b, zigzag(*ret as i64));
            K_KHUGEPAGED
        }
        Record::Syscall { ts, tid, call, ret } => {
            put_delta(&mut b, &mut st.ts, *ts);
            put(&mut b, *tid as u64);
            let call = match call {
                Syscall::Swapon => 0,
                Syscall::Swapoff => 1,
            };
            put(&mut b, ((ret.is_some() as u64) << 1) | call);
            if let Some(ret) = ret {
                put(&mut b, zigzag(*ret));
            }
            K_SYSCALL
        }
        Record::ZswapWriteback { ts, tid, nr, entry } => {
            put_delta(&mut b, &mut st.ts, *ts);
            put(&mut b, *tid as u64);
            put(&mut b, *nr as u64);
            // The entry after the fields readers before it knew (they skip
            // a record's tail), not delta-coded: they would not follow.
            if let Some(e) = entry {
                put(&mut b, e.dev as u64);
                put(&mut b, e.offset);
            }
            K_ZSWAP_WB
        }
        Record::RaWindow {
            ts,
            tid,
            entry,
            window,
            hits,
            source,
        } => {
            put_delta(&mut b, &mut st.ts, *ts);
            put(&mut b, *tid as u64);
            put(&mut b, entry.dev as u64);
            put_delta(&mut b, &mut st.fault_off, entry.offset);
            let src = match source {
                RaSource::KprobeLastReadaheadPages => 0,
                RaSource::FexitLastReadaheadPages => 1,
            };
            put(&mut b, ((*window as u64) << 1) | src);
            put(&mut b, *hits as u64);
            K_RA_WINDOW
        }
        Record::CacheLookup {
            ts,
            tid,
            entry,
            hit,
            ra_hit,
        } => {
            put_delta(&mut b, &mut st.ts, *ts);
            put(&mut b, *tid as u64);
            put(
                &mut b,
                ((entry.dev as u64) << 2) | ((*ra_hit as u64) << 1) | *hit as u64,
            );
            put_delta(&mut b, &mut st.fault_off, entry.offset);
            K_CACHE_LOOKUP
        }
        Record::FreeBatch {
            ts,
            tid,
            lat_ns,
            entries,
        } => {
            put_delta(&mut b, &mut st.ts, *ts);
            put(&mut b, *tid as u64);
            put(&mut b, *lat_ns as u64);
            put(&mut b, entries.len() as u64);
            for e in entries {
                put(&mut b, e.dev as u64);
                put_delta(&mut b, &mut st.out_off, e.offset);
            }
            K_FREE_BATCH
        }
        Record::ZswapOp { ts, tid, load, ok } => {
            put_delta(&mut b, &mut st.ts, *ts);
            put(&mut b, *tid as u64);
            put(&mut b, ((*load as u64) << 1) | *ok as u64);
            K_ZSWAP_OP
        }
        Record::Zap {
            ts,
            tid,
            mm,
            swap_ents,
            exiting,
        } => {
            put_delta(&mut b, &mut st.ts, *ts);
            put(&mut b, *tid as u64);
            put(&mut b, ((*mm as u64) << 1) | *exiting as u64);
            // 0: unknown, else zigzag + 1 (2^64 for i64::MIN: a wide varint).
            put_wide(&mut b, swap_ents.map_or(0, |v| zigzag(v) as u128 + 1));
            K_ZAP
        }
        Record::KhugepagedScan {
            ts,
            tid,
            mm,
            referenced,
            none_or_zero,
            unmapped,
            status,
            pmd,
        } => {
            put_delta(&mut b, &mut st.ts, *ts);
            put(&mut b, *tid as u64);
            put(&mut b, *mm as u64);
            put(&mut b, *referenced as u64);
            put(&mut b, *none_or_zero as u64);
            put(&mut b, *unmapped as u64);
            put(&mut b, zigzag(*status as i64));
            // Optional (older traces end here).
            if *pmd != 0 {
                put(&mut b, *pmd);
            }
            K_KHUGEPAGED_SCAN
        }
        Record::Collapse {
            ts,
            tid,
            mm,
            isolated,
            status,
        } => {
            put_delta(&mut b, &mut st.ts, *ts);
            put(&mut b, *tid as u64);
            put(&mut b, ((*mm as u64) << 1) | *isolated as u64);
            put(&mut b, zigzag(*status as i64));
            K_COLLAPSE
        }
        Record::Lost { ts, what, count } => {
            put_delta(&mut b, &mut st.ts, *ts);
            put_str(&mut b, what);
            put(&mut b, *count);
            K_LOST
        }
        Record::Vma { ts, mm, start, end }
        | Record::Unmapped { ts, mm, start, end }
        | Record::Zapped { ts, mm, start, end } => {
            put_delta(&mut b, &mut st.ts, *ts);
            put(&mut b, *mm as u64);
            put(&mut b, *start);
            put(&mut b, end.wrapping_sub(*start));
            match r {
                Record::Vma { .. } => K_VMA,
                Record::Unmapped { .. } => K_UNMAPPED,
                _ => K_ZAPPED,
            }
        }
        Record::OutFreed { ts, entry, nr } if *nr > 1 => {
            // Chains of its own: a reader older than it skips it.
            put_delta(&mut b, &mut st.folio_ts, *ts);
            put(&mut b, entry.dev as u64);
            put_delta(&mut b, &mut st.folio_off, entry.offset);
            put(&mut b, *nr as u64);
            K_OUT_FREED_FOLIO
        }
        Record::OutFreed { ts, entry, .. } => {
            put_delta(&mut b, &mut st.ts, *ts);
            put(&mut b, entry.dev as u64);
            put_delta(&mut b, &mut st.freed_off, entry.offset);
            K_OUT_FREED
        }
        Record::WriteEnd { ts, entry, nr } => {
            put_delta(&mut b, &mut st.wend_ts, *ts);
            put(&mut b, entry.dev as u64);
            put_delta(&mut b, &mut st.wend_off, entry.offset);
            put(&mut b, *nr as u64);
            K_WRITE_END
        }
        Record::Isolated { ts, entry } => {
            put_delta(&mut b, &mut st.iso_ts, *ts);
            put(&mut b, entry.dev as u64);
            put_delta(&mut b, &mut st.iso_off, entry.offset);
            K_ISOLATED
        }
        Record::Moved {
            ts,
            mm,
            from,
            to,
            len,
        } => {
            put_delta(&mut b, &mut st.moved_ts, *ts);
            put(&mut b, *mm as u64);
            put(&mut b, *from);
            put(&mut b, *to);
            put(&mut b, *len);
            K_MOVED
        }
    };
    buf.push(kind);
    put(buf, b.len() as u64);
    buf.extend_from_slice(&b);
}

mod decode;
pub use decode::{decode_records, decode_records_into};

#[cfg(test)]
mod tests;

/// A read's kind in the two low bits of its count.
fn read_bits(how: ReadKind) -> u64 {
    match how {
        ReadKind::Io => 0,
        ReadKind::Zero => 1,
        ReadKind::Zswap => 2,
        ReadKind::Unknown => 3,
    }
}
