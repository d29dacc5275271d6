//! Synthetic BTF blobs, damaged input, and this host's kernel BTF.

use super::*;

/// Tiny BTF writer for tests.
struct Builder {
    types: Vec<u8>,
    strs: Vec<u8>,
    next: u32,
}

impl Builder {
    fn new() -> Self {
        Builder {
            types: Vec::new(),
            strs: vec![0],
            next: 1,
        }
    }
    fn s(&mut self, s: &str) -> u32 {
        if s.is_empty() {
            return 0;
        }
        let off = self.strs.len() as u32;
        self.strs.extend_from_slice(s.as_bytes());
        self.strs.push(0);
        off
    }
    fn w(&mut self, v: u32) {
        self.types.extend_from_slice(&v.to_le_bytes());
    }
    fn ty(&mut self, name: &str, kind: u8, vlen: u32, kflag: bool, st: u32) -> u32 {
        let n = self.s(name);
        self.w(n);
        self.w(((kflag as u32) << 31) | ((kind as u32) << 24) | vlen);
        self.w(st);
        self.next += 1;
        self.next - 1
    }
    fn int(&mut self, name: &str, size: u32, signed: bool) -> u32 {
        let id = self.ty(name, KIND_INT, 0, false, size);
        self.w(((signed as u32) << 24) | (size * 8));
        id
    }
    fn composite(
        &mut self,
        kind: u8,
        name: &str,
        size: u32,
        kflag: bool,
        m: &[(&str, u32, u32)],
    ) -> u32 {
        let id = self.ty(name, kind, m.len() as u32, kflag, size);
        for &(n, t, off) in m {
            let n = self.s(n);
            self.w(n);
            self.w(t);
            self.w(off);
        }
        id
    }
    fn enum32(&mut self, name: &str, signed: bool, e: &[(&str, i32)]) -> u32 {
        let id = self.ty(name, KIND_ENUM, e.len() as u32, signed, 4);
        for &(n, v) in e {
            let n = self.s(n);
            self.w(n);
            self.w(v as u32);
        }
        id
    }
    fn enum64(&mut self, name: &str, signed: bool, e: &[(&str, i64)]) -> u32 {
        let id = self.ty(name, KIND_ENUM64, e.len() as u32, signed, 8);
        for &(n, v) in e {
            let n = self.s(n);
            self.w(n);
            self.w(v as u64 as u32);
            self.w((v as u64 >> 32) as u32);
        }
        id
    }
    fn proto(&mut self, ret: u32, p: &[(&str, u32)]) -> u32 {
        let id = self.ty("", KIND_FUNC_PROTO, p.len() as u32, false, ret);
        for &(n, t) in p {
            let n = self.s(n);
            self.w(n);
            self.w(t);
        }
        id
    }
    fn build(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&BTF_MAGIC.to_le_bytes());
        out.push(1);
        out.push(0);
        for v in [
            24u32,
            0,
            self.types.len() as u32,
            self.types.len() as u32,
            self.strs.len() as u32,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.types);
        out.extend_from_slice(&self.strs);
        out
    }
}

fn synthetic() -> Vec<u8> {
    let mut b = Builder::new();
    let int = b.int("int", 4, true); // 1
    let ulong = b.int("unsigned long", 8, false); // 2
    let chr = b.int("char", 1, true); // 3
    let _fwd = b.ty("folio", KIND_FWD, 0, false, 0); // 4: FWD must lose to the STRUCT
    let inner = b.composite(KIND_STRUCT, "swp_entry", 8, false, &[("val", ulong, 0)]); // 5
    let swp_t = b.ty("swp_entry_t", KIND_TYPEDEF, 0, false, inner); // 6
    let anon_s = b.composite(KIND_STRUCT, "", 8, false, &[("a", int, 0), ("b", int, 32)]); // 7
    let anon_u = b.composite(
        KIND_UNION,
        "",
        8,
        false,
        &[("", anon_s, 0), ("swap", swp_t, 0)],
    ); // 8
    let c_swp = b.ty("", KIND_CONST, 0, false, swp_t); // 9
    let folio_id = b.next + 1; // PTR is 10, STRUCT folio 11
    let pfolio = b.ty("", KIND_PTR, 0, false, folio_id); // 10
    let folio = b.composite(
        KIND_STRUCT,
        "folio",
        40,
        true,
        &[
            ("flags", ulong, 0),
            ("", anon_u, 64),
            ("private", c_swp, 128),
            ("bf", int, 192 | (3 << 24)),
            ("p", pfolio, 256),
        ],
    ); // 11
    assert_eq!(folio, folio_id);
    b.enum32("color", true, &[("RED", 0), ("BLUE", -2)]);
    b.enum32("uflags", false, &[("BIG", -1)]);
    b.enum64("big64", true, &[("HUGE", 1 << 40), ("NEG", -5)]);
    let pvoid = b.ty("", KIND_PTR, 0, false, 0);
    let cchar = b.ty("", KIND_CONST, 0, false, chr);
    let pcchar = b.ty("", KIND_PTR, 0, false, cchar);
    let proto = b.proto(0, &[("__data", pvoid), ("folio", pfolio), ("nr", ulong)]);
    b.ty("__bpf_trace_mm_test", KIND_FUNC, 0, false, proto);
    let proto2 = b.proto(int, &[("x", int), ("s", pcchar), ("", 0)]);
    b.ty("do_thing", KIND_FUNC, 0, false, proto2);
    // DEFINE_EVENT-style: typedef'd pointer to an unnamed proto with the same types.
    let proto3 = b.proto(0, &[("", pvoid), ("", pfolio), ("", ulong)]);
    let pproto3 = b.ty("", KIND_PTR, 0, false, proto3);
    b.ty("btf_trace_mm_test2", KIND_TYPEDEF, 0, false, pproto3);
    let arr = b.ty("", KIND_ARRAY, 0, false, 0);
    b.w(int);
    b.w(int);
    b.w(4);
    b.ty("int4", KIND_TYPEDEF, 0, false, arr);
    b.build()
}

#[test]
fn synthetic_blob() {
    let btf = Btf::parse(&synthetic()).expect("parse");
    assert_eq!(btf.member_offset("folio", "flags").unwrap(), 0);
    assert_eq!(btf.member_offset("folio", "swap").unwrap(), 8);
    assert_eq!(btf.member_offset("struct folio", "swap.val").unwrap(), 8);
    assert_eq!(btf.member_offset("folio", "b").unwrap(), 12);
    assert_eq!(btf.member_offset("folio", "private.val").unwrap(), 16);
    assert_eq!(btf.member_offset("folio", "p").unwrap(), 32);
    assert_eq!(btf.member_offset("swp_entry_t", "val").unwrap(), 0);
    assert!(matches!(
        btf.member_offset("folio", "bf"),
        Err(BtfError::Bitfield(_))
    ));
    assert!(matches!(
        btf.member_offset("folio", "p.flags"),
        Err(BtfError::MemberNotFound { .. })
    ));
    assert!(matches!(
        btf.member_offset("folio", "nope"),
        Err(BtfError::MemberNotFound { .. })
    ));
    assert!(matches!(
        btf.member_offset("nostruct", "x"),
        Err(BtfError::TypeNotFound(_))
    ));
    assert_eq!(btf.type_size("folio").unwrap(), 40);
    assert_eq!(btf.type_size("swp_entry_t").unwrap(), 8);
    assert_eq!(btf.type_size("unsigned long").unwrap(), 8);
    assert_eq!(btf.type_size("int4").unwrap(), 16);
    assert_eq!(btf.enum_value(Some("color"), "BLUE").unwrap(), -2);
    assert_eq!(btf.enum_value(None, "RED").unwrap(), 0);
    assert_eq!(btf.enum_value(None, "BIG").unwrap(), 0xffff_ffff);
    assert_eq!(btf.enum_value(Some("big64"), "HUGE").unwrap(), 1 << 40);
    assert_eq!(btf.enum_value(None, "NEG").unwrap(), -5);
    assert!(matches!(
        btf.enum_value(Some("color"), "GREEN"),
        Err(BtfError::EnumeratorNotFound(_))
    ));
    assert!(matches!(
        btf.enum_value(Some("nocolor"), "RED"),
        Err(BtfError::TypeNotFound(_))
    ));
    assert!(btf.has_func("do_thing"));
    assert!(!btf.has_func("folio"));
    let s = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    assert_eq!(
        btf.func_params("do_thing").unwrap(),
        s(&[("x", "int"), ("s", "const char *"), ("", "...")])
    );
    assert_eq!(
        btf.func_params("__bpf_trace_mm_test").unwrap(),
        s(&[
            ("__data", "void *"),
            ("folio", "struct folio *"),
            ("nr", "unsigned long")
        ])
    );
    let want = s(&[("folio", "struct folio *"), ("nr", "unsigned long")]);
    assert_eq!(btf.tracepoint_params("mm_test").unwrap(), want);
    assert_eq!(btf.tracepoint_params("mm_test2").unwrap(), want);
    assert_eq!(btf.tracepoint_arg("mm_test", "nr").unwrap(), 1);
    assert_eq!(btf.tracepoint_arg("mm_test2", "folio").unwrap(), 0);
    assert!(matches!(
        btf.tracepoint_arg("mm_test", "zzz"),
        Err(BtfError::ParamNotFound { .. })
    ));
    assert!(matches!(
        btf.tracepoint_params("nope"),
        Err(BtfError::TypeNotFound(_))
    ));
}

fn exercise(btf: &Btf) {
    let _ = btf.member_offset("folio", "swap.val");
    let _ = btf.member_offset("folio", "b");
    let _ = btf.member_offset("folio", "p.x");
    let _ = btf.type_size("folio");
    let _ = btf.type_size("int4");
    let _ = btf.enum_value(None, "NEG");
    let _ = btf.func_params("do_thing");
    let _ = btf.tracepoint_params("mm_test2");
    for id in 0..btf.types.len() as u32 + 2 {
        let _ = btf.type_name(id);
        let _ = btf.size_of(id, 0);
    }
}

#[test]
fn truncated_and_garbage() {
    let blob = synthetic();
    for n in 0..blob.len() {
        match Btf::parse(&blob[..n]) {
            Err(BtfError::Format(_)) => {}
            other => panic!("prefix {n}: expected Format error, got {other:?}"),
        }
    }
    // Corrupt each byte in turn: must never panic.
    for i in 0..blob.len() {
        for v in [0x00u8, 0xff, 0x7f, 0x13] {
            let mut b = blob.clone();
            b[i] = v;
            if let Ok(btf) = Btf::parse(&b) {
                exercise(&btf);
            }
        }
    }
    // Self-referential typedef and struct: must terminate.
    let mut b = Builder::new();
    b.ty("loop", KIND_TYPEDEF, 0, false, 1);
    b.composite(KIND_STRUCT, "s", 4, false, &[("", 2, 0)]);
    let btf = Btf::parse(&b.build()).unwrap();
    assert!(btf.type_size("loop").is_err());
    assert!(btf.member_offset("s", "x").is_err());
    assert!(btf.member_offset("loop", "x").is_err());
    let _ = btf.type_name(1);
    let mut seed = 0x1234_5678u32;
    for len in [0usize, 1, 24, 100, 1000] {
        let g: Vec<u8> = (0..len)
            .map(|_| {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (seed >> 16) as u8
            })
            .collect();
        assert!(matches!(Btf::parse(&g), Err(BtfError::Format(_))));
    }
    assert!(matches!(
        Btf::from_path(Path::new("/nonexistent/btf")),
        Err(BtfError::Io { .. })
    ));
}

#[test]
fn live_vmlinux() {
    let t0 = std::time::Instant::now();
    let btf = match Btf::from_sys_fs() {
        Ok(b) => {
            assert_eq!(b.func_return("do_swap_page").unwrap(), "vm_fault_t");
            assert!(b.func_return("no_such_function_here").is_err());
            b
        }
        Err(BtfError::Io { path, source }) => {
            eprintln!("skipping live BTF test: cannot read {path}: {source}");
            return;
        }
        Err(e) => panic!("parsing {SYS_BTF_PATH}: {e}"),
    };
    eprintln!("parsed {} types in {:?}", btf.len(), t0.elapsed());
    for (s, m) in [
        ("folio", "swap"),
        ("folio", "swap.val"),
        ("vm_area_struct", "vm_mm"),
        ("vm_area_struct", "swap_readahead_info"),
        ("task_struct", "mm"),
        ("task_struct", "tgid"),
        ("mm_struct", "pgd"),
        ("anon_vma", "rb_root"),
        ("anon_vma_chain", "vma"),
        ("anon_vma_chain", "rb"),
    ] {
        match btf.member_offset(s, m) {
            Ok(o) => eprintln!("offset {s}.{m} = {o}"),
            Err(e) => panic!("{s}.{m}: {e}"),
        }
    }
    let pswpin = btf
        .enum_value(Some("vm_event_item"), "PSWPIN")
        .expect("PSWPIN");
    eprintln!("enum vm_event_item::PSWPIN = {pswpin}");
    assert_eq!(
        btf.tracepoint_arg("mm_vmscan_write_folio", "folio")
            .unwrap(),
        0
    );
    let names: Vec<String> = btf
        .tracepoint_params("page_fault_user")
        .unwrap()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["address", "regs", "error_code"]);
    for tp in [
        "count_memcg_events",
        "rss_stat",
        "page_fault_user",
        "page_fault_kernel",
        "mm_vmscan_write_folio",
        "mm_vmscan_direct_reclaim_begin",
        "mm_vmscan_direct_reclaim_end",
        "mm_vmscan_memcg_reclaim_begin",
        "mm_vmscan_memcg_reclaim_end",
        "mm_collapse_huge_page_swapin",
        "sys_enter",
        "sys_exit",
        "sched_process_exit",
    ] {
        match btf.tracepoint_params(tp) {
            Ok(p) => {
                let p: Vec<String> = p.iter().map(|(n, t)| format!("{t} {n}")).collect();
                eprintln!("tp {tp}({})", p.join(", "));
            }
            Err(e) => eprintln!("tp {tp}: {e}"),
        }
    }
}

/// The lookups the probes make (probe/live/globals.rs `globals`, probe/table.rs
/// `Req`s, kernel.rs checks), rendered as one line each.
fn host_lookups(btf: &Btf) -> Vec<String> {
    let mut out = Vec::new();
    for (s, m) in [
        ("task_struct", "mm"),
        ("task_struct", "flags"),
        ("task_struct", "tgid"),
        ("task_struct", "cgroups"),
        ("folio", "flags"),
        ("folio", "_flags_1"),
        ("folio", "mapping"),
        ("folio", "index"),
        ("folio", "swap"),
        ("folio", "swap.val"),
        ("folio", "private"),
        ("anon_vma", "rb_root"),
        ("anon_vma", "rb_root.rb_root.rb_node"),
        ("anon_vma_chain", "rb"),
        ("anon_vma_chain", "vma"),
        ("vm_area_struct", "vm_mm"),
        ("vm_area_struct", "vm_start"),
        ("vm_area_struct", "vm_pgoff"),
        ("vm_area_struct", "swap_readahead_info"),
        ("mm_struct", "pgd"),
        ("mm_struct", "rss_stat"),
        ("mm_struct", "rss_stat.count"),
        ("percpu_counter", "count"),
        ("css_set", "subsys"),
        ("cgroup_subsys_state", "cgroup"),
        ("cgroup_subsys_state", "parent"),
        ("cgroup", "kn"),
        ("kernfs_node", "id"),
        ("vm_fault", "address"),
        ("vm_fault", "orig_pte"),
        ("vm_fault", "vma"),
        ("folio", "no_such_member"),
        ("no_such_struct", "x"),
        ("vm_fault", "vma.vm_mm"),
    ] {
        let r = btf.member_offset(s, m).map_err(|e| e.to_string());
        out.push(format!("member {s}.{m} = {r:?}"));
    }
    for t in [
        "percpu_counter",
        "folio",
        "struct page",
        "unsigned long",
        "vm_fault_t",
    ] {
        let r = btf.type_size(t).map_err(|e| e.to_string());
        out.push(format!("size {t} = {r:?}"));
    }
    for (e, v) in [
        (Some("vm_event_item"), "PSWPIN"),
        (Some("vm_event_item"), "PSWPOUT"),
        (Some("vm_event_item"), "PGMAJFAULT"),
        (Some("vm_event_item"), "PGFAULT"),
        (Some("vm_event_item"), "SWPIN_ZERO"),
        (Some("vm_event_item"), "SWPOUT_ZERO"),
        (Some("vm_event_item"), "ZSWPIN"),
        (Some("vm_event_item"), "ZSWPOUT"),
        (Some("vm_event_item"), "ZSWPWB"),
        (Some("vm_event_item"), "NO_SUCH_EVENT"),
        (Some("pageflags"), "PG_head"),
        (None, "MM_SWAPENTS"),
        (None, "memory_cgrp_id"),
    ] {
        let r = btf.enum_value(e, v).map_err(|e| e.to_string());
        out.push(format!("enum {e:?}::{v} = {r:?}"));
    }
    for f in [
        "do_swap_page",
        "swap_cluster_readahead",
        "swap_entries_free",
        "swap_read_folio",
        "swap_readpage",
        "swap_update_readahead",
        "swap_writeout",
        "swapcache_free_entries",
        "swapin_nr_pages",
        "zswap_frontswap_load",
        "zswap_frontswap_store",
        "zswap_load",
        "zswap_store",
        "zswap_writeback_entry",
    ] {
        let r = btf.func_return(f).map_err(|e| e.to_string());
        out.push(format!("func {f} = {} {r:?}", btf.has_func(f)));
    }
    for f in ["swap_cache_get_folio", "zswap_load", "do_swap_page"] {
        let r = btf.func_params(f).map_err(|e| e.to_string());
        out.push(format!("params {f} = {r:?}"));
    }
    for tp in [
        "page_fault_user",
        "page_fault_kernel",
        "rss_stat",
        "count_memcg_events",
        "mm_vmscan_write_folio",
        "mm_vmscan_direct_reclaim_begin",
        "mm_vmscan_direct_reclaim_end",
        "mm_vmscan_memcg_reclaim_begin",
        "mm_vmscan_memcg_reclaim_end",
        "mm_collapse_huge_page_swapin",
        "sys_enter",
        "sys_exit",
        "sched_process_exit",
        "no_such_tracepoint",
    ] {
        let r = btf.tracepoint_params(tp).map_err(|e| e.to_string());
        out.push(format!("tp {tp} = {r:?}"));
    }
    out.push(format!(
        "tparg mm_vmscan_write_folio.folio = {:?}",
        btf.tracepoint_arg("mm_vmscan_write_folio", "folio")
            .map_err(|e| e.to_string())
    ));
    out.push(format!("len = {}", btf.len()));
    out
}

/// What the hand-written parser this module replaced answered for
/// [`host_lookups`] on the 6.18 host the port was made on
/// (6.18.44-fc-v657, 126585 types).
const HOST_6_18: &[&str] = &[
    "member task_struct.mm = Ok(1136)",
    "member task_struct.flags = Ok(44)",
    "member task_struct.tgid = Ok(1268)",
    "member task_struct.cgroups = Ok(2376)",
    "member folio.flags = Ok(0)",
    "member folio._flags_1 = Ok(64)",
    "member folio.mapping = Ok(24)",
    "member folio.index = Ok(32)",
    "member folio.swap = Ok(40)",
    "member folio.swap.val = Ok(40)",
    "member folio.private = Ok(40)",
    "member anon_vma.rb_root = Ok(80)",
    "member anon_vma.rb_root.rb_root.rb_node = Ok(80)",
    "member anon_vma_chain.rb = Ok(32)",
    "member anon_vma_chain.vma = Ok(0)",
    "member vm_area_struct.vm_mm = Ok(16)",
    "member vm_area_struct.vm_start = Ok(0)",
    "member vm_area_struct.vm_pgoff = Ok(80)",
    "member vm_area_struct.swap_readahead_info = Ok(104)",
    "member mm_struct.pgd = Ok(120)",
    "member mm_struct.rss_stat = Ok(960)",
    "member mm_struct.rss_stat.count = Err(\"`struct percpu_counter[4] (not a struct or union)` has no member `count`\")",
    "member percpu_counter.count = Ok(8)",
    "member css_set.subsys = Ok(0)",
    "member cgroup_subsys_state.cgroup = Ok(0)",
    "member cgroup_subsys_state.parent = Ok(184)",
    "member cgroup.kn = Ok(256)",
    "member kernfs_node.id = Ok(96)",
    "member vm_fault.address = Ok(24)",
    "member vm_fault.orig_pte = Ok(64)",
    "member vm_fault.vma = Ok(0)",
    "member folio.no_such_member = Err(\"`struct folio` has no member `no_such_member`\")",
    "member no_such_struct.x = Err(\"type `no_such_struct` not found in BTF\")",
    "member vm_fault.vma.vm_mm = Err(\"`struct vm_area_struct * (a pointer: not followed)` has no member `vm_mm`\")",
    "size percpu_counter = Ok(40)",
    "size folio = Ok(256)",
    "size struct page = Ok(64)",
    "size unsigned long = Err(\"type `unsigned long` not found in BTF\")",
    "size vm_fault_t = Ok(4)",
    "enum Some(\"vm_event_item\")::PSWPIN = Ok(2)",
    "enum Some(\"vm_event_item\")::PSWPOUT = Ok(3)",
    "enum Some(\"vm_event_item\")::PGMAJFAULT = Ok(24)",
    "enum Some(\"vm_event_item\")::PGFAULT = Ok(23)",
    "enum Some(\"vm_event_item\")::SWPIN_ZERO = Ok(108)",
    "enum Some(\"vm_event_item\")::SWPOUT_ZERO = Ok(109)",
    "enum Some(\"vm_event_item\")::ZSWPIN = Ok(112)",
    "enum Some(\"vm_event_item\")::ZSWPOUT = Ok(113)",
    "enum Some(\"vm_event_item\")::ZSWPWB = Ok(114)",
    "enum Some(\"vm_event_item\")::NO_SUCH_EVENT = Err(\"enumerator `vm_event_item::NO_SUCH_EVENT` not found\")",
    "enum Some(\"pageflags\")::PG_head = Ok(6)",
    "enum None::MM_SWAPENTS = Ok(2)",
    "enum None::memory_cgrp_id = Ok(4)",
    "func do_swap_page = true Ok(\"vm_fault_t\")",
    "func swap_cluster_readahead = true Ok(\"struct folio *\")",
    "func swap_entries_free = true Ok(\"void\")",
    "func swap_read_folio = true Ok(\"void\")",
    "func swap_readpage = false Err(\"type `swap_readpage` not found in BTF\")",
    "func swap_update_readahead = true Ok(\"void\")",
    "func swap_writeout = true Ok(\"int\")",
    "func swapcache_free_entries = false Err(\"type `swapcache_free_entries` not found in BTF\")",
    "func swapin_nr_pages = false Err(\"type `swapin_nr_pages` not found in BTF\")",
    "func zswap_frontswap_load = false Err(\"type `zswap_frontswap_load` not found in BTF\")",
    "func zswap_frontswap_store = false Err(\"type `zswap_frontswap_store` not found in BTF\")",
    "func zswap_load = true Ok(\"int\")",
    "func zswap_store = true Ok(\"bool\")",
    "func zswap_writeback_entry = false Err(\"type `zswap_writeback_entry` not found in BTF\")",
    "params swap_cache_get_folio = Ok([(\"entry\", \"swp_entry_t\")])",
    "params zswap_load = Ok([(\"folio\", \"struct folio *\")])",
    "params do_swap_page = Ok([(\"vmf\", \"struct vm_fault *\")])",
    "tp page_fault_user = Ok([(\"address\", \"long unsigned int\"), (\"regs\", \"struct pt_regs *\"), (\"error_code\", \"long unsigned int\")])",
    "tp page_fault_kernel = Ok([(\"address\", \"long unsigned int\"), (\"regs\", \"struct pt_regs *\"), (\"error_code\", \"long unsigned int\")])",
    "tp rss_stat = Ok([(\"mm\", \"struct mm_struct *\"), (\"member\", \"int\")])",
    "tp count_memcg_events = Ok([(\"memcg\", \"struct mem_cgroup *\"), (\"item\", \"int\"), (\"val\", \"long unsigned int\")])",
    "tp mm_vmscan_write_folio = Ok([(\"folio\", \"struct folio *\")])",
    "tp mm_vmscan_direct_reclaim_begin = Ok([(\"order\", \"int\"), (\"gfp_flags\", \"gfp_t\")])",
    "tp mm_vmscan_direct_reclaim_end = Ok([(\"nr_reclaimed\", \"long unsigned int\")])",
    "tp mm_vmscan_memcg_reclaim_begin = Ok([(\"order\", \"int\"), (\"gfp_flags\", \"gfp_t\")])",
    "tp mm_vmscan_memcg_reclaim_end = Ok([(\"nr_reclaimed\", \"long unsigned int\")])",
    "tp mm_collapse_huge_page_swapin = Ok([(\"mm\", \"struct mm_struct *\"), (\"swapped_in\", \"int\"), (\"referenced\", \"int\"), (\"ret\", \"int\")])",
    "tp sys_enter = Ok([(\"regs\", \"struct pt_regs *\"), (\"id\", \"long int\")])",
    "tp sys_exit = Ok([(\"regs\", \"struct pt_regs *\"), (\"ret\", \"long int\")])",
    "tp sched_process_exit = Ok([(\"p\", \"struct task_struct *\"), (\"group_dead\", \"bool\")])",
    "tp no_such_tracepoint = Err(\"type `__bpf_trace_no_such_tracepoint` not found in BTF\")",
    "tparg mm_vmscan_write_folio.folio = Ok(0)",
    "len = 126585",
];

#[test]
fn host_lookups_are_unchanged() {
    let btf = match Btf::from_sys_fs() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("skipping: {e}");
            return;
        }
    };
    let got = host_lookups(&btf);
    if got.last().map(String::as_str) != HOST_6_18.last().copied() {
        eprintln!("skipping: not the 6.18 host's BTF ({} types)", btf.len());
        return;
    }
    for (g, want) in got.iter().zip(HOST_6_18) {
        assert_eq!(g, want);
    }
    assert_eq!(got.len(), HOST_6_18.len());
}
