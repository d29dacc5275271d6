//! The eBPF object's `K_*` globals for this kernel: member offsets and enum
//! values from its BTF, data addresses from kallsyms, and the recording's
//! filters.

use super::ProbeConfig;
use crate::probe::btf::Btf;
use crate::probe::kernel::{KernelFacts, Twins};
use crate::probe::table_zswap::SCAN_PMD_ARGS;

/// Offset in `mm_struct` of MM_SWAPENTS's count: `rss_stat[]` is an array of
/// `percpu_counter` since 6.2 (its `count` is the global part), of
/// `atomic_long_t` in `struct mm_rss_stat` before.
fn mm_swapents_count(btf: &Btf) -> Result<u64, String> {
    let item = btf
        .enum_value(None, "MM_SWAPENTS")
        .map_err(|e| e.to_string())? as u64;
    let base = btf
        .member_offset("mm_struct", "rss_stat")
        .map_err(|e| e.to_string())? as u64;
    match (
        btf.type_size("percpu_counter"),
        btf.member_offset("percpu_counter", "count"),
    ) {
        (Ok(size), Ok(count)) if btf.member_offset("mm_struct", "rss_stat.count").is_err() => {
            Ok(base + item * size as u64 + count as u64)
        }
        _ => btf
            .member_offset("mm_struct", "rss_stat.count")
            .map(|o| o as u64 + item * 8)
            .map_err(|e| e.to_string()),
    }
}

/// Offsets and constants for the `K_*` globals; unresolved ones are reported.
/// Global name and value, and globals that could not be resolved with why.
type Globals = (Vec<(&'static str, u64)>, Vec<(String, String)>);

pub(super) fn globals(facts: &KernelFacts, btf: &Btf, cfg: &ProbeConfig) -> Globals {
    use swaptrace_common::konst::*;
    let mut out = Vec::new();
    let mut bad = Vec::new();
    let plan = crate::probe::plan(facts);
    let chosen = || plan.iter().filter_map(|m| m.chosen.as_ref());
    // Globals the chosen rows silence: counts an exact probe has taken over.
    let silenced: Vec<&str> = chosen().flat_map(|c| c.silences.iter().copied()).collect();
    // With the exact swap-read probe, reads outside faults come from it
    // (kind unknown), not from count_memcg_events, which some kernels fire
    // after the fault (7.x: at I/O completion).
    let exact_reads = chosen().any(|c| {
        c.progs
            .iter()
            .any(|p| p.name == "read_fentry" || p.name == "read_kprobe")
    });
    let mut put = |name: &'static str, v: Result<u64, String>| {
        let v = if silenced.contains(&name) {
            Ok(u64::MAX)
        } else {
            v
        };
        match v {
            Ok(v) => out.push((name, v)),
            Err(e) => bad.push((name.to_string(), e)),
        }
    };
    let off = |s: &str, m: &str| {
        btf.member_offset(s, m)
            .map(u64::from)
            .map_err(|e| e.to_string())
    };
    // An enumerator of enum `of`.
    let enum_value = |of: &str, e: &str| {
        btf.enum_value(Some(of), e)
            .map(|v| v as u64)
            .map_err(|e| e.to_string())
    };
    let ev = |e: &str| enum_value("vm_event_item", e);
    put(K_READS_OUTSIDE, Ok(u64::from(exact_reads)));
    let exact_stores = chosen().any(|c| c.progs.iter().any(|p| p.name.starts_with("zswap_store")));
    put(K_STORES_EXACT, Ok(u64::from(exact_stores)));
    put(K_TASK_MM, off("task_struct", "mm"));
    put(K_FOLIO_FLAGS, off("folio", "flags"));
    put(K_FOLIO_FLAGS1, off("folio", "_flags_1"));
    put(K_FOLIO_MAPPING, off("folio", "mapping"));
    put(K_FOLIO_INDEX, off("folio", "index"));
    put(K_FOLIO_LRU, off("folio", "lru"));
    let isolated = facts.keeps_unmapped_dirty() == Some(true)
        && facts.lru_gen_clears_readahead() == Some(true)
        && crate::trace::isolation_clears_readahead_in(&facts.release);
    put(K_ISOLATED_ON, Ok(u64::from(isolated)));
    // folio->swap since 6.6; the swap entry was in folio->private before.
    put(
        K_FOLIO_SWAP,
        off("folio", "swap").or_else(|_| off("folio", "private")),
    );
    put(K_PG_HEAD, enum_value("pageflags", "PG_head"));
    for (k, name) in [
        (K_PG_SWAPCACHE, "PG_swapcache"),
        (K_PG_SWAPBACKED, "PG_swapbacked"),
        (K_PG_DIRTY, "PG_dirty"),
    ] {
        put(k, enum_value("pageflags", name));
    }
    // The folios of a completed write request (block_rq_complete).
    put(K_RQ_CMD_FLAGS, off("request", "cmd_flags"));
    put(K_RQ_BIO, off("request", "bio"));
    put(K_BIO_NEXT, off("bio", "bi_next"));
    put(K_BIO_IO_VEC, off("bio", "bi_io_vec"));
    put(K_BVEC_PAGE, off("bio_vec", "bv_page"));
    put(K_BVEC_LEN, off("bio_vec", "bv_len"));
    put(K_REQ_OP_WRITE, enum_value("req_op", "REQ_OP_WRITE"));
    put(K_ANON_VMA_ROOT, off("anon_vma", "rb_root.rb_root.rb_node"));
    put(K_AVC_RB, off("anon_vma_chain", "rb"));
    put(K_AVC_VMA, off("anon_vma_chain", "vma"));
    put(K_AVC_LAST, off("anon_vma_chain", "rb_subtree_last"));
    put(K_VMA_MM, off("vm_area_struct", "vm_mm"));
    put(K_VMA_START, off("vm_area_struct", "vm_start"));
    put(K_VMA_PGOFF, off("vm_area_struct", "vm_pgoff"));
    put(K_VMA_END, off("vm_area_struct", "vm_end"));
    put(K_VMUA_LENGTH, off("vm_unmapped_area_info", "length"));
    put(K_MAS_TREE, off("ma_state", "tree"));
    put(K_MAS_INDEX, off("ma_state", "index"));
    put(K_MAS_LAST, off("ma_state", "last"));
    put(K_MM_MT, off("mm_struct", "mm_mt"));
    // mremap() moves and zaps' ranges, from the syscall's saved registers
    // (x86_64 only: other ABIs name them otherwise; there none is recorded).
    if cfg!(target_arch = "x86_64") {
        put(K_REGS_NR, off("pt_regs", "orig_ax"));
        put(K_REGS_ARG0, off("pt_regs", "di"));
        put(K_REGS_ARG1, off("pt_regs", "si"));
        put(K_NR_MREMAP, Ok(libc::SYS_mremap as u64));
        // The range of a zap: munmap(), mmap(MAP_FIXED), madvise().
        put(K_REGS_ARG2, off("pt_regs", "dx"));
        put(K_REGS_ARG3, off("pt_regs", "r10"));
        put(K_NR_MUNMAP, Ok(libc::SYS_munmap as u64));
        put(K_NR_MMAP, Ok(libc::SYS_mmap as u64));
        put(K_NR_MADVISE, Ok(libc::SYS_madvise as u64));
        put(K_NR_MLOCK, Ok(libc::SYS_mlock as u64));
        put(K_NR_MLOCK2, Ok(libc::SYS_mlock2 as u64));
        put(K_NR_MLOCKALL, Ok(libc::SYS_mlockall as u64));
        put(K_NR_READ, Ok(libc::SYS_read as u64));
        put(K_NR_PREAD64, Ok(libc::SYS_pread64 as u64));
        put(K_NR_WRITE, Ok(libc::SYS_write as u64));
        put(K_NR_PWRITE64, Ok(libc::SYS_pwrite64 as u64));
    }
    put(K_EV_PSWPIN, ev("PSWPIN"));
    put(K_EV_PSWPOUT, ev("PSWPOUT"));
    put(K_EV_PGMAJFAULT, ev("PGMAJFAULT"));
    put(K_EV_PGFAULT, ev("PGFAULT"));
    put(K_EV_SWPIN_ZERO, ev("SWPIN_ZERO"));
    put(K_EV_SWPOUT_ZERO, ev("SWPOUT_ZERO"));
    put(K_EV_ZSWPIN, ev("ZSWPIN"));
    put(K_EV_ZSWPOUT, ev("ZSWPOUT"));
    put(K_EV_ZSWPWB, ev("ZSWPWB"));
    // The items count_memcg_events reads, as set above (silenced ones not).
    let mut mask = [0u64; 2];
    for (global, item) in [
        (K_EV_PSWPIN, "PSWPIN"),
        (K_EV_PSWPOUT, "PSWPOUT"),
        (K_EV_PGMAJFAULT, "PGMAJFAULT"),
        (K_EV_SWPIN_ZERO, "SWPIN_ZERO"),
        (K_EV_SWPOUT_ZERO, "SWPOUT_ZERO"),
        (K_EV_ZSWPIN, "ZSWPIN"),
        (K_EV_ZSWPOUT, "ZSWPOUT"),
        (K_EV_ZSWPWB, "ZSWPWB"),
    ] {
        let Some(v) = ev(item).ok().filter(|_| !silenced.contains(&global)) else {
            continue;
        };
        match mask.get_mut((v / 64) as usize) {
            Some(w) => *w |= 1 << (v % 64),
            None => put(
                global,
                Err(format!("vm event {item} is {v}, beyond the mask")),
            ),
        }
    }
    put(K_EV_MASK0, Ok(mask[0]));
    put(K_EV_MASK1, Ok(mask[1]));
    put(
        K_MM_SWAPENTS,
        btf.enum_value(None, "MM_SWAPENTS")
            .map(|v| v as u64)
            .map_err(|e| e.to_string()),
    );
    put(K_TASK_FLAGS, off("task_struct", "flags"));
    let owner = off("mm_struct", "owner");
    let tgid = off("task_struct", "tgid");
    put(K_TGID_FILTER, Ok(u64::from(owner.is_ok() && tgid.is_ok())));
    put(K_MM_OWNER, owner);
    put(K_TASK_TGID, tgid);
    put(K_MM_SWAPENTS_COUNT, mm_swapents_count(btf));
    // The scan's raw tracepoint: its arguments' places.
    let places = [
        K_SCANA_FOLIO,
        K_SCANA_REFERENCED,
        K_SCANA_NONE,
        K_SCANA_STATUS,
        K_SCANA_UNMAPPED,
    ];
    for (global, names) in places.into_iter().zip(SCAN_PMD_ARGS) {
        let place = names
            .split('|')
            .find_map(|n| btf.tracepoint_arg("mm_khugepaged_scan_pmd", n).ok())
            .map(|i| i as u64)
            .ok_or_else(|| format!("mm_khugepaged_scan_pmd: no argument {names}"));
        put(global, place);
    }
    // khugepaged's classic tracepoints: fields where this kernel has them.
    for (tp, fields) in [
        (
            "mm_khugepaged_scan_pmd",
            &[
                (K_SCAN_MM, "mm"),
                (K_SCAN_REFERENCED, "referenced"),
                (K_SCAN_NONE, "none_or_zero"),
                (K_SCAN_STATUS, "status"),
                (K_SCAN_UNMAPPED, "unmapped"),
            ][..],
        ),
        (
            "mm_collapse_huge_page",
            &[
                (K_COLL_MM, "mm"),
                (K_COLL_ISOLATED, "isolated"),
                (K_COLL_STATUS, "status"),
            ][..],
        ),
    ] {
        let format = crate::probe::tpformat::read_format("huge_memory", tp);
        for &(global, field) in fields {
            put(
                global,
                format.clone().and_then(|f| {
                    crate::probe::tpformat::field_offset(&f, field)
                        .ok_or_else(|| format!("{tp}: no field `{field}`"))
                }),
            );
        }
    }
    put(K_TASK_CGROUPS, off("task_struct", "cgroups"));
    let memcg_id = btf
        .enum_value(None, "memory_cgrp_id")
        .map_err(|e| e.to_string());
    put(
        K_CSS_SET_MEMCG,
        off("css_set", "subsys").and_then(|o| memcg_id.map(|id| o + 8 * id as u64)),
    );
    put(K_CSS_CGROUP, off("cgroup_subsys_state", "cgroup"));
    put(K_CSS_PARENT, off("cgroup_subsys_state", "parent"));
    put(K_CGROUP_KN, off("cgroup", "kn"));
    put(K_KN_ID, off("kernfs_node", "id"));
    let sym = |name: &str| {
        facts
            .data_symbol(name)
            .filter(|&a| a != 0)
            .ok_or_else(|| format!("data symbol {name} not in kallsyms"))
    };
    put(K_LAST_RA_ADDR, sym("last_readahead_pages"));
    put(K_RA_HITS_ADDR, sym("swapin_readahead_hits"));
    // zswap_load returns bool until ~6.15 (int 0 after), zswap_store bool
    // still (7.3), frontswap both int 0: bit 0 for loads, bit 1 for stores.
    let int_ret = |fns: [&str; 2]| {
        fns.iter()
            .find_map(|f| btf.func_return(f).ok())
            .is_some_and(|t| t != "bool" && t != "_Bool")
    };
    let load_int = int_ret(["zswap_load", "zswap_frontswap_load"]);
    let store_int = int_ret(["zswap_store", "zswap_frontswap_store"]);
    put(
        K_ZSWAP_RET_INT,
        Ok(load_int as u64 | (store_int as u64) << 1),
    );
    put(
        K_ZSWAP_LOAD_ALL,
        Ok(btf.func_return("zswap_load").is_ok() as u64),
    );
    put(K_VMF_ADDRESS, off("vm_fault", "address"));
    put(K_VMF_ORIG_PTE, off("vm_fault", "orig_pte"));
    put(K_VMF_VMA, off("vm_fault", "vma"));
    put(K_VMF_FLAGS, off("vm_fault", "flags"));
    put(K_PG_READAHEAD, enum_value("pageflags", "PG_readahead"));
    put(
        K_LRU_REMOVED_RETRY,
        enum_value("lru_status", "LRU_REMOVED_RETRY"),
    );
    put(K_ZE_LRU, off("zswap_entry", "lru"));
    put(K_ZE_SWPENTRY, off("zswap_entry", "swpentry"));
    // zswap_writeback_entry(entry, swpentry) since 6.8; (pool, handle) before.
    put(
        K_WB_SWPENTRY_ARG,
        Ok(btf
            .func_params("zswap_writeback_entry")
            .is_ok_and(|p| p.get(1).is_some_and(|(name, _)| name == "swpentry")) as u64),
    );
    put(K_SI_TYPE, off("swap_info_struct", "type"));
    put(K_SI_CLUSTER_INFO, off("swap_info_struct", "cluster_info"));
    put(
        K_CI_SIZE,
        btf.type_size("swap_cluster_info")
            .map(u64::from)
            .map_err(|e| e.to_string()),
    );
    put(K_FILTER_TGID, Ok(cfg.filter_pid.unwrap_or(0) as u64));
    put(K_FILTER_CGROUP, Ok(cfg.filter_cgroup.unwrap_or(0)));
    put(
        K_PAGE_SHIFT,
        Ok(crate::probe::page_size().trailing_zeros() as u64),
    );
    put(K_TWINS, Ok(u64::from(cfg.twins != Twins::None)));
    (out, bad)
}
