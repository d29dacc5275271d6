//! Decoding a chunk's records ([`super`] for the layout): each body is
//! read within its length; an unknown kind is skipped, and a body that does
//! not decode is an error that names its byte.

use super::*;

/// Why a record did not decode; the message is built only when one fails.
#[derive(Debug)]
enum Bad {
    Cut(usize),
    VarintLong(usize),
    TooLarge(u64, usize),
    StrCut(usize),
    Field(&'static str),
    Text(Box<str>),
}

impl std::fmt::Display for Bad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bad::Cut(p) => write!(f, "record cut short at byte {p}"),
            Bad::VarintLong(p) => write!(f, "varint too long at byte {p}"),
            Bad::TooLarge(v, p) => write!(f, "value {v} too large at byte {p}"),
            Bad::StrCut(p) => write!(f, "string cut short at byte {p}"),
            Bad::Field(why) => f.write_str(why),
            Bad::Text(why) => f.write_str(why),
        }
    }
}

/// `v` as a narrower field, or `why`.
#[inline]
fn narrow<T: TryFrom<u64>>(v: u64, why: &'static str) -> Result<T, Bad> {
    T::try_from(v).map_err(|_| Bad::Field(why))
}

/// A bounds-checked reader over a chunk's bytes.
struct Cur<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Cur<'_> {
    #[inline]
    fn u8(&mut self) -> Result<u8, Bad> {
        let v = *self.b.get(self.pos).ok_or(Bad::Cut(self.pos))?;
        self.pos += 1;
        Ok(v)
    }

    /// A LEB128 varint; one byte (most fields) without a loop.
    #[inline(always)]
    fn var(&mut self) -> Result<u64, Bad> {
        match self.b.get(self.pos) {
            Some(&b) if b < 0x80 => {
                self.pos += 1;
                Ok(b as u64)
            }
            _ => self.var_long(),
        }
    }

    #[inline(never)]
    fn var_long(&mut self) -> Result<u64, Bad> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.u8()?;
            v |= ((byte & 0x7f) as u64) << shift;
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(Bad::VarintLong(self.pos))
    }

    /// A varint of [`put_wide`]: at most 2^64.
    fn var_wide(&mut self) -> Result<u128, Bad> {
        let mut v = 0u128;
        for shift in (0..70).step_by(7) {
            let byte = self.u8()?;
            v |= ((byte & 0x7f) as u128) << shift;
            if byte & 0x80 == 0 {
                if v > 1 << 64 {
                    let why = format!("value {v} too large at byte {}", self.pos);
                    return Err(Bad::Text(why.into()));
                }
                return Ok(v);
            }
        }
        Err(Bad::VarintLong(self.pos))
    }

    #[inline(always)]
    fn u32(&mut self) -> Result<u32, Bad> {
        let v = self.var()?;
        u32::try_from(v).map_err(|_| Bad::TooLarge(v, self.pos))
    }

    #[inline(always)]
    fn delta(&mut self, prev: &mut u64) -> Result<u64, Bad> {
        let d = unzigzag(self.var()?);
        *prev = prev.wrapping_add(d as u64);
        Ok(*prev)
    }

    fn str(&mut self) -> Result<String, Bad> {
        let n = self.var()? as usize;
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or(Bad::StrCut(self.pos))?;
        let s = String::from_utf8_lossy(&self.b[self.pos..end]).into_owned();
        self.pos = end;
        Ok(s)
    }
}

/// Decodes a chunk's records. Returns the records and the number of records
/// of unknown kinds skipped; an error names the byte within the chunk.
pub fn decode_records(bytes: &[u8]) -> Result<(Vec<Record>, u64), String> {
    // Most records take 8 to 16 bytes: one growth at most.
    let mut out = Vec::with_capacity(bytes.len() / 8);
    let skipped = decode_records_into(bytes, &mut out)?;
    Ok((out, skipped))
}

/// [`decode_records`] into `out` (cleared first), reusing its memory: a
/// reader that decodes chunk after chunk into the same vector touches no
/// fresh pages. On an error `out` holds the records before it.
pub fn decode_records_into(bytes: &[u8], out: &mut Vec<Record>) -> Result<u64, String> {
    out.clear();
    let mut st = DeltaState::default();
    let mut skipped = 0;
    let mut c = Cur { b: bytes, pos: 0 };
    while c.pos < bytes.len() {
        let start = c.pos;
        let kind = c.u8().map_err(|e| e.to_string())?;
        let len = c.var().map_err(|e| e.to_string())? as usize;
        let end = c
            .pos
            .checked_add(len)
            .filter(|&e| e <= bytes.len())
            .ok_or_else(|| format!("record at byte {start} runs past the chunk"))?;
        let mut r = Cur {
            b: &bytes[..end],
            pos: c.pos,
        };
        let rec = decode_body(kind, &mut r, &mut st)
            .map_err(|e| format!("record of kind {kind} at byte {start}: {e}"))?;
        match rec {
            Some(rec) => out.push(rec),
            None => skipped += 1,
        }
        c.pos = end;
    }
    Ok(skipped)
}

fn decode_body(kind: u8, c: &mut Cur, st: &mut DeltaState) -> Result<Option<Record>, Bad> {
    let rec = match kind {
        K_TASK => Record::Task {
            tid: c.u32()?,
            pid: c.u32()?,
            comm: c.str()?,
        },
        K_ADDRESS_SPACE => Record::AddressSpace {
            mm: c.u32()?,
            pid: c.u32()?,
        },
        K_SWAP_OUT => {
            let ts = c.delta(&mut st.ts)?;
            let tid = c.u32()?;
            let mm = c.u32()?;
            let vaddr = c.delta(&mut st.out_page)? << PAGE_SHIFT;
            let dev = narrow::<u8>(c.var()?, "bad swap type")?;
            let offset = c.delta(&mut st.out_off)?;
            let nh = c.var()?;
            let how = match nh & 3 {
                0 => OutKind::Io,
                1 => OutKind::Zero,
                2 => OutKind::Zswap,
                _ => OutKind::Unknown,
            };
            Record::SwapOut {
                ts,
                tid,
                mm,
                vaddr,
                entry: SwapEntry { dev, offset },
                nr: narrow::<u32>(nh >> 2, "nr too large")?,
                how,
            }
        }
        K_SWAP_FAULT => {
            let ts = c.delta(&mut st.ts)?;
            let dur_ns = c.u32()?;
            let tid = c.u32()?;
            let mm = c.u32()?;
            let page = c.delta(&mut st.fault_page)?;
            let low = c.var()?;
            let dev = c.var()?;
            let entry = if dev == 0 {
                None
            } else {
                Some(SwapEntry {
                    dev: narrow::<u8>(dev - 1, "bad swap type")?,
                    offset: c.delta(&mut st.fault_off)?,
                })
            };
            let bits = c.var()?;
            let (zero_reads, zswap_loads) = if bits & 2 != 0 {
                (c.u32()?, c.u32()?)
            } else {
                (0, 0)
            };
            Record::SwapFault {
                ts,
                dur_ns,
                tid,
                mm,
                addr: (page << PAGE_SHIFT) | (low & ((1 << PAGE_SHIFT) - 1)),
                entry,
                major: bits & 1 != 0,
                pages_read: narrow::<u32>(bits >> 2, "too many pages")?,
                zero_reads,
                zswap_loads,
                write: (low >> PAGE_SHIFT) & 1 != 0,
            }
        }
        K_SWAP_READ => {
            let ts = c.delta(&mut st.ts)?;
            let tid = c.u32()?;
            let nh = c.var()?;
            Record::SwapRead {
                ts,
                tid,
                how: read_kind(nh),
                nr: narrow::<u32>(nh >> 2, "nr too large")?,
            }
        }
        K_WILLNEED => {
            let ts = c.delta(&mut st.willneed_ts)?;
            let tid = c.u32()?;
            let mm = c.u32()?;
            let start = c.var()?;
            let end = start
                .checked_add(c.var()?)
                .ok_or(Bad::Field("range ends past 2^64"))?;
            let nh = c.var()?;
            Record::WillNeed {
                ts,
                tid,
                mm,
                start,
                end,
                how: read_kind(nh),
                nr: narrow::<u32>(nh >> 2, "nr too large")?,
            }
        }
        K_RECLAIM => {
            let ts = c.delta(&mut st.ts)?;
            let tid = c.u32()?;
            let bits = c.var()?;
            Record::Reclaim {
                ts,
                tid,
                begin: bits & 1 != 0,
                memcg: bits & 2 != 0,
                nr_reclaimed: c.var()?,
            }
        }
        K_KHUGEPAGED => Record::KhugepagedSwapin {
            ts: c.delta(&mut st.ts)?,
            tid: c.u32()?,
            mm: c.u32()?,
            swapped_in: c.u32()?,
            referenced: c.u32()?,
            ret: unzigzag(c.var()?) as i32,
        },
        K_SYSCALL => {
            let ts = c.delta(&mut st.ts)?;
            let tid = c.u32()?;
            let bits = c.var()?;
            let call = if bits & 1 == 0 {
                Syscall::Swapon
            } else {
                Syscall::Swapoff
            };
            let ret = if bits & 2 != 0 {
                Some(unzigzag(c.var()?))
            } else {
                None
            };
            Record::Syscall { ts, tid, call, ret }
        }
        K_ZSWAP_WB => Record::ZswapWriteback {
            ts: c.delta(&mut st.ts)?,
            tid: c.u32()?,
            nr: c.u32()?,
            entry: if c.pos < c.b.len() {
                Some(SwapEntry {
                    dev: narrow::<u8>(c.var()?, "bad swap type")?,
                    offset: c.var()?,
                })
            } else {
                None
            },
        },
        K_RA_WINDOW => {
            let ts = c.delta(&mut st.ts)?;
            let tid = c.u32()?;
            let dev = narrow::<u8>(c.var()?, "bad swap type")?;
            let offset = c.delta(&mut st.fault_off)?;
            let ws = c.var()?;
            Record::RaWindow {
                ts,
                tid,
                entry: SwapEntry { dev, offset },
                window: narrow::<u32>(ws >> 1, "window too large")?,
                hits: c.u32()?,
                source: if ws & 1 == 0 {
                    RaSource::KprobeLastReadaheadPages
                } else {
                    RaSource::FexitLastReadaheadPages
                },
            }
        }
        K_CACHE_LOOKUP => {
            let ts = c.delta(&mut st.ts)?;
            let tid = c.u32()?;
            let bits = c.var()?;
            let offset = c.delta(&mut st.fault_off)?;
            Record::CacheLookup {
                ts,
                tid,
                entry: SwapEntry {
                    dev: narrow::<u8>(bits >> 2, "bad swap type")?,
                    offset,
                },
                hit: bits & 1 != 0,
                ra_hit: bits & 2 != 0,
            }
        }
        K_FREE_BATCH => {
            let ts = c.delta(&mut st.ts)?;
            let tid = c.u32()?;
            let lat_ns = c.u32()?;
            let n = c.var()?;
            if n > 1 << 16 {
                return Err(Bad::Text(format!("free batch of {n} entries").into()));
            }
            let mut entries = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let dev = narrow::<u8>(c.var()?, "bad swap type")?;
                entries.push(SwapEntry {
                    dev,
                    offset: c.delta(&mut st.out_off)?,
                });
            }
            Record::FreeBatch {
                ts,
                tid,
                lat_ns,
                entries,
            }
        }
        K_ZSWAP_OP => {
            let ts = c.delta(&mut st.ts)?;
            let tid = c.u32()?;
            let bits = c.var()?;
            Record::ZswapOp {
                ts,
                tid,
                load: bits & 2 != 0,
                ok: bits & 1 != 0,
            }
        }
        K_ZAP => {
            let ts = c.delta(&mut st.ts)?;
            let tid = c.u32()?;
            let bits = c.var()?;
            Record::Zap {
                ts,
                tid,
                mm: (bits >> 1) as u32,
                exiting: bits & 1 != 0,
                swap_ents: c.var_wide()?.checked_sub(1).map(|z| unzigzag(z as u64)),
            }
        }
        K_KHUGEPAGED_SCAN => Record::KhugepagedScan {
            ts: c.delta(&mut st.ts)?,
            tid: c.u32()?,
            mm: c.u32()?,
            referenced: c.u32()?,
            none_or_zero: c.u32()?,
            unmapped: c.u32()?,
            status: unzigzag(c.var()?) as i32,
            pmd: if c.pos < c.b.len() { c.var()? } else { 0 },
        },
        K_COLLAPSE => {
            let ts = c.delta(&mut st.ts)?;
            let tid = c.u32()?;
            let bits = c.var()?;
            Record::Collapse {
                ts,
                tid,
                mm: (bits >> 1) as u32,
                isolated: bits & 1 != 0,
                status: unzigzag(c.var()?) as i32,
            }
        }
        K_LOST => Record::Lost {
            ts: c.delta(&mut st.ts)?,
            what: c.str()?,
            count: c.var()?,
        },
        K_VMA | K_UNMAPPED | K_ZAPPED => {
            // An address space's range: ts, mm, start, length.
            let ts = c.delta(&mut st.ts)?;
            let mm = c.u32()?;
            let start = c.var()?;
            let end = start
                .checked_add(c.var()?)
                .ok_or(Bad::Field("range ends past 2^64"))?;
            match kind {
                K_VMA => Record::Vma { ts, mm, start, end },
                K_UNMAPPED => Record::Unmapped { ts, mm, start, end },
                _ => Record::Zapped { ts, mm, start, end },
            }
        }
        K_OUT_FREED => Record::OutFreed {
            ts: c.delta(&mut st.ts)?,
            entry: SwapEntry {
                dev: narrow::<u8>(c.var()?, "bad swap type")?,
                offset: c.delta(&mut st.freed_off)?,
            },
            nr: 1,
        },
        K_OUT_FREED_FOLIO => Record::OutFreed {
            ts: c.delta(&mut st.folio_ts)?,
            entry: SwapEntry {
                dev: narrow::<u8>(c.var()?, "bad swap type")?,
                offset: c.delta(&mut st.folio_off)?,
            },
            nr: c.u32()?,
        },
        K_MOVED => {
            // ts, mm, from, to, length: both ranges must fit below 2^64.
            let ts = c.delta(&mut st.moved_ts)?;
            let mm = c.u32()?;
            let (from, to, len) = (c.var()?, c.var()?, c.var()?);
            if from.checked_add(len).is_none() || to.checked_add(len).is_none() {
                return Err(Bad::Field("moved range ends past 2^64"));
            }
            Record::Moved {
                ts,
                mm,
                from,
                to,
                len,
            }
        }
        K_WRITE_END => Record::WriteEnd {
            ts: c.delta(&mut st.wend_ts)?,
            entry: SwapEntry {
                dev: narrow::<u8>(c.var()?, "bad swap type")?,
                offset: c.delta(&mut st.wend_off)?,
            },
            nr: narrow::<u32>(c.var()?, "nr too large")?,
        },
        K_ISOLATED => Record::Isolated {
            ts: c.delta(&mut st.iso_ts)?,
            entry: SwapEntry {
                dev: narrow::<u8>(c.var()?, "bad swap type")?,
                offset: c.delta(&mut st.iso_off)?,
            },
        },
        _ => return Ok(None),
    };
    Ok(Some(rec))
}

/// A read's kind from the two low bits of its count.
fn read_kind(nh: u64) -> ReadKind {
    match nh & 3 {
        0 => ReadKind::Io,
        1 => ReadKind::Zero,
        2 => ReadKind::Zswap,
        _ => ReadKind::Unknown,
    }
}
