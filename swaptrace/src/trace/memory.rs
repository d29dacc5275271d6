//! The memory a replay assumes the traced workload had: its cgroup's limit
//! less what the cgroup held besides anonymous memory (file pages, kernel
//! memory), as the recording sampled it; else the limit; else all memory.

use super::{Footer, Header};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The traced memory cgroup at one instant, KiB: all it is charged
/// (`memory.usage_in_bytes`, v2 `memory.current`) and its anonymous LRU
/// pages, swap cache included (`inactive_anon` + `active_anon`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemcgSample {
    pub ts: u64,
    pub usage_kib: u64,
    pub anon_kib: u64,
}

impl MemcgSample {
    /// Now, for the cgroup directory `dir` (v1 or v2); None if unreadable.
    pub fn now(ts: u64, dir: &Path) -> Option<MemcgSample> {
        let usage = ["memory.usage_in_bytes", "memory.current"]
            .iter()
            .find_map(|f| std::fs::read_to_string(dir.join(f)).ok())?;
        let usage: u64 = usage.trim().parse().ok()?;
        let stat = std::fs::read_to_string(dir.join("memory.stat")).ok()?;
        let field = |name: &str| {
            stat.lines().find_map(|l| {
                let (k, v) = l.split_once(' ')?;
                (k == name).then(|| v.trim().parse::<u64>().ok())?
            })
        };
        let anon = field("inactive_anon")? + field("active_anon")?;
        Some(MemcgSample {
            ts,
            usage_kib: usage / 1024,
            anon_kib: anon / 1024,
        })
    }

    /// What the cgroup held besides anonymous memory, KiB.
    pub fn other_kib(&self) -> u64 {
        self.usage_kib.saturating_sub(self.anon_kib)
    }
}

/// Where the replay's memory comes from.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "source")]
pub enum MemorySource {
    /// `--memory-pages`.
    Given,
    /// The cgroup's limit less the median of what it held besides
    /// anonymous memory over `samples` samples.
    LimitLessOther {
        limit_pages: usize,
        other_pages: usize,
        samples: usize,
    },
    /// The cgroup's limit (no samples in the trace).
    Limit,
    /// All of the host's memory (no cgroup limit).
    Host,
}

/// The memory a replay assumes, in pages.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ReplayMemory {
    pub pages: usize,
    #[serde(flatten)]
    pub source: MemorySource,
}

impl ReplayMemory {
    /// `given`, else what the recording tells ([`MemorySource`]).
    pub fn of(h: &Header, footer: Option<&Footer>, given: Option<usize>) -> ReplayMemory {
        if let Some(pages) = given {
            return ReplayMemory {
                pages,
                source: MemorySource::Given,
            };
        }
        let page = h.page_size.max(1);
        let Some(limit) = h.memory_limit_bytes else {
            return ReplayMemory {
                pages: h.memory_pages(),
                source: MemorySource::Host,
            };
        };
        let limit_pages = (limit / page).max(1);
        let mut other: Vec<u64> = footer
            .map(|f| f.memcg.iter().map(MemcgSample::other_kib).collect())
            .unwrap_or_default();
        if other.is_empty() {
            return ReplayMemory {
                pages: h.memory_pages(),
                source: MemorySource::Limit,
            };
        }
        other.sort_unstable();
        let other_pages = other[other.len() / 2].saturating_mul(1024) / page;
        // At least a tenth of the limit: a sample taken as the cgroup was
        // emptied must not leave the model without memory.
        let pages = limit_pages
            .saturating_sub(other_pages)
            .max(limit_pages / 10)
            .max(1);
        ReplayMemory {
            pages: pages as usize,
            source: MemorySource::LimitLessOther {
                limit_pages: limit_pages as usize,
                other_pages: other_pages as usize,
                samples: other.len(),
            },
        }
    }

    /// One line for the replay's text output.
    pub fn text(&self, page_size: u64) -> String {
        let mib = |p: usize| p as f64 * page_size as f64 / 1048576.0;
        let what = match self.source {
            MemorySource::Given => "--memory-pages".to_string(),
            MemorySource::LimitLessOther {
                limit_pages,
                other_pages,
                samples,
            } => format!(
                "the cgroup's limit {:.0} MiB less {:.1} MiB it held besides anonymous memory (median of {samples} samples)",
                mib(limit_pages),
                mib(other_pages)
            ),
            MemorySource::Limit => "the cgroup's limit".to_string(),
            MemorySource::Host => "all of the host's memory".to_string(),
        };
        format!(
            "memory: {} pages ({:.1} MiB), from {what}; --memory-pages sets it",
            self.pages,
            mib(self.pages)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(limit: Option<u64>) -> Header {
        Header {
            page_size: 4096,
            mem_total_kib: 1 << 20,
            memory_limit_bytes: limit,
            ..Header::default()
        }
    }

    fn footer(others_kib: &[u64]) -> Footer {
        Footer {
            memcg: others_kib
                .iter()
                .map(|&o| MemcgSample {
                    ts: 0,
                    usage_kib: o + 1000,
                    anon_kib: 1000,
                })
                .collect(),
            ..Footer::default()
        }
    }

    #[test]
    fn memory_is_the_limit_less_the_median_of_the_rest() {
        let h = header(Some(128 << 20));
        // Medians 16 MiB of 8, 16, 40.
        let m = ReplayMemory::of(&h, Some(&footer(&[8192, 40960, 16384])), None);
        assert_eq!(m.pages, 32768 - 4096);
        assert_eq!(
            m.source,
            MemorySource::LimitLessOther {
                limit_pages: 32768,
                other_pages: 4096,
                samples: 3
            }
        );
        assert!(m.text(4096).contains("less 16.0 MiB"), "{}", m.text(4096));
        // No samples: the limit; no limit: the host; given: as given.
        assert_eq!(ReplayMemory::of(&h, None, None).pages, 32768);
        assert_eq!(ReplayMemory::of(&h, None, None).source, MemorySource::Limit);
        let host = ReplayMemory::of(&header(None), Some(&footer(&[8192])), None);
        assert_eq!((host.pages, host.source), (262144, MemorySource::Host));
        assert_eq!(ReplayMemory::of(&h, None, Some(7)).pages, 7);
        // More "other" than the limit: a tenth of the limit stays.
        let m = ReplayMemory::of(&h, Some(&footer(&[1 << 20])), None);
        assert_eq!(m.pages, 3276);
    }

    #[test]
    fn a_cgroup_sample_reads_usage_and_the_anon_lru() {
        let dir = std::env::temp_dir().join(format!("swaptrace-memcg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("memory.usage_in_bytes"), "134217728\n").unwrap();
        std::fs::write(
            dir.join("memory.stat"),
            "cache 1\nrss 2\ninactive_anon 100663296\nactive_anon 8388608\ninactive_file 4096\n",
        )
        .unwrap();
        let s = MemcgSample::now(5, &dir).unwrap();
        assert_eq!(
            (s.usage_kib, s.anon_kib, s.other_kib()),
            (131072, 106496, 24576)
        );
        std::fs::write(dir.join("memory.stat"), "cache 1\n").unwrap();
        assert_eq!(MemcgSample::now(5, &dir), None, "no anon fields");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
