//! Recorded counts against the kernel's own /proc/vmstat deltas.

use crate::trace::{Header, Summary};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

#[derive(Clone, Debug, Serialize)]
pub struct CheckRow {
    pub what: &'static str,
    pub recorded: u64,
    /// The vmstat counter, or counters summed with `+`.
    pub counter: String,
    pub kernel: i64,
    /// |recorded - kernel| / kernel in %, None when the kernel saw nothing
    /// or the row is not compared.
    pub error_pct: Option<f64>,
    /// Why the row cannot be compared on this kernel or backend.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_compared: Option<String>,
}

impl CheckRow {
    /// Within `pct` percent, both zero, or not comparable (with its reason).
    pub fn agrees(&self, pct: f64) -> bool {
        if self.not_compared.is_some() {
            return true;
        }
        match self.error_pct {
            Some(e) => e <= pct,
            None => self.recorded == 0,
        }
    }
}

/// What a recording could see, beyond its records.
#[derive(Clone, Copy, Debug, Default)]
pub struct Seen {
    /// `memcg:count_memcg_events` was attached: swap-outs and reads carry
    /// their kind (I/O, zero page, zswap). Absent before 6.13, where the
    /// exact backends count reads of every kind together.
    pub kinds: bool,
    /// Swap-outs carry their kind: from `count_memcg_events`, or from an
    /// exact `zswap_store()` probe (stored, refused, or not called).
    pub out_kinds: bool,
    /// Swap faults by the exact probes (`do_swap_page`): their reads are
    /// `swap_read_folio()` calls, split by kind only where the kernel
    /// counts PSWPIN inside the fault, so reads are compared all kinds together.
    pub exact_reads: bool,
}

impl Seen {
    /// From the attach points a trace header lists for its metrics.
    pub fn from_header(h: &Header) -> Seen {
        Seen::from_attach(
            h.metrics
                .iter()
                .filter(|m| m.backend.is_some())
                .flat_map(|m| m.attach.iter().map(String::as_str)),
        )
    }

    /// From attach-point names (a header's, or a live recording's).
    pub fn from_attach<'a>(attach: impl IntoIterator<Item = &'a str>) -> Seen {
        let mut seen = Seen::default();
        for a in attach {
            seen.kinds |= a.contains("count_memcg_events");
            seen.out_kinds |= ["count_memcg_events", "zswap_store", "zswap_frontswap_store"]
                .iter()
                .any(|p| a.contains(p));
            seen.exact_reads |= a.contains("do_swap_page");
        }
        seen
    }
}

const NO_KINDS: &str =
    "kind not recorded: neither memcg:count_memcg_events (6.13+) nor an exact zswap_store probe";

/// The summed counters of `names` that this kernel has; None when it has
/// none of them.
fn sum(delta: &BTreeMap<String, i64>, names: &[&str]) -> Option<(String, i64)> {
    let have: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| delta.contains_key(*n))
        .collect();
    if have.is_empty() {
        return None;
    }
    Some((have.join("+"), have.iter().map(|n| delta[*n]).sum()))
}

fn row(
    what: &'static str,
    recorded: u64,
    delta: &BTreeMap<String, i64>,
    counters: &[&str],
) -> CheckRow {
    match sum(delta, counters) {
        Some((counter, kernel)) => CheckRow {
            what,
            recorded,
            counter,
            kernel,
            error_pct: (kernel > 0)
                .then(|| (recorded as f64 - kernel as f64).abs() * 100.0 / kernel as f64),
            not_compared: None,
        },
        None => skipped(
            what,
            recorded,
            counters,
            format!("this kernel has no {} counter", counters.join("/")),
        ),
    }
}

fn skipped(what: &'static str, recorded: u64, counters: &[&str], why: String) -> CheckRow {
    CheckRow {
        what,
        recorded,
        counter: counters.join("+"),
        kernel: 0,
        error_pct: None,
        not_compared: Some(why),
    }
}

/// One row per recorded figure that a vmstat counter also counts. PSWPOUT
/// counts zswap writebacks too (`zswap_writeback_entry()` writes through
/// `__swap_writepage()`), so they join the I/O swap-outs.
pub fn vmstat_check(s: &Summary, delta: &BTreeMap<String, i64>, seen: Seen) -> Vec<CheckRow> {
    let mut rows = vec![row(
        "major swap faults",
        s.faults_major,
        delta,
        &["pgmajfault"],
    )];
    if seen.kinds && !seen.exact_reads {
        rows.extend([
            row("pages read (I/O)", s.pswpin(), delta, &["pswpin"]),
            row("zero pages read", s.swpin_zero(), delta, &["swpin_zero"]),
            row(
                "zswap loads",
                s.fault_zswap_loads + s.other_reads_zswap,
                delta,
                &["zswpin"],
            ),
        ]);
    } else {
        rows.extend([
            row(
                "pages read (any kind)",
                s.pages_read(),
                delta,
                &["pswpin", "swpin_zero", "zswpin"],
            ),
            row(
                "zswap loads (zswap_load)",
                s.zswap_loads - s.zswap_loads_missed.min(s.zswap_loads),
                delta,
                &["zswpin"],
            ),
            skipped(
                "zero pages read",
                s.swpin_zero(),
                &["swpin_zero"],
                if delta.contains_key("swpin_zero") {
                    "the exact probes count zero-page reads with the others".into()
                } else {
                    "this kernel has no swpin_zero counter".into()
                },
            ),
        ]);
    }
    // pageout() adds a folio's pages to NR_VMSCAN_WRITE (node_stat_add_folio).
    rows.push(row(
        "swap-outs (pages)",
        s.swap_out_pages,
        delta,
        &["nr_vmscan_write"],
    ));
    if seen.out_kinds {
        rows.extend([
            row(
                "swap-out pages, I/O + zswap writeback",
                s.swap_out_io + s.zswap_writebacks,
                delta,
                &["pswpout"],
            ),
            row(
                "swap-out pages, zero",
                s.swap_out_zero,
                delta,
                &["swpout_zero"],
            ),
            row(
                "swap-out pages, zswap",
                s.swap_out_zswap,
                delta,
                &["zswpout"],
            ),
        ]);
    } else {
        rows.extend([
            row(
                "swap-out pages + zswap writeback",
                s.swap_out_pages + s.zswap_writebacks,
                delta,
                &["pswpout", "swpout_zero", "zswpout"],
            ),
            skipped(
                "swap-out pages, I/O",
                s.swap_out_io,
                &["pswpout"],
                NO_KINDS.into(),
            ),
            row(
                "zswap stores (zswap_store)",
                s.zswap_stores - s.zswap_stores_rejected.min(s.zswap_stores),
                delta,
                &["zswpout"],
            ),
        ]);
    }
    rows.push(row(
        "zswap writebacks",
        s.zswap_writebacks,
        delta,
        &["zswpwb"],
    ));
    rows
}

pub fn check_text(rows: &[CheckRow]) -> String {
    let w = rows.iter().map(|r| r.what.len()).max().unwrap_or(0).max(8);
    let c = rows
        .iter()
        .map(|r| r.counter.len())
        .max()
        .unwrap_or(0)
        .max(6);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<w$} {:>10}   {:<c$} {:>10} {:>8}",
        "RECORDED", "COUNT", "VMSTAT", "DELTA", "ERROR"
    );
    for r in rows {
        if let Some(why) = &r.not_compared {
            let _ = writeln!(
                o,
                "{:<w$} {:>10}   {:<c$} {:>10} {:>8}  ({why})",
                r.what, r.recorded, r.counter, "-", "-"
            );
            continue;
        }
        let err = r
            .error_pct
            .map(|e| format!("{e:.2}%"))
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(
            o,
            "{:<w$} {:>10}   {:<c$} {:>10} {:>8}",
            r.what, r.recorded, r.counter, r.kernel, err
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    const NO_KINDS_EXACT: Seen = Seen {
        kinds: false,
        out_kinds: false,
        exact_reads: true,
    };

    #[test]
    fn an_exact_zswap_store_probe_gives_swap_out_kinds_not_read_kinds() {
        let s = Seen::from_attach(["fexit zswap_store/zswap_load", "fentry/fexit do_swap_page"]);
        assert!(s.out_kinds && !s.kinds && s.exact_reads);
        let s = Seen::from_attach(["memcg:count_memcg_events(ZSWPWB)"]);
        assert!(s.out_kinds && s.kinds && !s.exact_reads);
        let s = Seen::from_attach(["fexit zswap_frontswap_store/load (<= 6.5)"]);
        assert!(s.out_kinds && !s.kinds);
        let s = Seen::from_attach(["vmscan:mm_vmscan_write_folio"]);
        assert!(!s.out_kinds && !s.kinds);
    }

    fn delta(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn kinds_split_rows_and_writebacks_join_pswpout() {
        let s = Summary {
            swap_out_io: 90,
            zswap_writebacks: 10,
            fault_pages_read: 50,
            ..Default::default()
        };
        let d = delta(&[("pswpout", 100), ("pswpin", 50), ("zswpwb", 10)]);
        let rows = vmstat_check(
            &s,
            &d,
            Seen {
                kinds: true,
                out_kinds: true,
                exact_reads: false,
            },
        );
        let io = rows.iter().find(|r| r.counter == "pswpout").unwrap();
        assert_eq!(io.recorded, 100);
        assert!(rows.iter().all(|r| r.agrees(1.0)), "{}", check_text(&rows));
        // A counter this kernel lacks is named, not compared.
        let zero = rows.iter().find(|r| r.what == "zero pages read").unwrap();
        assert!(zero.not_compared.as_deref().unwrap().contains("swpin_zero"));
    }

    #[test]
    fn without_kinds_reads_of_every_kind_are_summed() {
        let s = Summary {
            fault_pages_read: 186_269,
            zswap_loads: 47_700,
            zswap_loads_missed: 13,
            swap_out_pages: 98_550,
            zswap_stores: 49_438,
            ..Default::default()
        };
        let d = delta(&[
            ("pswpin", 138_583),
            ("zswpin", 47_687),
            ("pswpout", 49_112),
            ("zswpout", 49_438),
        ]);
        let rows = vmstat_check(&s, &d, NO_KINDS_EXACT);
        let any = rows
            .iter()
            .find(|r| r.what == "pages read (any kind)")
            .unwrap();
        assert_eq!(any.counter, "pswpin+zswpin");
        assert_eq!(any.kernel, 186_270);
        assert!(any.agrees(1.0));
        assert!(rows.iter().all(|r| r.agrees(1.0)), "{}", check_text(&rows));
        // Off by more than 1% fails.
        let s2 = Summary {
            fault_pages_read: 150_000,
            ..s
        };
        let rows = vmstat_check(&s2, &d, NO_KINDS_EXACT);
        assert!(!rows.iter().all(|r| r.agrees(1.0)));
    }

    #[test]
    fn seen_reads_the_header_attach_points() {
        let mut h = Header::default();
        assert!(!Seen::from_header(&h).kinds);
        h.metrics.push(crate::trace::MetricSource {
            metric: "zswap-writeback".into(),
            backend: Some("tracepoint".into()),
            attach: vec!["memcg:count_memcg_events(ZSWPWB)".into()],
            missing: None,
        });
        assert!(Seen::from_header(&h).kinds);
        assert!(!Seen::from_header(&h).exact_reads);
        h.metrics.push(crate::trace::MetricSource {
            metric: "swap-fault".into(),
            backend: Some("fentry".into()),
            attach: vec!["fentry/fexit do_swap_page + fentry swap_read_folio".into()],
            missing: None,
        });
        assert!(Seen::from_header(&h).exact_reads);
    }

    #[test]
    fn exact_reads_with_kinds_in_part_compare_every_kind_together() {
        // 7.x: some faults had their reads split by kind, others not.
        let s = Summary {
            fault_pages_read: 900,
            fault_zero_reads: 50,
            fault_zswap_loads: 40,
            other_reads_unknown: 10,
            zswap_loads: 40,
            swap_out_io: 100,
            ..Default::default()
        };
        let d = delta(&[
            ("pswpin", 910),
            ("swpin_zero", 50),
            ("zswpin", 40),
            ("pswpout", 100),
        ]);
        let seen = Seen {
            kinds: true,
            out_kinds: true,
            exact_reads: true,
        };
        let rows = vmstat_check(&s, &d, seen);
        let any = rows
            .iter()
            .find(|r| r.what == "pages read (any kind)")
            .unwrap();
        assert_eq!((any.recorded, any.kernel), (1000, 1000));
        assert!(rows.iter().all(|r| r.agrees(1.0)), "{}", check_text(&rows));
        assert!(rows.iter().any(|r| r.what == "swap-out pages, zero"));
    }

    #[test]
    fn a_large_folio_swap_out_counts_its_pages() {
        // One 16-page folio and one page: pageout() adds 17 to nr_vmscan_write.
        let s = Summary {
            swap_outs: 2,
            swap_out_pages: 17,
            swap_out_zswap: 17,
            ..Default::default()
        };
        let d = delta(&[("nr_vmscan_write", 17), ("zswpout", 17)]);
        let rows = vmstat_check(&s, &d, NO_KINDS_EXACT);
        let w = rows
            .iter()
            .find(|r| r.counter == "nr_vmscan_write")
            .unwrap();
        assert_eq!((w.what, w.recorded), ("swap-outs (pages)", 17));
        assert!(w.agrees(1.0), "{}", check_text(&rows));
    }
}
