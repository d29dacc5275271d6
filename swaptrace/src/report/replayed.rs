//! Any family's replay as text or JSON, and the `--policy help` and
//! `--param help` tables of a family.

use crate::replay::{kernel_policy, Family, Replayed};
use crate::trace::Loaded;
use std::fmt::Write;

pub fn replayed_text(t: &Loaded, r: &Replayed) -> String {
    match r {
        Replayed::Readahead(r) => {
            let mut s = super::replay_text(
                &r.results,
                super::kernel_counts(t).as_ref(),
                kernel_policy(&t.header),
                &r.device,
                &r.cost,
            );
            let _ = writeln!(s, "{}", r.memory.text(t.header.page_size));
            let cache = if t.header.records_out_freed() {
                "the kernel's, where the trace recorded reclaim: folios leave it when freed, and another policy's extra pages leave as the kernel frees"
            } else {
                "the model's own (this trace does not record folio frees)"
            };
            let _ = writeln!(s, "swap cache: {cache}");
            if let Some(line) = reclaim_note(&t.header) {
                let _ = writeln!(s, "reclaim: {line}");
            }
            if let Some(n) = r.coverage.and_then(|c| c.note()) {
                let _ = writeln!(s, "warning: {n}");
            }
            s
        }
        Replayed::Free(r) => super::free_replay_text(r),
        Replayed::Zswap(r) => super::zswap_text(&r.live, &r.metrics),
        Replayed::Khugepaged(r) => super::khp_replay_text(r),
    }
}

pub fn replayed_json(t: &Loaded, r: &Replayed) -> serde_json::Value {
    match r {
        Replayed::Readahead(r) => {
            let mut v = super::replay_json(
                &r.results,
                super::kernel_counts(t).as_ref(),
                kernel_policy(&t.header),
                &r.device,
                &r.cost,
            );
            v["memory"] = serde_json::json!(r.memory);
            v["swap_cache_recorded"] = serde_json::json!(t.header.records_out_freed());
            v["reclaim_keeps_unmapped_dirty"] = serde_json::json!(t.header.keeps_unmapped_dirty());
            v["lru_gen_clears_readahead"] = serde_json::json!(t.header.lru_gen_clears_readahead);
            v["reads_recorded"] = serde_json::json!(r.coverage.map(|c| c.json()));
            v
        }
        Replayed::Free(r) => super::free_replay_json(r),
        Replayed::Zswap(r) => super::zswap_json(&r.live, &r.metrics),
        Replayed::Khugepaged(r) => super::khp_replay_json(r),
    }
}

/// What the recording kernel's reclaim does to readahead folios, where
/// the replay follows it or cannot.
fn reclaim_note(h: &crate::trace::Header) -> Option<String> {
    let mut parts = Vec::new();
    let zswap = h.zswap.get("enabled").is_none_or(|v| v.trim() == "Y");
    // Where reclaim writes such a folio again (6.12), the write clears the
    // flag, and the trace has it.
    let kept = h.keeps_unmapped_dirty() && zswap;
    if kept {
        parts.push(
            "pages read ahead from zswap stay until faulted (dirty, never mapped: \
             pageout() activates them)",
        );
    }
    if kept && h.isolation_clears_readahead() {
        let recorded = h
            .metrics
            .iter()
            .any(|m| m.metric == "reclaim-isolate" && m.backend.is_some());
        parts.push(if recorded {
            "MGLRU clears PG_readahead of the folios it isolates and keeps; the \
             replay clears it at each recorded isolation (pages the kernel held)"
        } else {
            "MGLRU clears PG_readahead of the folios it isolates and keeps; this \
             trace does not record them (reclaim-isolate needs fentry or kprobes), \
             so the replay may count readahead hits the kernel did not"
        });
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

fn table<'a>(rows: impl Iterator<Item = (&'a str, String)>) -> String {
    let rows: Vec<_> = rows.collect();
    let w = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    let mut o = String::new();
    for (n, h) in rows {
        let _ = writeln!(o, "  {n:<w$}  {h}");
    }
    o
}

/// The family's policies: name, default set, what each stands for.
pub fn policy_help(f: &dyn Family) -> String {
    let mut o = format!(
        "--family {} policies (* = in the default set, `all`):\n",
        f.name()
    );
    o += &table(f.policies().iter().map(|p| {
        (
            p.name,
            format!("{} {}", if p.default { "*" } else { " " }, p.help),
        )
    }));
    o
}

/// The family's `--param NAME=VALUE` items.
pub fn param_help(f: &dyn Family) -> String {
    let mut o = format!("--family {} parameters (--param NAME=VALUE):\n", f.name());
    if f.params().is_empty() {
        o += "  (none)\n";
    }
    o += &table(f.params().iter().map(|p| (p.name, p.help.to_string())));
    o
}

#[cfg(test)]
mod tests {
    use super::reclaim_note;
    use crate::trace::Header;

    #[test]
    fn the_reclaim_note_says_what_the_recording_kernel_does() {
        let h = |release: &str, zswap: Option<&str>, mglru: Option<bool>| {
            let mut h = Header {
                kernel_release: release.into(),
                lru_gen_clears_readahead: mglru,
                ..Header::default()
            };
            if let Some(z) = zswap {
                h.zswap.insert("enabled".into(), z.into());
            }
            reclaim_note(&h)
        };
        let both = h("6.18.15", Some("Y"), Some(true)).expect("a note");
        assert!(both.contains("pageout() activates") && both.contains("does not record"));
        assert_eq!(h("6.12.118", Some("Y"), Some(false)), None);
        // 6.12 writes those folios again: nothing to say.
        assert_eq!(h("6.12.118", Some("Y"), Some(true)), None);
        // zswap off: no page is read ahead from it.
        assert_eq!(h("6.18.15", Some("N"), None), None);
        // Isolations recorded: the replay follows them.
        let mut rec = Header {
            kernel_release: "6.18.15".into(),
            lru_gen_clears_readahead: Some(true),
            ..Header::default()
        };
        rec.metrics.push(crate::trace::MetricSource {
            metric: "reclaim-isolate".into(),
            backend: Some("fentry".into()),
            attach: vec!["fentry shrink_folio_list".into()],
            missing: None,
        });
        let note = reclaim_note(&rec).expect("a note");
        assert!(note.contains("at each recorded isolation"), "{note}");
    }
}
