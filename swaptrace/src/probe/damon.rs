//! DAMON's running schemes (`/sys/kernel/mm/damon/admin`): a `pageout`
//! scheme swaps out memory besides the kernel's reclaim (`damon_pa_pageout()`
//! → `reclaim_pages()`), and `lru_prio`/`lru_deprio` reorder the LRU lists.
//! `record` traces such swap-outs like any other; a replay takes them as
//! recorded, and does not model the scheme.

use serde::Serialize;
use std::path::Path;

/// Where the DAMON sysfs interface lives.
pub const DAMON_ADMIN: &str = "/sys/kernel/mm/damon/admin";

/// One scheme of a running kdamond.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DamonScheme {
    pub kdamond: u32,
    /// `paddr` (physical memory), `vaddr`, `fvaddr`.
    pub operations: String,
    pub action: String,
    /// Regions idle at least this long qualify: the pattern's minimum age
    /// times the aggregation interval, seconds.
    pub min_age_s: f64,
    /// And accessed at most this many times per aggregation interval.
    pub max_accesses: u64,
    /// The quota: bytes per reset interval (0: none), and that interval, ms.
    pub quota_bytes: u64,
    pub quota_reset_ms: u64,
}

impl DamonScheme {
    /// One line for `doctor`.
    pub fn text(&self) -> String {
        let quota = match (self.quota_bytes, self.quota_reset_ms) {
            (0, _) => String::new(),
            (b, ms) => format!(", at most {} MiB per {ms} ms", b >> 20),
        };
        format!(
            "kdamond {} on: {} {} of memory idle for {:.0} s or more{quota}",
            self.kdamond, self.operations, self.action, self.min_age_s
        )
    }

    /// Whether it swaps out or reorders anonymous memory.
    pub fn moves_swap(&self) -> bool {
        matches!(
            self.action.as_str(),
            "pageout" | "lru_prio" | "lru_deprio" | "cold" | "hugepage" | "nohugepage"
        )
    }
}

fn read(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

fn num(p: &Path) -> Option<u64> {
    read(p)?.parse().ok()
}

/// The schemes of the kdamonds that are on, under `admin` (None: no DAMON
/// sysfs interface).
pub fn running_schemes(admin: &Path) -> Option<Vec<DamonScheme>> {
    let kdamonds = admin.join("kdamonds");
    let n = num(&kdamonds.join("nr_kdamonds"))?;
    let mut out = Vec::new();
    for k in 0..n.min(64) {
        let kd = kdamonds.join(k.to_string());
        if read(&kd.join("state")).as_deref() != Some("on") {
            continue;
        }
        let contexts = kd.join("contexts");
        for c in 0..num(&contexts.join("nr_contexts")).unwrap_or(0).min(64) {
            let ctx = contexts.join(c.to_string());
            let operations = read(&ctx.join("operations")).unwrap_or_default();
            let aggr_us = num(&ctx.join("monitoring_attrs/intervals/aggr_us")).unwrap_or(0);
            let schemes = ctx.join("schemes");
            for s in 0..num(&schemes.join("nr_schemes")).unwrap_or(0).min(64) {
                let sc = schemes.join(s.to_string());
                let Some(action) = read(&sc.join("action")) else {
                    continue;
                };
                let age = num(&sc.join("access_pattern/age/min")).unwrap_or(0);
                out.push(DamonScheme {
                    kdamond: k as u32,
                    operations: operations.clone(),
                    action,
                    min_age_s: age as f64 * aggr_us as f64 / 1e6,
                    max_accesses: num(&sc.join("access_pattern/nr_accesses/max")).unwrap_or(0),
                    quota_bytes: num(&sc.join("quotas/bytes")).unwrap_or(0),
                    quota_reset_ms: num(&sc.join("quotas/reset_interval_ms")).unwrap_or(0),
                });
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(root: &Path, rel: &str, v: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, format!("{v}\n")).expect("write");
    }

    #[test]
    fn a_running_pageout_scheme_is_read_and_an_idle_kdamond_skipped() {
        let dir = std::env::temp_dir().join(format!("swaptrace-damon-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(running_schemes(&dir), None, "no interface");
        put(&dir, "kdamonds/nr_kdamonds", "2");
        let c = "kdamonds/0/contexts/0";
        put(&dir, "kdamonds/0/state", "on");
        put(&dir, "kdamonds/0/contexts/nr_contexts", "1");
        put(&dir, &format!("{c}/operations"), "paddr");
        put(
            &dir,
            &format!("{c}/monitoring_attrs/intervals/aggr_us"),
            "5000000",
        );
        put(&dir, &format!("{c}/schemes/nr_schemes"), "1");
        let s = format!("{c}/schemes/0");
        put(&dir, &format!("{s}/action"), "pageout");
        put(&dir, &format!("{s}/access_pattern/age/min"), "12");
        put(&dir, &format!("{s}/access_pattern/nr_accesses/max"), "1");
        put(&dir, &format!("{s}/quotas/bytes"), "134217728");
        put(&dir, &format!("{s}/quotas/reset_interval_ms"), "1000");
        // A second kdamond, off, with a scheme of its own.
        put(&dir, "kdamonds/1/state", "off");
        put(&dir, "kdamonds/1/contexts/nr_contexts", "1");
        put(&dir, "kdamonds/1/contexts/0/schemes/nr_schemes", "1");
        put(&dir, "kdamonds/1/contexts/0/schemes/0/action", "lru_prio");
        let got = running_schemes(&dir).expect("interface");
        std::fs::remove_dir_all(&dir).expect("clean up");
        assert_eq!(got.len(), 1, "{got:?}");
        let s = &got[0];
        assert_eq!((s.kdamond, s.action.as_str()), (0, "pageout"));
        assert_eq!(s.min_age_s, 60.0);
        assert_eq!((s.max_accesses, s.quota_bytes >> 20), (1, 128));
        assert!(s.moves_swap());
        assert_eq!(
            s.text(),
            "kdamond 0 on: paddr pageout of memory idle for 60 s or more, at most 128 MiB per 1000 ms"
        );
    }
}
