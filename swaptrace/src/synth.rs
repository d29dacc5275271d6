//! Synthetic traces: pages swapped out in a chosen order, then faulted back
//! in address order, for tests and benchmarks that need no root.

use crate::trace::{
    Footer, Header, OutKind, OutputPolicy, Readahead, Record, SwapEntry, TraceError, TraceWriter,
    FORMAT_VERSION,
};
use crate::workload::{touch_order, Pattern};
use std::path::Path;
use std::str::FromStr;

/// Swap-out order of each address space, or several address spaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SynthPattern {
    One(Pattern),
    /// P address spaces, each swapped out and faulted sequentially, interleaved.
    Multi(u32),
}

impl FromStr for SynthPattern {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.strip_prefix("multi:") {
            Some(p) => match p.parse::<u32>() {
                Ok(n) if (1..=1024).contains(&n) => Ok(SynthPattern::Multi(n)),
                _ => Err(format!(
                    "invalid pattern {s:?}: multi:P takes 1 to 1024 processes"
                )),
            },
            None => s
                .parse::<Pattern>()
                .map(SynthPattern::One)
                .map_err(|e| e.to_string()),
        }
    }
}

#[derive(Clone, Debug)]
pub struct SynthSpec {
    pub pattern: SynthPattern,
    /// Distinct pages (swap entries).
    pub pages: u64,
    /// Faults to generate: passes over the pages in address order.
    pub faults: u64,
    pub seed: u64,
    /// Memory the replay should assume, in pages.
    pub memory_pages: u64,
}

/// The most distinct pages a synthetic trace has: generating keeps a few
/// words per page (24 B: 384 MiB at the limit), 64 GiB of 4 KiB pages.
pub const MAX_PAGES: u64 = 1 << 24;
/// The most faults: records are written as they are made, so this bounds
/// only the time and the file (about 2^30 records, a few GiB).
pub const MAX_FAULTS: u64 = 1 << 30;
/// The most memory the replay may assume, in pages (4 PiB): the header
/// holds it in bytes, which must not wrap.
pub const MAX_MEMORY_PAGES: u64 = 1 << 40;

#[derive(Debug, thiserror::Error)]
pub enum SynthError {
    #[error("{what} must be 1 to {max}, not {value}")]
    OutOfRange {
        what: &'static str,
        value: u64,
        max: u64,
    },
    #[error(transparent)]
    Trace(#[from] TraceError),
}

impl SynthSpec {
    /// Whether the spec is within [`MAX_PAGES`], [`MAX_FAULTS`] and
    /// [`MAX_MEMORY_PAGES`] (pages and memory at least 1).
    pub fn check(&self) -> Result<(), SynthError> {
        for (what, value, min, max) in [
            ("pages", self.pages, 1, MAX_PAGES),
            ("faults", self.faults, 0, MAX_FAULTS),
            ("memory pages", self.memory_pages, 1, MAX_MEMORY_PAGES),
        ] {
            if !(min..=max).contains(&value) {
                return Err(SynthError::OutOfRange { what, value, max });
            }
        }
        Ok(())
    }
}

const PAGE: u64 = 4096;
const BASE_VPAGE: u64 = 0x7f00_0000_0000 >> 12;
/// Address spaces interleave in runs of this many pages.
const RUN: u64 = 32;

/// Calls `emit` with every record of the synthetic trace, in time order.
pub fn generate(spec: &SynthSpec, mut emit: impl FnMut(Record)) {
    let procs = match spec.pattern {
        SynthPattern::One(_) => 1,
        SynthPattern::Multi(n) => n as u64,
    };
    let per = spec.pages.div_ceil(procs).max(1);
    // Page i belongs to address space i / per, at virtual page i % per.
    let place = |i: u64| (1 + (i / per) as u32, BASE_VPAGE + i % per);
    // Several address spaces take turns in runs of RUN pages, in address order.
    let interleaved = |pages: u64| -> Vec<u64> {
        let mut next: Vec<u64> = (0..procs).map(|p| p * per).collect();
        let mut out = Vec::with_capacity(pages as usize);
        while (out.len() as u64) < pages {
            for p in 0..procs {
                let end = ((p + 1) * per).min(pages);
                let from = next[p as usize];
                let to = (from + RUN).min(end);
                out.extend(from..to);
                next[p as usize] = to;
            }
        }
        out
    };
    // One address space faults in page order: no table for it (8 B a page).
    let fault_order = if matches!(spec.pattern, SynthPattern::Multi(_)) {
        interleaved(spec.pages)
    } else {
        Vec::new()
    };
    let fault_page = |i: u64| fault_order.get(i as usize).copied().unwrap_or(i);
    let touched;
    let order: &[u64] = match spec.pattern {
        SynthPattern::One(p) => {
            touched = touch_order(p, spec.pages, spec.seed);
            &touched
        }
        SynthPattern::Multi(_) => &fault_order,
    };
    let mut ts = 1_000_000u64;
    for p in 1..=procs as u32 {
        emit(Record::AddressSpace {
            mm: p,
            pid: 1000 + p,
        });
    }
    let mut slot = vec![0u64; spec.pages as usize];
    for (k, &page) in order.iter().enumerate() {
        let (mm, vpage) = place(page);
        let entry = SwapEntry {
            dev: 0,
            offset: k as u64 + 1,
        };
        slot[page as usize] = entry.offset;
        ts += 1_000;
        emit(Record::SwapOut {
            ts,
            tid: 50,
            mm,
            vaddr: vpage * PAGE,
            entry,
            nr: 1,
            how: OutKind::Io,
        });
    }
    for k in 0..spec.faults {
        let page = fault_page(k % spec.pages);
        let (mm, vpage) = place(page);
        ts += 2_000;
        emit(Record::SwapFault {
            ts,
            dur_ns: 0,
            tid: 1000 + mm,
            mm,
            addr: vpage * PAGE,
            entry: Some(SwapEntry {
                dev: 0,
                offset: slot[page as usize],
            }),
            major: false,
            pages_read: 0,
            zero_reads: 0,
            zswap_loads: 0,
            write: false,
        });
    }
}

/// The header a synthetic trace carries.
pub fn header(spec: &SynthSpec) -> Header {
    Header {
        format_version: FORMAT_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        kernel_release: "synthetic".into(),
        page_size: PAGE,
        mem_total_kib: spec.memory_pages * PAGE / 1024,
        readahead: Readahead {
            page_cluster: Some(3),
            vma_ra_enabled: Some(true),
        },
        target: format!(
            "synthetic: {:?}, {} pages, {} faults, seed {}",
            spec.pattern, spec.pages, spec.faults, spec.seed
        ),
        memory_limit_bytes: Some(spec.memory_pages * PAGE),
        ..Header::default()
    }
}

/// Writes a synthetic trace, record by record as they are made; returns
/// the number of records.
pub fn write(spec: &SynthSpec, path: &Path, policy: &OutputPolicy) -> Result<u64, SynthError> {
    spec.check()?;
    let mut w = TraceWriter::create_with(path, &header(spec), policy)?;
    let mut failed = None;
    generate(spec, |r| {
        if failed.is_none() {
            failed = w.push(&r).err();
        }
    });
    if let Some(e) = failed {
        return Err(e.into());
    }
    let n = w.records();
    w.finish(&Footer {
        records: n,
        ..Footer::default()
    })?;
    Ok(n)
}

/// Writes `records` under `header` as a finalized trace; returns the count.
pub fn write_records(
    header: &Header,
    records: impl IntoIterator<Item = Record>,
    path: &Path,
    policy: &OutputPolicy,
) -> Result<u64, TraceError> {
    let mut w = TraceWriter::create_with(path, header, policy)?;
    for r in records {
        w.push(&r)?;
    }
    let n = w.records();
    w.finish(&Footer {
        records: n,
        ..Footer::default()
    })?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_parse() {
        assert_eq!(
            "multi:4".parse::<SynthPattern>(),
            Ok(SynthPattern::Multi(4))
        );
        assert!("multi:0".parse::<SynthPattern>().is_err());
        assert!(matches!(
            "seq".parse::<SynthPattern>(),
            Ok(SynthPattern::One(_))
        ));
        assert!("zigzag".parse::<SynthPattern>().is_err());
    }

    #[test]
    fn every_fault_names_the_entry_its_page_was_swapped_out_to() {
        for pattern in [
            "seq",
            "random",
            "strided:4",
            "shuffled-blocks:16",
            "multi:3",
        ] {
            let spec = SynthSpec {
                pattern: pattern.parse().unwrap(),
                pages: 1000,
                faults: 2500,
                seed: 7,
                memory_pages: 256,
            };
            let mut outs = std::collections::HashMap::new();
            let (mut n_out, mut n_fault) = (0, 0);
            generate(&spec, |r| match r {
                Record::SwapOut {
                    mm, vaddr, entry, ..
                } => {
                    n_out += 1;
                    assert!(outs.insert((mm, vaddr), entry).is_none(), "{pattern}");
                }
                Record::SwapFault {
                    mm, addr, entry, ..
                } => {
                    n_fault += 1;
                    assert_eq!(outs.get(&(mm, addr)), entry.as_ref(), "{pattern}");
                }
                _ => {}
            });
            assert_eq!((n_out, n_fault), (1000, 2500), "{pattern}");
        }
    }

    #[test]
    fn specs_beyond_the_limits_are_refused_before_anything_is_made() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.swt");
        let ok = SynthSpec {
            pattern: SynthPattern::Multi(2),
            pages: 100,
            faults: 100,
            seed: 1,
            memory_pages: 25,
        };
        for bad in [
            SynthSpec {
                pages: u64::MAX,
                ..ok.clone()
            },
            SynthSpec {
                faults: MAX_FAULTS + 1,
                ..ok.clone()
            },
            SynthSpec {
                memory_pages: u64::MAX / 4096 + 1,
                ..ok.clone()
            },
        ] {
            let e = write(&bad, &path, &OutputPolicy::replace()).unwrap_err();
            assert!(matches!(e, SynthError::OutOfRange { .. }), "{e}");
            assert!(!path.exists());
        }
        // 100 swap-outs, 100 faults, 2 address spaces.
        assert_eq!(write(&ok, &path, &OutputPolicy::replace()).unwrap(), 202);
    }
}
