//! zswap's claims: the exact probes' stores, loads and writebacks against
//! the kernel's counters, and the kernel's own policy replayed on each run.

use super::{delta, figures, load, pct_err, signed_pct, swap_out_check, within, Verdict};
use crate::guest::library::{kernel_version, replay_zswap_own, replay_zswap_text, Record};
use std::path::Path;

/// zswap stores, loads and writebacks against the zswap counters.
pub(super) fn zswap(v: &mut Verdict, out: &Path) {
    v.note("zswap (second chance and disk-swapin tracking):");
    let path = out.join("zswap/zswap.swt");
    if !path.exists() {
        return v.fail("zswap: no zswap/zswap.swt", "see zswap/steps.txt");
    }
    let Some(t) = load(v, &path) else {
        return;
    };
    swap_out_check(v, &t, "zswap");
    let (mut stored, mut rejected, mut found, mut missed, mut wb) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut wb_named = 0u64;
    for r in &t.records {
        match r {
            Record::ZswapOp {
                load: false, ok, ..
            } => {
                stored += *ok as u64;
                rejected += !*ok as u64;
            }
            Record::ZswapOp { load: true, ok, .. } => {
                found += *ok as u64;
                missed += !*ok as u64;
            }
            Record::ZswapWriteback { nr, entry, .. } => {
                wb += *nr as u64;
                wb_named += entry.map_or(0, |_| *nr as u64);
            }
            _ => {}
        }
    }
    v.note(format!(
        "    zswap_store: {stored} stored, {rejected} rejected; zswap_load: {found} found, {missed} read from disk; {wb} written back"
    ));
    // Each fault's reads by kind (zswap_load() results inside do_swap_page()).
    let (mut f_zswap, mut f_disk) = (0u64, 0u64);
    for r in &t.records {
        if let Record::SwapFault {
            pages_read,
            zswap_loads,
            ..
        } = r
        {
            f_zswap += *zswap_loads as u64;
            f_disk += *pages_read as u64;
        }
    }
    let ver = kernel_version(&t.header.kernel_release);
    for (what, got, counter) in [
        ("stores accepted", stored, "zswpout"),
        ("loads found", found, "zswpin"),
        ("loads from disk", missed, "pswpin"),
        ("writebacks", wb, "zswpwb"),
        ("fault zswap loads", f_zswap, "zswpin"),
        ("fault pages from disk", f_disk, "pswpin"),
    ] {
        // Before 6.6 frontswap asks zswap only for pages it holds, and
        // there is no ZSWPWB counter to compare with.
        if (what == "loads from disk" && ver < (6, 6))
            || !t.header.vmstat_start.contains_key(counter)
        {
            v.note(format!(
                "    ({what}: no {counter} to compare with on {}.{})",
                ver.0, ver.1
            ));
            continue;
        }
        let want = delta(&t, counter);
        v.check(
            within(got as f64, want as f64, 2.0),
            format!(
                "zswap: {what} {got} vs {counter} {want} ({:.2}% off)",
                pct_err(got as f64, want as f64)
            ),
        );
    }
    // The dynamic shrinker is 6.8+; before, only a full pool writes back.
    if ver >= (6, 8) {
        v.check(
            wb > 0,
            format!("zswap: the shrinker wrote back ({wb} pages)"),
        );
        // zswap_writeback_entry()'s swpentry, or the entry shrink_memcg_cb()
        // takes off the LRU (6.18+, inlined): the replay's folio for each.
        v.check(
            wb_named == wb,
            format!("zswap: {wb_named} of {wb} writebacks name their swap entry"),
        );
    }
    match replay_zswap_text(&t) {
        Ok(text) => figures(v, &text),
        Err(e) => v.fail("zswap replay", e),
    }
    for name in ZSWAP_TRACES {
        zswap_own(v, out, name);
    }
}

/// The zswap scenario's runs: its first (also checked against the
/// counters above), then other shapes where the shrinker exists.
pub(super) const ZSWAP_TRACES: [&str; 4] = [
    "zswap/zswap.swt",
    "zswap/zswap-random.swt",
    "zswap/zswap-strided.swt",
    "zswap/zswap-zstd.swt",
];

/// Issue 16's target: the recording kernel's own zswap policy replayed on
/// its run within 10% of the kernel on stores, zswap loads, disk swap-ins
/// and writebacks. Nothing is fitted to any run.
fn zswap_own(v: &mut Verdict, out: &Path, name: &str) {
    let path = out.join(name);
    if !path.exists() {
        if name != ZSWAP_TRACES[0] {
            v.note(format!(
                "    ({name}: not recorded, no zswap shrinker here)"
            ));
        }
        return;
    }
    let Some(t) = load(v, &path) else {
        return;
    };
    let own = match replay_zswap_own(&t) {
        Ok(Some(own)) => own,
        Ok(None) => return v.note(format!("    ({name}: zswap was off in the recording)")),
        Err(e) => return v.fail(format!("{name}: zswap replay"), e),
    };
    let live_disk = own
        .rows
        .iter()
        .find(|r| r.0 == "disk swap-ins")
        .map_or(0, |r| r.1);
    let seed: Vec<String> = own
        .disk_swapins
        .iter()
        .map(|(p, n)| format!("{p} {n}"))
        .collect();
    v.note(format!(
        "    {name}: disk swap-ins (pages), live {live_disk}; replayed: {}",
        seed.join(", ")
    ));
    let (wb_live, wb_model) = own
        .rows
        .iter()
        .find(|r| r.0 == "writebacks")
        .map_or((0, 0), |r| (r.1, r.2));
    // Before 6.8 only a full pool writes back, a few pages if any.
    if own.policy != swaptrace::replay::zswap::ZswapPolicy::NoShrinker.name() {
        v.check(
            wb_live > 0 || wb_model == 0,
            format!("{name}: the shrinker wrote back ({wb_live} pages)"),
        );
    }
    // A count of a few dozen pages carries no percentage: the bound is
    // 10% or 0.1% of the run's swap-ins, whichever is larger.
    let swapins: u64 = own
        .rows
        .iter()
        .filter(|r| r.0 == "zswap loads" || r.0 == "disk swap-ins")
        .map(|r| r.1)
        .sum();
    for (what, live, model) in own.rows {
        let bound = (live as f64 * 0.1).max(swapins as f64 * 0.001);
        v.check(
            (model as f64 - live as f64).abs() <= bound,
            format!(
                "{name}: {} replayed, {what} {model} vs live {live} ({:+.2}%; bound {bound:.0} pages: 10%, at least 0.1% of {swapins} swap-ins)",
                own.policy,
                signed_pct(model as f64, live as f64)
            ),
        );
    }
}
