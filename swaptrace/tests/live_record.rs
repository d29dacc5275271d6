//! Live recording on this kernel, checked against /proc/vmstat. Needs root
//! and BPF; each test holds the live-test lock, and every knob it touches is
//! restored by a guard even when an assertion fails.
#![cfg(feature = "live")]

use std::path::PathBuf;
use swaptrace::lab;
use swaptrace::record::{record, run_demo, DemoOptions, RecordOptions};
use swaptrace::report::{check_text, vmstat_check, Seen};
use swaptrace::trace::{read_trace, Record, SwapEntry};
use swaptrace::trace::{ReadCoverage, Summary};
use swaptrace::workload::{Pattern, WorkloadSpec};

const EXE: &str = env!("CARGO_BIN_EXE_swaptrace");

/// The live-test lock; a run without root fails with the reason (these
/// tests are `#[ignore]`d, so only an explicit `--ignored` run gets here).
fn live(test: &str) -> std::sync::MutexGuard<'static, ()> {
    if let Err(e) = lab::require_root() {
        panic!("{test} cannot run: {e}");
    }
    lab::live_test_lock()
}

fn scratch() -> PathBuf {
    let d = PathBuf::from(format!("/var/tmp/swaptrace-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn recorded_swap_traffic_matches_vmstat() {
    let _lock = live("recorded_swap_traffic_matches_vmstat");
    let dir = scratch();
    let out = dir.join("live.swt");
    let swaps_before = std::fs::read_to_string("/proc/swaps").unwrap();
    let r = run_demo(
        std::path::Path::new(EXE),
        &DemoOptions {
            command: None,
            workload: WorkloadSpec {
                size_bytes: 384 << 20,
                pattern: Pattern::ShuffledBlocks { block_pages: 16 },
                passes: 1,
                seed: 7,
                // Some zero-filled pages: swapped out and in without I/O.
                zero_every: 8,
                ..WorkloadSpec::default()
            },
            limit_bytes: 128 << 20,
            swap_bytes: 1 << 30,
            swap_dir: dir.clone(),
            output: out.clone(),
            loop_device: false,
            progress: false,
        },
    )
    .expect("recording");
    // The guards are gone: swap and cgroup restored.
    assert_eq!(
        std::fs::read_to_string("/proc/swaps").unwrap(),
        swaps_before
    );
    assert_eq!(r.exit_code, Some(0), "workload failed (OOM?)");

    let rows = vmstat_check(
        &r.summary,
        &r.vmstat_delta,
        Seen::from_attach(r.attached.iter().map(String::as_str)),
    );
    eprintln!("{}", check_text(&rows));
    let s: &Summary = &r.summary;
    eprintln!(
        "faults {} (major {}), joined {}, swap-outs {}, pages read {}, lost {}, {} records, {} bytes ({:.2} B/record)",
        s.faults,
        s.faults_major,
        s.faults_joined,
        s.swap_outs,
        s.pswpin(),
        s.lost_total(),
        r.records,
        r.bytes,
        r.bytes as f64 / r.records as f64
    );
    assert!(s.pswpin() > 50_000, "the workload must really swap: {s:?}");
    assert!(s.swap_out_zero > 5_000, "zero pages must be seen: {s:?}");
    assert_rows_agree(&rows);
    assert_eq!(s.lost_total(), 0, "lost events at this rate");
    assert!(
        s.faults_joined as f64 >= 0.98 * s.faults as f64,
        "only {} of {} faults joined to a swap-out",
        s.faults_joined,
        s.faults
    );

    // The file holds the same, and every joined entry is one that was swapped out
    // from that very page.
    let t = read_trace(&out).unwrap();
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    let f = t.footer.as_ref().expect("finalized");
    assert_eq!(f.records, t.records.len() as u64);
    assert_eq!(f.exit_code, Some(0));
    let mut outs: std::collections::HashMap<SwapEntry, (u32, u64)> = Default::default();
    let mut checked = 0;
    for rec in &t.records {
        match rec {
            Record::SwapOut {
                mm, vaddr, entry, ..
            } => {
                outs.insert(*entry, (*mm, *vaddr));
            }
            Record::SwapFault {
                mm,
                addr,
                entry: Some(e),
                ..
            } => {
                assert_eq!(
                    outs.get(e),
                    Some(&(*mm, addr & !0xfff)),
                    "fault entry {e:?}"
                );
                assert!(e.offset < (1 << 30) / 4096, "entry beyond the swap file");
                checked += 1;
            }
            _ => {}
        }
    }
    assert_eq!(checked, s.faults_joined);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn duration_bounded_recording_is_finalized() {
    let _lock = live("duration_bounded_recording_is_finalized");
    let dir = scratch();
    let out = dir.join("idle.swt");
    let r = record(&RecordOptions {
        output: out.clone(),
        duration: Some(std::time::Duration::from_millis(300)),
        ..RecordOptions::default()
    })
    .unwrap();
    assert!(r.elapsed_s >= 0.3 && r.elapsed_s < 10.0, "{}", r.elapsed_s);
    let t = read_trace(&out).unwrap();
    assert!(t.footer.is_some());
    assert!(t.problems.is_empty());
    assert!(t.header.vmstat_start.contains_key("pswpin"));
    assert!(t
        .header
        .metrics
        .iter()
        .any(|m| m.metric == "swap-fault" && m.backend.as_deref() == Some("tracepoint")));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn command_exit_code_and_missing_command_are_reported() {
    let _lock = live("command_exit_code_and_missing_command_are_reported");
    let dir = scratch();
    let out = dir.join("false.swt");
    let r = record(&RecordOptions {
        output: out.clone(),
        command: vec!["sh".into(), "-c".into(), "exit 3".into()],
        ..RecordOptions::default()
    })
    .unwrap();
    assert_eq!(r.exit_code, Some(3));
    assert_eq!(read_trace(&out).unwrap().footer.unwrap().exit_code, Some(3));

    let bad = dir.join("nocmd.swt");
    let e = record(&RecordOptions {
        output: bad.clone(),
        command: vec!["/nonexistent/cmd".into()],
        ..RecordOptions::default()
    })
    .unwrap_err();
    assert!(e.to_string().contains("/nonexistent/cmd"), "{e}");
    // Even then the trace left behind is valid and finalized.
    assert!(read_trace(&bad).unwrap().footer.is_some());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn sigint_stops_recording_and_finalizes_the_trace() {
    let _lock = live("sigint_stops_recording_and_finalizes_the_trace");
    let dir = scratch();
    let out = dir.join("int.swt");
    let mut child = std::process::Command::new(EXE)
        .args(["record", "--json", "--duration", "60s", "-o"])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t = std::time::Instant::now();
    let st = child.wait().unwrap();
    assert!(st.success(), "{st:?}");
    assert!(t.elapsed().as_secs() < 10, "SIGINT did not stop it");
    let tr = read_trace(&out).unwrap();
    assert!(tr.footer.is_some() && tr.problems.is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn shared_memory_swap_is_reported_as_unrecorded() {
    let spec = WorkloadSpec {
        shared: true,
        seed: 3,
        ..WorkloadSpec::default()
    };
    let (_lock, dir, out, r) = recorded_256m(
        "shared_memory_swap_is_reported_as_unrecorded",
        "shared.swt",
        spec,
    );
    let delta = |c: &str| r.vmstat_delta.get(c).copied();
    let c = ReadCoverage::of(&r.summary, delta).expect("pswpin in /proc/vmstat");
    eprintln!("{c:?}");
    // shmem_swapin_folio() read the pages back; the trace holds almost none.
    assert!(c.kernel > 20_000, "the workload must really swap: {c:?}");
    assert!(c.is_short() && c.recorded * 4 < c.kernel, "{c:?}");
    assert!(c.swap_outs_unowned * 2 > c.swap_outs, "{c:?}");
    let note = c.note().expect("a note");
    assert!(note.contains("shared memory"), "{note}");
    // The trace file says the same, and so does a replay of it.
    let t = read_trace(&out).unwrap();
    let rr = replayed(&t, "cluster");
    assert_eq!(rr.coverage, Some(c));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// 700 MiB through a 128 MiB cgroup fills more than half of the 1 GiB
/// swap: `should_try_to_free_swap()` (`vm_swap_full()`) frees the slot of
/// every fault, read faults too, and reclaim writes the pages anew. The
/// replay sees it (`slots_freed_at_read`) and notes the layout.
#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn swap_more_than_half_full_frees_read_faults_slots() {
    let spec = WorkloadSpec {
        size_bytes: 700 << 20,
        seed: 9,
        ..WorkloadSpec::default()
    };
    let (_lock, dir, out, _) = recorded(
        "swap_more_than_half_full_frees_read_faults_slots",
        "full.swt",
        &spec,
    );
    let t = read_trace(&out).unwrap();
    let rr = replayed(&t, "cluster,vma");
    for m in &rr.results {
        eprintln!(
            "{}: {} faults, {} slots freed at the read",
            m.policy, m.faults, m.slots_freed_at_read
        );
        assert!(m.faults > 50_000, "the workload must swap: {m:?}");
        // Reads in address order after the writes: nearly every fault is a
        // read, and a page read back is reclaimed again before the end.
        assert!(m.slots_freed_at_read * 2 > m.faults, "{m:?}");
    }
    let text = swaptrace::report::replay_text(&rr.results, None, "cluster", &rr.device, &rr.cost);
    assert!(
        text.contains("swap layout: the kernel freed the slot of"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Swap on zram, a SWP_SYNCHRONOUS_IO device: `do_swap_page()` reads each
/// page alone, past the swap cache, whatever the readahead policy. The
/// header says so, and the replay of either policy reads as the kernel did
/// (before, it read ahead: 7,804 major faults replayed against 55,092).
/// Pages shared through fork (swap count 2) are read ahead all the same:
/// a child reading its parent's pages, replayed by the kernel's policy.
#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn zram_faults_read_their_page_alone() {
    let _lock = live("zram_faults_read_their_page_alone");
    let dir = scratch();
    let swaps_before = std::fs::read_to_string("/proc/swaps").unwrap();
    // Above any other swap's priority: the workload swaps to zram only.
    let zram = lab::Zram::swap_on(1 << 30, Some(32767)).unwrap();
    let cg = lab::MemCgroup::create("swaptrace-test-", 128 << 20).unwrap();
    let spec = WorkloadSpec {
        size_bytes: 256 << 20,
        seed: 11,
        ..WorkloadSpec::default()
    };
    let fork = WorkloadSpec {
        fork_read: true,
        ..spec.clone()
    };
    let runs: Vec<_> = [("zram.swt", &spec), ("zram-fork.swt", &fork)]
        .into_iter()
        .map(|(file, spec)| {
            let out = dir.join(file);
            let r = record(&RecordOptions {
                output: out.clone(),
                command: swaptrace::record::workload_command(std::path::Path::new(EXE), spec),
                cgroup: Some(cg.path().to_path_buf()),
                ..RecordOptions::default()
            })
            .unwrap();
            (out, r.exit_code)
        })
        .collect();
    let zdev = zram.path().to_path_buf();
    drop((cg, zram));
    assert_eq!(
        std::fs::read_to_string("/proc/swaps").unwrap(),
        swaps_before
    );
    assert!(!zdev.exists(), "{} left behind", zdev.display());
    let within = |what: &str, got: u64, want: i64| {
        let err = (got as f64 - want as f64).abs() / want.max(1) as f64;
        assert!(err < 0.01, "{what}: {got} against the kernel's {want}");
    };
    for (i, (out, code)) in runs.iter().enumerate() {
        assert_eq!(*code, Some(0), "workload failed (OOM?)");
        let t = read_trace(out).unwrap();
        let z = t.header.swap_devices.iter().find(|d| d.path == zdev);
        assert_eq!(
            z.and_then(|d| d.synchronous),
            Some(true),
            "{:?}",
            t.header.swap_devices
        );
        let k = swaptrace::report::kernel_counts(&t).unwrap();
        eprintln!("{}: kernel {k:?}", out.display());
        assert!(k.pgmajfault > 5_000, "the workload must swap: {k:?}");
        let policies = if i == 0 {
            assert_eq!(k.swap_ra, 0, "{k:?}");
            "cluster,vma".to_string()
        } else {
            assert!(k.swap_ra > 10_000, "shared pages are read ahead: {k:?}");
            swaptrace::replay::kernel_policy(&t.header).to_string()
        };
        for m in &replayed(&t, &policies).results {
            eprintln!(
                "{}: pswpin {} pgmajfault {} swap_ra {}",
                m.policy, m.pswpin, m.pgmajfault, m.swap_ra
            );
            within(&m.policy, m.pswpin, k.pswpin);
            within(&m.policy, m.pgmajfault, k.pgmajfault);
            within(&m.policy, m.swap_ra, k.swap_ra);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn threads_faulting_the_same_pages_lose_no_reads() {
    let spec = WorkloadSpec {
        threads: 4,
        seed: 5,
        ..WorkloadSpec::default()
    };
    let (_lock, dir, _, r) = recorded_256m(
        "threads_faulting_the_same_pages_lose_no_reads",
        "threads.swt",
        spec,
    );
    let rows = vmstat_check(
        &r.summary,
        &r.vmstat_delta,
        Seen::from_attach(r.attached.iter().map(String::as_str)),
    );
    eprintln!("{}", check_text(&rows));
    // A thread that read a page and found it mapped by another (the PTE
    // changed under do_swap_page()) maps no swap entry; its reads are
    // still the trace's: every page read is, and the replay's.
    let read = rows
        .iter()
        .find(|r| r.counter == "pswpin")
        .expect("pswpin row");
    assert!(read.kernel > 20_000, "the workload must really swap");
    assert_eq!(read.recorded as i64, read.kernel, "pages read");
    // A thread whose lookup missed while another read the folio counts
    // PGMAJFAULT too, and reads and maps nothing: not a swap-in of its own
    // (1.8-2.7% of them here, more when the host is busy).
    for row in &rows {
        let pct = if row.counter == "pgmajfault" {
            4.0
        } else {
            1.0
        };
        assert!(row.agrees(pct), "{row:?}");
    }
    let delta = |c: &str| r.vmstat_delta.get(c).copied();
    let c = ReadCoverage::of(&r.summary, delta).expect("pswpin");
    assert_eq!(c.recorded, c.kernel, "{c:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Memory moved by mremap() after its swap-out (as realloc() grows a
/// block): the faults at the new addresses join their swap-outs, and the
/// replay of the kernel's policy follows the pages to where they moved.
#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn faults_on_memory_mremap_moved_join_their_swap_outs() {
    let spec = WorkloadSpec {
        moves: 3,
        seed: 7,
        ..WorkloadSpec::default()
    };
    let (_lock, dir, out, r) = recorded_256m(
        "faults_on_memory_mremap_moved_join_their_swap_outs",
        "moved.swt",
        spec,
    );
    let s = &r.summary;
    assert!(s.faults > 20_000, "the workload must really swap: {s:?}");
    assert_eq!(s.faults_joined, s.faults, "every fault joins a swap-out");
    let delta = |c: &str| r.vmstat_delta.get(c).copied();
    let c = ReadCoverage::of(s, delta).expect("pswpin");
    assert_eq!(c.recorded, c.kernel, "{c:?}");
    let t = read_trace(&out).unwrap();
    let moved = t
        .records
        .iter()
        .filter(|r| matches!(r, Record::Moved { .. }));
    assert_eq!(moved.count(), 3, "one record per mremap()");
    let policy = swaptrace::replay::kernel_policy(&t.header);
    let rr = replayed(&t, policy);
    let k = swaptrace::report::kernel_counts(&t).expect("vmstat in the trace");
    for (counter, model, kernel, pct) in swaptrace::report::fidelity(&rr.results[0], &k) {
        eprintln!("{policy} {counter}: replayed {model}, kernel {kernel}");
        let pct = pct.expect("the kernel counted some");
        assert!(pct.abs() <= 2.0, "own policy {counter} off by {pct:+.2}%");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two arrays grown side by side by `realloc()` (a Perl hash's two, a
/// program's buffers): adjacent at first, the lower one takes the upper
/// one's anon_vma (`find_mergeable_anon_vma()`), and `mremap()` keeps each
/// one's page offsets as they grow, so their ranges of offsets overlap on
/// one anon_vma. The page table tells which maps a page: every swap-out is
/// named at its own page, and every fault joins it.
#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn pages_of_two_vmas_with_overlapping_offsets_keep_their_addresses() {
    let _lock = live("pages_of_two_vmas_with_overlapping_offsets_keep_their_addresses");
    let dir = scratch();
    let swap = lab::SwapFile::create(&dir, 256 << 20, None).expect("swap");
    let out = dir.join("overlap.swt");
    let (page, small, big) = (4096usize, 33 * 4096usize, 8usize << 20);
    let rw = libc::PROT_READ | libc::PROT_WRITE;
    let anon = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
    // SAFETY: a reservation, then two mappings placed in it, adjacent.
    let (low, high) = unsafe {
        let r = libc::mmap(
            std::ptr::null_mut(),
            2 * small,
            libc::PROT_NONE,
            anon,
            -1,
            0,
        );
        assert_ne!(r, libc::MAP_FAILED);
        let high = libc::mmap(
            r.cast::<u8>().add(small).cast(),
            small,
            rw,
            anon | libc::MAP_FIXED,
            -1,
            0,
        );
        let low = libc::mmap(r, small, rw, anon | libc::MAP_FIXED, -1, 0);
        assert!(low != libc::MAP_FAILED && high != libc::MAP_FAILED);
        (low.cast::<u8>(), high.cast::<u8>())
    };
    // The upper one first: the lower one then shares its anon_vma.
    write_pages(high, 0, small);
    write_pages(low, 0, small);
    let grow = |p: *mut u8| {
        // SAFETY: a mapping of `small` bytes made above.
        let q = unsafe { libc::mremap(p.cast(), small, big, libc::MREMAP_MAYMOVE) };
        assert_ne!(q, libc::MAP_FAILED);
        q.cast::<u8>()
    };
    let (low, high) = (grow(low), grow(high));
    write_pages(low, 0, big);
    write_pages(high, 0, big);
    let pageout = || {
        for p in [low, high] {
            // SAFETY: the mappings above.
            assert_eq!(
                unsafe { libc::madvise(p.cast(), big, libc::MADV_PAGEOUT) },
                0
            );
        }
    };
    // Swapped out before: the recorder follows this process from then on.
    pageout();
    let mut rec = record_this_process(&out);
    write_pages(low, 0, big);
    write_pages(high, 0, big);
    pageout();
    write_pages(low, 0, big);
    write_pages(high, 0, big);
    // SAFETY: SIGINT ends the recording (it finalizes the trace).
    unsafe { libc::kill(rec.id() as i32, libc::SIGINT) };
    assert!(rec.wait().unwrap().success());
    let t = read_trace(&out).unwrap();
    let ranges = [low as u64, high as u64].map(|a| a..a + big as u64);
    let inside = |a: u64| ranges.iter().any(|r| r.contains(&a));
    // The second round: its swap-outs recorded, then its faults.
    let mut outs = std::collections::HashMap::new();
    let (mut faults, mut joined) = (0, 0);
    for r in &t.records {
        match *r {
            Record::SwapOut { vaddr, .. } if inside(vaddr) => {
                *outs.entry(vaddr).or_insert(0) += 1;
            }
            Record::SwapFault { addr, entry, .. } if inside(addr) && !outs.is_empty() => {
                faults += 1;
                joined += entry.is_some() as usize;
            }
            _ => {}
        }
    }
    let pages = 2 * big / page;
    let twice = outs.values().filter(|&&n| n > 1).count();
    eprintln!(
        "low {low:?} high {high:?}: {} pages named by {} swap-outs ({twice} twice); {faults} faults, {joined} joined",
        outs.len(),
        outs.values().sum::<i32>()
    );
    assert_eq!(
        outs.len(),
        pages,
        "every page swapped out at its own address"
    );
    assert_eq!(twice, 0, "no page named for another");
    assert_eq!(
        (faults, joined),
        (pages, pages),
        "every fault joins its swap-out"
    );
    // SAFETY: the mappings above.
    unsafe {
        libc::munmap(low.cast(), big);
        libc::munmap(high.cast(), big);
    }
    drop(swap);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The live-test lock, the scratch directory, the trace and the recording.
type Recording = (
    std::sync::MutexGuard<'static, ()>,
    PathBuf,
    PathBuf,
    swaptrace::record::Recorded,
);

/// Under the live-test lock, `spec` recorded to `file` as
/// [`record_in_cgroup`] does, swap and cgroup gone again, the workload
/// succeeded.
fn recorded(test: &str, file: &str, spec: &WorkloadSpec) -> Recording {
    let lock = live(test);
    let dir = scratch();
    let out = dir.join(file);
    let (r, swap, cg) = record_in_cgroup(&dir, out.clone(), spec, None);
    drop((swap, cg));
    assert_eq!(r.exit_code, Some(0), "workload failed (OOM?)");
    (lock, dir, out, r)
}

/// [`recorded`] with 256 MiB of `spec`.
fn recorded_256m(test: &str, file: &str, spec: WorkloadSpec) -> Recording {
    let spec = WorkloadSpec {
        size_bytes: 256 << 20,
        ..spec
    };
    recorded(test, file, &spec)
}

/// `t` replayed through the readahead `policies`, with the memory and
/// device the recording tells.
fn replayed(
    t: &swaptrace::trace::Loaded,
    policies: &str,
) -> swaptrace::replay::readahead::ReadaheadReplay {
    swaptrace::replay::readahead::run(
        t,
        &swaptrace::replay::ReplayRequest {
            policies: Some(policies),
            params: &[],
            memory_pages: None,
            device: None,
        },
    )
    .unwrap()
}

/// Records `spec` run in a 128 MiB memory cgroup over a 1 GiB swap file
/// in `dir`; the guards (swap, cgroup) come back to be dropped after the checks.
fn record_in_cgroup(
    dir: &std::path::Path,
    out: PathBuf,
    spec: &WorkloadSpec,
    twins: Option<swaptrace::probe::Twins>,
) -> (swaptrace::record::Recorded, lab::SwapFile, lab::MemCgroup) {
    let swap = lab::SwapFile::create(dir, 1 << 30, None).unwrap();
    let cg = lab::MemCgroup::create("swaptrace-test-", 128 << 20).unwrap();
    let r = record(&RecordOptions {
        output: out,
        command: swaptrace::record::workload_command(std::path::Path::new(EXE), spec),
        cgroup: Some(cg.path().to_path_buf()),
        twins,
        ..RecordOptions::default()
    })
    .unwrap();
    (r, swap, cg)
}

#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn cgroup_filter_keeps_only_the_cgroups_tasks() {
    let _lock = live("cgroup_filter_keeps_only_the_cgroups_tasks");
    let dir = scratch();
    let out = dir.join("cg.swt");
    let spec = WorkloadSpec {
        size_bytes: 256 << 20,
        pattern: Pattern::ShuffledBlocks { block_pages: 16 },
        passes: 1,
        seed: 5,
        ..WorkloadSpec::default()
    };
    let (r, _swap, cg) = record_in_cgroup(&dir, out.clone(), &spec, None);
    assert_eq!(r.exit_code, Some(0));
    let t = read_trace(&out).unwrap();
    // Every task seen is the workload: one process, alone in the cgroup,
    // doing its own memcg reclaim; not this (recording) process.
    let pids: std::collections::BTreeSet<u32> = t
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Task { pid, .. } => Some(*pid),
            _ => None,
        })
        .collect();
    eprintln!("pids seen: {pids:?}, {:?}", r.summary);
    assert_eq!(pids.len(), 1, "{pids:?}");
    assert!(!pids.contains(&std::process::id()));
    assert!(r.summary.faults > 20_000, "{:?}", r.summary);
    assert!(r.summary.swap_outs > 20_000, "{:?}", r.summary);
    assert!(t.header.target.contains("cgroup"));
    assert_eq!(t.header.memory_limit_bytes, Some(128 << 20));
    drop(cg);
    drop(_swap);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--twins always` on this kernel: every swap-path program is attached
/// twice, and two processes swapping at once are recorded once per call,
/// as vmstat counts them (a duplicate or a lost call would show here).
#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn twins_record_each_call_once() {
    let _lock = live("twins_record_each_call_once");
    let dir = scratch();
    let spec = WorkloadSpec {
        size_bytes: 256 << 20,
        pattern: Pattern::ShuffledBlocks { block_pages: 16 },
        passes: 2,
        procs: 2,
        seed: 3,
        zero_every: 8,
        ..WorkloadSpec::default()
    };
    let twins = Some(swaptrace::probe::Twins::All);
    let (r, _swap, cg) = record_in_cgroup(&dir, dir.join("twins.swt"), &spec, twins);
    assert_eq!(r.exit_code, Some(0), "workload failed (OOM?)");
    let rows = vmstat_check(
        &r.summary,
        &r.vmstat_delta,
        Seen::from_attach(r.attached.iter().map(String::as_str)),
    );
    eprintln!("{} programs twinned\n{}", r.twinned, check_text(&rows));
    let twinned: Vec<&str> = r
        .bpf_stats
        .iter()
        .filter(|p| p.twinned)
        .map(|p| p.program.as_str())
        .collect();
    assert!(r.twinned >= 10, "{} twins: {twinned:?}", r.twinned);
    assert!(twinned.contains(&"mm_vmscan_write_folio"), "{twinned:?}");
    assert!(
        r.bpf_stats.iter().all(|p| !p.program.ends_with("_2")),
        "a twin's figures are its program's"
    );
    assert!(r.summary.pswpin() > 50_000, "{:?}", r.summary);
    assert_rows_agree(&rows);
    drop(cg);
    drop(_swap);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Seed 001 on a kernel without a free probe: the swap entries a killed
/// process frees at exit are seen as zap batches, and add up to its VmSwap.
#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn exit_frees_are_recorded_as_zap_batches() {
    let _lock = live("exit_frees_are_recorded_as_zap_batches");
    let dir = scratch();
    let _swap = lab::SwapFile::create(&dir, 1 << 30, None).unwrap();
    let cg = lab::MemCgroup::create("swaptrace-zap-", 64 << 20).unwrap();
    let mut holder = std::process::Command::new(EXE);
    holder
        .args([
            "workload",
            "--size",
            "256M",
            "--pattern",
            "shuffled-blocks:16",
            "--hold",
        ])
        .stdout(std::process::Stdio::piped());
    lab::enter_cgroup_on_exec(&mut holder, cg.path());
    let mut holder = holder.spawn().unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert!(line.contains("holding"), "{line}");
    let pid = holder.id();
    let swapped = lab::proc_kib(&format!("/proc/{pid}/status"), "VmSwap").unwrap() / 4;
    let out = dir.join("zap.swt");
    let mut rec = std::process::Command::new(EXE)
        .args([
            "record",
            "--duration",
            "60s",
            "--pid",
            &pid.to_string(),
            "-o",
        ])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2));
    holder.kill().unwrap();
    holder.wait().unwrap();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(rec.id() as i32, libc::SIGINT) };
    assert!(rec.wait().unwrap().success());
    let t = read_trace(&out).unwrap();
    let spans = swaptrace::replay::free::zap_spans(&t.records);
    eprintln!(
        "VmSwap {swapped} pages; {}",
        swaptrace::report::zap_text(&spans)
    );
    assert_eq!(spans.len(), 1, "one address space: {spans:?}");
    let s = &spans[0];
    assert_eq!(s.exiting, s.batches, "all at exit (SIGKILL: no munmap)");
    // Up to a PTE table (512) per batch, so at least swapped/512 batches.
    assert!(s.batches >= swapped / 512, "{s:?}");
    // The first batch is not counted (the count before it is unknown), and
    // the percpu counter's global part lags by its batch per CPU.
    let freed = s.freed().unwrap() as u64;
    assert!(
        freed <= swapped && swapped - freed <= 512 + 64 * 64,
        "freed {freed} of {swapped}"
    );
    drop(cg);
    drop(_swap);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Seed 003 on this host: with zswap on, stores, loads, disk reads and
/// writebacks recorded from the memcg counters match /proc/vmstat, and
/// the header and footer carry zswap's settings and pool.
#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn zswap_traffic_matches_vmstat() {
    let _lock = live("zswap_traffic_matches_vmstat");
    let knob = "/sys/module/zswap/parameters/enabled";
    if !std::path::Path::new(knob).exists() {
        eprintln!("SKIPPED zswap_traffic_matches_vmstat: this kernel has no zswap ({knob})");
        return;
    }
    let _zswap = lab::Knob::set(knob, "Y").unwrap();
    let dir = scratch();
    let out = dir.join("zswap.swt");
    let r = run_demo(
        std::path::Path::new(EXE),
        &DemoOptions {
            command: None,
            workload: WorkloadSpec {
                size_bytes: 256 << 20,
                pattern: Pattern::ShuffledBlocks { block_pages: 16 },
                passes: 2,
                seed: 9,
                // Pages compress about 2:1.
                fill: 2,
                ..WorkloadSpec::default()
            },
            limit_bytes: 128 << 20,
            swap_bytes: 1 << 30,
            swap_dir: dir.clone(),
            output: out.clone(),
            loop_device: true,
            progress: false,
        },
    )
    .expect("recording");
    assert_eq!(r.exit_code, Some(0), "workload failed (OOM?)");
    let rows = vmstat_check(
        &r.summary,
        &r.vmstat_delta,
        Seen::from_attach(r.attached.iter().map(String::as_str)),
    );
    eprintln!("{}", check_text(&rows));
    let s = &r.summary;
    assert!(s.swap_out_zswap > 20_000, "zswap must store: {s:?}");
    assert!(s.fault_zswap_loads > 5_000, "zswap must load: {s:?}");
    assert_rows_agree(&rows);
    let t = read_trace(&out).unwrap();
    assert_eq!(t.header.zswap.get("enabled").map(String::as_str), Some("Y"));
    let pool = &t.footer.as_ref().unwrap().zswap_pool;
    assert!(
        pool.iter()
            .any(|p| p.stored_kib > p.pool_kib && p.pool_kib > 0),
        "pool samples with compression: {pool:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Seed 004's test in small: khugepaged collapses a region that was pushed
/// to swap and touched skipping one page in 20, swapping the skipped pages
/// in. Every collapse and swap-in is recorded, and the collapses match the
/// kernel's own counters.
#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn khugepaged_collapses_and_swapins_are_recorded() {
    let _lock = live("khugepaged_collapses_and_swapins_are_recorded");
    let k = "/sys/kernel/mm/transparent_hugepage";
    if !std::path::Path::new(k).exists() {
        eprintln!("SKIPPED khugepaged test: no transparent huge pages ({k})");
        return;
    }
    let _knobs = [
        lab::Knob::set(format!("{k}/enabled"), "madvise").unwrap(),
        lab::Knob::set(format!("{k}/khugepaged/scan_sleep_millisecs"), "100").unwrap(),
        lab::Knob::set(format!("{k}/khugepaged/alloc_sleep_millisecs"), "100").unwrap(),
        lab::Knob::set(format!("{k}/khugepaged/pages_to_scan"), "16384").unwrap(),
    ];
    let collapsed = || {
        lab::Knob::read(format!("{k}/khugepaged/pages_collapsed"))
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap()
    };
    let dir = scratch();
    let _swap = lab::SwapFile::create(&dir, 1 << 30, None).unwrap();
    let cg = lab::MemCgroup::create("swaptrace-khp-", 384 << 20).unwrap();
    let out = dir.join("khp.swt");
    let before = collapsed();
    let r = record(&RecordOptions {
        output: out.clone(),
        duration: Some(std::time::Duration::from_secs(8)),
        command: swaptrace::record::workload_command(
            std::path::Path::new(EXE),
            &WorkloadSpec {
                size_bytes: 64 << 20,
                pattern: Pattern::Sequential,
                passes: 1,
                seed: 4,
                pageout: true,
                skip_every: vec![20],
                thp: true,
                hold_after: true,
                ..WorkloadSpec::default()
            },
        ),
        spawn_cgroup: Some(cg.path().to_path_buf()),
        ..RecordOptions::default()
    })
    .unwrap();
    let pages_collapsed = collapsed() - before;
    let t = read_trace(&out).unwrap();
    let (mut ok, mut swapins, mut scans) = (0u64, Vec::new(), 0u64);
    // THP_COLLAPSE_ALLOC counts every attempt that got a huge page from
    // alloc_charge_folio(), whether the collapse then succeeded or not.
    let (mut attempts, mut allocated) = (0u64, 0u64);
    for rec in &t.records {
        if let Record::Collapse { status, .. } = rec {
            attempts += 1;
            let name = t
                .header
                .thp_scan_status
                .get(status)
                .map_or("", String::as_str);
            if !(name.contains("alloc_huge_page_fail") || name.contains("charge_fail")) {
                allocated += 1;
            }
        }
        match rec {
            Record::Collapse { status: 1, .. } => ok += 1,
            Record::KhugepagedSwapin {
                swapped_in, ret: 1, ..
            } => swapins.push(*swapped_in),
            Record::KhugepagedScan { .. } => scans += 1,
            _ => {}
        }
    }
    let alloc = t.footer.as_ref().unwrap().vmstat_end["thp_collapse_alloc"]
        - t.header.vmstat_start["thp_collapse_alloc"];
    eprintln!(
        "{scans} scans, {ok} collapses (thp_collapse_alloc {alloc}, pages_collapsed {pages_collapsed}), swap-ins {swapins:?}, {:?}",
        r.summary
    );
    assert_eq!(
        t.header.thp_scan_status.get(&1).map(String::as_str),
        Some("succeeded")
    );
    // 64 MiB is 32 huge pages: most collapse within the 8 s.
    assert!(ok >= 24, "{ok} collapses");
    assert_eq!(
        allocated, alloc,
        "collapse attempts past allocation vs thp_collapse_alloc"
    );
    assert_eq!(ok, pages_collapsed, "collapses vs pages_collapsed");
    // Each scan names its PMD (khugepaged-scan's raw row): a succeeded one
    // from the collapse's isolation, one PMD per collapse, every one inside
    // a VMA the swap-outs recorded.
    let vmas = t.vmas();
    let (mut named, mut collapsed_pmds) = (std::collections::HashSet::new(), Vec::new());
    for rec in &t.records {
        if let Record::KhugepagedScan {
            mm, pmd, status, ..
        } = *rec
        {
            if pmd == 0 {
                continue;
            }
            assert!(
                vmas.iter().any(|&(m, s, e)| m == mm && s <= pmd && pmd < e),
                "PMD {pmd:#x} of mm {mm} in no recorded VMA: {vmas:x?}"
            );
            assert_eq!(pmd % (2 << 20), 0, "{pmd:#x}");
            named.insert((mm, pmd));
            if status == 1 {
                collapsed_pmds.push((mm, pmd));
            }
        }
    }
    let distinct: std::collections::HashSet<_> = collapsed_pmds.iter().collect();
    assert_eq!(
        collapsed_pmds.len() as u64,
        ok,
        "succeeded scans naming their PMD"
    );
    assert_eq!(
        distinct.len(),
        collapsed_pmds.len(),
        "a PMD collapsed twice"
    );
    assert!(named.len() <= 32, "{} PMDs named in 64 MiB", named.len());
    // Each swapped in the one page in 20 left in swap (25 or 26 of 512);
    // an attempt that failed after its swap-in is retried and swaps in
    // only what is still out.
    let failed = attempts - ok;
    assert!(!swapins.is_empty());
    assert!(
        swapins.iter().all(|&n| (1..=27).contains(&n)),
        "{swapins:?}"
    );
    let full = swapins.iter().filter(|&&n| (24..=27).contains(&n)).count() as u64;
    assert!(
        full + failed >= ok && full <= ok + failed,
        "{full} full swap-ins for {ok} collapses and {failed} failed attempts: {swapins:?}"
    );
    // The footprint was sampled: it ends with huge pages.
    let fp = &t.footer.as_ref().unwrap().footprint;
    assert!(fp.iter().any(|f| f.anon_huge_kib >= 24 * 2048), "{fp:?}");
    drop(cg);
    drop(_swap);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every row of `record`'s vmstat comparison within 2% (this host has every
/// counter and the kind of each read and swap-out).
fn assert_rows_agree(rows: &[swaptrace::report::CheckRow]) {
    for row in rows {
        assert!(
            row.not_compared.is_none() && row.agrees(2.0),
            "{}: {} vs {} {} ({:?})",
            row.what,
            row.recorded,
            row.counter,
            row.kernel,
            row.not_compared
        );
    }
}

/// `record -v` shows the eBPF side's anomalies (aya-log): a 4 KiB ring
/// overflows under swap traffic, and each dropped event is reported, the
/// same kinds the footer counts as lost. Without -v nothing is said.
#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn verbose_record_reports_dropped_events_from_ebpf() {
    let _lock = live("verbose_record_reports_dropped_events_from_ebpf");
    let dir = scratch();
    let _swap = lab::SwapFile::create(&dir, 1 << 30, None).unwrap();
    let cg = lab::MemCgroup::create("swaptrace-verbose-", 128 << 20).unwrap();
    let run = |verbose: bool| {
        let out = dir.join(format!("v{verbose}.swt"));
        let mut cmd = std::process::Command::new(EXE);
        cmd.args(["record", "--json", "--ring-size", "4096", "--cgroup"])
            .arg(cg.path())
            .arg("-o")
            .arg(&out);
        if verbose {
            cmd.arg("-v");
        }
        let o = cmd
            .args(["--", EXE, "workload", "--size", "192M"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
        let lost: u64 = read_trace(&out)
            .unwrap()
            .footer
            .unwrap()
            .lost
            .values()
            .sum();
        (String::from_utf8_lossy(&o.stderr).into_owned(), lost)
    };
    let (said, lost) = run(true);
    eprintln!("{said}");
    assert!(lost > 0, "a 4 KiB ring lost nothing");
    let drops: Vec<&str> = said
        .lines()
        .filter(|l| l.starts_with("swaptrace: ebpf warn: ring buffer full"))
        .collect();
    assert!(!drops.is_empty(), "no drop reported with -v: {said}");
    // Each line once per read of the log, with its count: never more
    // drops reported than the footer counts lost (the log may drop too).
    let reported: u64 = drops
        .iter()
        .map(|l| {
            l.rsplit_once("(×")
                .and_then(|(_, n)| n.trim_end_matches(')').parse().ok())
                .unwrap_or(1)
        })
        .sum();
    assert!(reported <= lost, "{reported} drops reported, {lost} lost");
    let (quiet, lost) = run(false);
    assert!(lost > 0);
    assert!(!quiet.contains("ebpf"), "{quiet}");
    drop(cg);
    drop(_swap);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The tracepoint backend traces only faults of processes that may hold
/// swap entries: those marked at record's start (VmSwap) must have every
/// swap-in recorded, with none lost as "not known to hold swap entries".
#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn faults_of_a_process_swapped_out_before_recording_are_recorded() {
    let _lock = live("faults_of_a_process_swapped_out_before_recording_are_recorded");
    let dir = scratch();
    let swap = lab::SwapFile::create(&dir, 256 << 20, None).expect("swap");
    let out = dir.join("before.swt");
    let (bytes, page) = (32usize << 20, 4096usize);
    let p = swapped_out_mapping(bytes);
    let swapped = lab::proc_kib("/proc/self/status", "VmSwap").unwrap() * 1024 / page as u64;
    assert!(
        swapped as usize >= bytes / page * 9 / 10,
        "only {swapped} pages went out"
    );
    let mut rec = record_this_process(&out);
    let mut sum = 0u64;
    for off in (0..bytes).step_by(page) {
        // SAFETY: inside the mapping.
        sum += unsafe { p.add(off).read_volatile() } as u64;
    }
    assert!(sum > 0);
    // Dirtied and out again while recording: a rise of MM_SWAPENTS a page
    // at a time in the owner's context, which is no zap.
    for off in (0..bytes).step_by(page) {
        // SAFETY: inside the mapping.
        unsafe { p.add(off).write_volatile(2) };
    }
    // SAFETY: the mapping above.
    assert_eq!(
        unsafe { libc::madvise(p.cast(), bytes, libc::MADV_PAGEOUT) },
        0
    );
    // SAFETY: SIGINT ends the recording (it finalizes the trace).
    unsafe { libc::kill(rec.id() as i32, libc::SIGINT) };
    assert!(rec.wait().unwrap().success());
    // SAFETY: the mapping above.
    unsafe { libc::munmap(p.cast(), bytes) };
    let t = read_trace(&out).unwrap();
    let (lo, hi) = (p as u64, p as u64 + bytes as u64);
    let faults = t
        .records
        .iter()
        .filter(|r| matches!(r, Record::SwapFault { addr, .. } if (lo..hi).contains(addr)))
        .count() as u64;
    let untraced: u64 = t
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Lost { what, count, .. } if what.contains("not known") => Some(*count),
            _ => None,
        })
        .sum();
    let zaps = t
        .records
        .iter()
        .filter(|r| matches!(r, Record::Zap { .. }))
        .count();
    let outs = t
        .records
        .iter()
        .filter(|r| matches!(r, Record::SwapOut { .. }))
        .count();
    eprintln!("{swapped} pages swapped out before recording; {faults} swap-in faults recorded, {untraced} untraced; {outs} swap-outs, {zaps} zaps");
    assert_eq!(untraced, 0);
    assert!(
        outs as u64 >= swapped * 9 / 10,
        "the second MADV_PAGEOUT: {outs}"
    );
    // Not even the first sight of the address space's count.
    assert_eq!(zaps, 0, "MADV_PAGEOUT is no zap");
    assert!(
        faults >= swapped * 99 / 100 && faults <= (bytes / page) as u64,
        "{faults} faults recorded for {swapped} pages swapped out"
    );
    drop(swap);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// munmap() while recording: a range cleared from the address space
/// (`maple_tree:ma_write`, a NULL store) is recorded as it happens, not
/// only once a new mapping takes it; what stays mapped is not. The upper
/// half goes a MiB at a time from its top: each range after the first
/// joins the empty one the last left, a store the kernel traces (one that
/// only replaces a VMA's slot in place is not traced).
#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn munmap_while_recording_is_recorded() {
    let _lock = live("munmap_while_recording_is_recorded");
    let dir = scratch();
    let swap = lab::SwapFile::create(&dir, 256 << 20, None).expect("swap");
    let out = dir.join("munmap.swt");
    let (bytes, page, piece) = (32usize << 20, 4096usize, 1usize << 20);
    // Out before recording: the recorder follows processes holding swap.
    let p = swapped_out_mapping(bytes);
    let touch = |from: usize, to: usize| write_pages(p, from, to);
    let mut rec = record_this_process(&out);
    // Faulted back while recorded: the trace holds these pages. Then the
    // upper half unmapped a MiB at a time, top down.
    touch(0, bytes);
    let half = bytes / 2;
    let gone: Vec<usize> = (half..bytes).step_by(piece).rev().collect();
    for &at in &gone {
        // SAFETY: a piece of the mapping above, still mapped.
        assert_eq!(unsafe { libc::munmap(p.add(at).cast(), piece) }, 0);
    }
    // The program goes on: a few pages out and in again.
    // SAFETY: the lower half, still mapped.
    assert_eq!(
        unsafe { libc::madvise(p.cast(), 64 * page, libc::MADV_PAGEOUT) },
        0
    );
    touch(0, 64 * page);
    // SAFETY: SIGINT ends the recording (it finalizes the trace).
    unsafe { libc::kill(rec.id() as i32, libc::SIGINT) };
    assert!(rec.wait().unwrap().success());
    // SAFETY: the lower half, still mapped.
    unsafe { libc::munmap(p.cast(), half) };
    let t = read_trace(&out).unwrap();
    let ranges: Vec<(u64, u64)> = t
        .records
        .iter()
        .filter_map(|r| match *r {
            Record::Unmapped { start, end, .. } => Some((start, end)),
            _ => None,
        })
        .collect();
    let (lo, mid, hi) = (p as u64, p as u64 + half as u64, p as u64 + bytes as u64);
    let faults = t
        .records
        .iter()
        .filter(|r| matches!(r, Record::SwapFault { addr, .. } if (lo..hi).contains(addr)))
        .count();
    let covered = |a: u64, b: u64| ranges.iter().any(|&(s, e)| s <= a && e >= b);
    let seen = gone
        .iter()
        .filter(|&&o| covered(lo + o as u64, lo + (o + piece) as u64))
        .count();
    eprintln!(
        "{faults} faults; {seen} of {} MiB recorded unmapped; ranges {ranges:x?}; mapping {lo:#x}..{mid:#x}..{hi:#x}",
        gone.len()
    );
    assert!(faults >= bytes / page * 9 / 10, "only {faults} faults");
    // All but the first (the top MiB) joined an empty range.
    for &o in &gone[1..] {
        let (a, b) = (lo + o as u64, lo + (o + piece) as u64);
        assert!(covered(a, b), "{a:#x}..{b:#x}, unmapped, not recorded");
    }
    assert!(
        !ranges.iter().any(|&(s, e)| s < mid && e > lo),
        "the lower half, still mapped, recorded as unmapped"
    );
    drop(swap);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn zaps_name_their_range() {
    let _lock = live("zaps_name_their_range");
    let dir = scratch();
    let swap = lab::SwapFile::create(&dir, 256 << 20, None).expect("swap");
    let out = dir.join("zap.swt");
    let (bytes, mib) = (16usize << 20, 1usize << 20);
    let p = swapped_out_mapping(bytes);
    let mut rec = record_this_process(&out);
    // Faulted back and paged out again while recorded: the trace holds
    // the pages, and they hold swap entries.
    write_pages(p, 0, bytes);
    // SAFETY: the mapping.
    assert_eq!(
        unsafe { libc::madvise(p.cast(), bytes, libc::MADV_PAGEOUT) },
        0
    );
    // madvise() of the first 4 MiB; then 8-10 MiB made a VMA of its own
    // (mprotect splits it out) and unmapped: an exact fit, which the maple
    // tree's tracepoint does not see.
    // SAFETY: inside the mapping.
    unsafe {
        assert_eq!(libc::madvise(p.cast(), 4 * mib, libc::MADV_DONTNEED), 0);
        let mid = p.add(8 * mib).cast();
        assert_eq!(libc::mprotect(mid, 2 * mib, libc::PROT_READ), 0);
        assert_eq!(libc::munmap(mid, 2 * mib), 0);
    }
    // SAFETY: SIGINT ends the recording (it finalizes the trace).
    unsafe { libc::kill(rec.id() as i32, libc::SIGINT) };
    assert!(rec.wait().unwrap().success());
    // SAFETY: the mapping, its piece at 8 MiB already gone.
    unsafe { libc::munmap(p.cast(), bytes) };
    let t = read_trace(&out).unwrap();
    let lo = p as u64;
    let (mut zapped, mut unmapped) = (Vec::new(), Vec::new());
    for r in &t.records {
        match *r {
            Record::Zapped { start, end, .. } => zapped.push((start - lo, end - lo)),
            Record::Unmapped { start, end, .. } if start >= lo => {
                unmapped.push((start - lo, end - lo))
            }
            _ => {}
        }
    }
    eprintln!("zapped {zapped:x?}; unmapped {unmapped:x?} (offsets in the mapping)");
    let m = mib as u64;
    assert!(
        zapped.iter().any(|&(s, e)| s == 0 && e == 4 * m),
        "madvise(MADV_DONTNEED) of 0..4 MiB not recorded"
    );
    assert!(
        unmapped.iter().any(|&(s, e)| s == 8 * m && e == 10 * m),
        "munmap() of 8..10 MiB not recorded"
    );
    let touches = |&(s, e): &(u64, u64)| s < 8 * m && e > 4 * m || s < 16 * m && e > 10 * m;
    assert!(
        !zapped.iter().chain(&unmapped).any(touches),
        "a range still mapped recorded as zapped or unmapped"
    );
    drop(swap);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Pages a system call faults in (GUP: `madvise(MADV_POPULATE_READ)`,
/// `_WRITE`, `mlock()`, a direct-I/O `read()` into them) take no user
/// fault: each is recorded as a swap fault of its own page, joined to its
/// swap-out, with the call's kind (read, write), and none passes for a zap.
#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn gup_swap_ins_are_recorded_at_their_pages() {
    let _lock = live("gup_swap_ins_are_recorded_at_their_pages");
    let dir = scratch();
    let swap = lab::SwapFile::create(&dir, 256 << 20, None).expect("swap");
    let out = dir.join("gup.swt");
    let (bytes, mib) = (16usize << 20, 1usize << 20);
    // 2 MiB of a file, read with O_DIRECT into 12..14 MiB.
    let data = dir.join("direct");
    std::fs::write(&data, vec![7u8; 2 * mib]).unwrap();
    let direct = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(&data)
            .unwrap()
    };
    let p = swapped_out_mapping(bytes);
    let mut rec = record_this_process(&out);
    // Faulted back and paged out again while recorded: the trace joins
    // the pages to their swap entries.
    write_pages(p, 0, bytes);
    // SAFETY: the mapping, and ranges inside it.
    unsafe {
        assert_eq!(libc::madvise(p.cast(), bytes, libc::MADV_PAGEOUT), 0);
        assert_eq!(
            libc::madvise(p.cast(), 4 * mib, libc::MADV_POPULATE_READ),
            0
        );
        let w = p.add(4 * mib).cast();
        assert_eq!(libc::madvise(w, 4 * mib, libc::MADV_POPULATE_WRITE), 0);
        let l = p.add(8 * mib).cast();
        assert_eq!(libc::mlock(l, 4 * mib), 0, "mlock");
        assert_eq!(libc::munlock(l, 4 * mib), 0);
        use std::os::fd::AsRawFd;
        let d = p.add(12 * mib).cast();
        let n = libc::read(direct.as_raw_fd(), d, 2 * mib);
        assert_eq!(n, 2 * mib as isize, "O_DIRECT read");
    }
    // SAFETY: SIGINT ends the recording (it finalizes the trace).
    unsafe { libc::kill(rec.id() as i32, libc::SIGINT) };
    assert!(rec.wait().unwrap().success());
    // SAFETY: the mapping.
    unsafe { libc::munmap(p.cast(), bytes) };
    let t = read_trace(&out).unwrap();
    let lo = p as u64;
    let page = |a: u64| ((a - lo) / 4096) as usize;
    let n = bytes / 4096;
    let (mut faults, mut writes, mut joined) = (vec![0u32; n], vec![false; n], 0);
    let mut zaps = 0;
    // The GUP faults come after the second paging out.
    let in_map = |a: u64| (lo..lo + bytes as u64).contains(&a);
    let (last_out, mm) = t.records.iter().fold((0, None), |(t0, m0), r| match *r {
        Record::SwapOut { ts, vaddr, mm, .. } if in_map(vaddr) => (t0.max(ts), Some(mm)),
        _ => (t0, m0),
    });
    assert!(mm.is_some(), "the paging out was not recorded");
    for r in &t.records {
        match *r {
            Record::SwapFault {
                ts,
                addr,
                entry,
                write,
                ..
            } if ts > last_out && in_map(addr) => {
                faults[page(addr)] += 1;
                writes[page(addr)] |= write;
                joined += entry.is_some() as usize;
            }
            Record::Zap { mm: m, ts, .. } if Some(m) == mm && ts > last_out => zaps += 1,
            _ => {}
        }
    }
    // Pages per MiB; 0..14 MiB faulted in, 14..16 MiB left.
    let m = n / 16;
    let once = faults[..14 * m].iter().filter(|&&c| c == 1).count();
    eprintln!(
        "GUP faults: {once} of {} pages faulted once, {joined} joined, {} after 14 MiB, {zaps} zaps",
        14 * m,
        faults[14 * m..].iter().sum::<u32>()
    );
    assert_eq!(
        once,
        14 * m,
        "each populated, locked or read-into page once"
    );
    assert_eq!(joined, 14 * m, "every GUP fault joined to its swap-out");
    assert!(faults[14 * m..].iter().all(|&c| c == 0));
    assert!(
        writes[..4 * m].iter().all(|&w| !w),
        "MADV_POPULATE_READ reads"
    );
    assert!(
        writes[4 * m..14 * m].iter().all(|&w| w),
        "_WRITE, mlock and a read() into the buffer write"
    );
    assert_eq!(zaps, 0, "a GUP swap-in recorded as a zap");
    drop(swap);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `swaptrace workload --willneed 16` in a 64 MiB cgroup: each run of 16
/// pages read into the swap cache by `madvise(MADV_WILLNEED)` before it is
/// read. Those reads are recorded with the call's range (`will_need`),
/// the records read what the kernel read, and the replay of the kernel's
/// own policy reads and faults as it did.
#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn willneed_reads_are_recorded_and_replayed() {
    let _lock = live("willneed_reads_are_recorded_and_replayed");
    let dir = scratch();
    let out = dir.join("willneed.swt");
    let r = run_demo(
        std::path::Path::new(EXE),
        &DemoOptions {
            command: None,
            workload: WorkloadSpec {
                size_bytes: 128 << 20,
                pattern: Pattern::ShuffledBlocks { block_pages: 16 },
                passes: 1,
                seed: 3,
                willneed: 16,
                ..WorkloadSpec::default()
            },
            limit_bytes: 64 << 20,
            swap_bytes: 512 << 20,
            swap_dir: dir.clone(),
            output: out.clone(),
            loop_device: false,
            progress: false,
        },
    )
    .expect("recording");
    assert_eq!(r.exit_code, Some(0), "workload failed (OOM?)");
    let t = read_trace(&out).unwrap();
    let (mut willneed, mut ranges) = (0u64, std::collections::BTreeSet::new());
    let mut write_ends = 0u64;
    for rec in &t.records {
        match *rec {
            Record::WillNeed { start, end, nr, .. } => {
                willneed += u64::from(nr);
                ranges.insert(end - start);
            }
            Record::WriteEnd { nr, .. } => write_ends += u64::from(nr),
            _ => {}
        }
    }
    let kernel = |c: &str| r.vmstat_delta.get(c).copied().unwrap_or(0).max(0) as u64;
    let read = kernel("pswpin") + kernel("swpin_zero") + kernel("zswpin");
    let recorded = r.summary.pages_read();
    eprintln!(
        "kernel read {read} pages; records {recorded}, {willneed} of them by MADV_WILLNEED \
         (range lengths {ranges:?}); pgmajfault {}",
        kernel("pgmajfault")
    );
    // Every write's I/O ended while recording, and was seen to.
    eprintln!(
        "pswpout {}, write_end pages {write_ends}",
        kernel("pswpout")
    );
    assert_eq!(t.header.write_ends, Some(true));
    assert_eq!(write_ends, kernel("pswpout"));
    assert!(willneed * 2 > read, "most reads are the calls'");
    assert_eq!(recorded, read);
    // Runs of 16 pages, the last one cut by the end of the memory.
    assert!(ranges.contains(&(16 * 4096)) && ranges.iter().all(|&l| l <= 16 * 4096));
    let replay = std::process::Command::new(EXE)
        .args(["replay", "--policy", "cluster,vma", "--json"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(replay.status.success());
    let j: serde_json::Value = serde_json::from_slice(&replay.stdout).unwrap();
    let own = j["kernel_policy"].as_str().unwrap();
    // In the order asked for.
    let m = &j["policies"][(own == "vma") as usize]["metrics"];
    // Within 2%. The major faults, a few dozen, are the pages the calls did
    // not read: the workload's own code, heap and stack, swapped out first
    // and faulted at its end, with cluster windows that a fault during a
    // write's I/O widens (PG_reclaim is PG_readahead: a readahead hit).
    // Without the trace's write ends the replay was 17 to 20 faults off in
    // 3 runs of 20; within a run of 16 pages. Without the calls' reads
    // replayed they would be thousands.
    for (c, slack) in [("pswpin", 0), ("pgmajfault", 16)] {
        let (got, want) = (m[c].as_u64().unwrap(), kernel(c));
        eprintln!("{own} {c}: replayed {got}, kernel {want}");
        assert!(
            got.abs_diff(want) <= (want / 50).max(slack),
            "{c}: {got} against {want}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A private anonymous mapping of `bytes` in this process, every page
/// written (not zero, so the swap-out writes it) and paged out; the caller
/// unmaps it.
fn swapped_out_mapping(bytes: usize) -> *mut u8 {
    // SAFETY: a new private anonymous mapping.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    } as *mut u8;
    assert_ne!(p as *mut libc::c_void, libc::MAP_FAILED);
    write_pages(p, 0, bytes);
    // SAFETY: the mapping above.
    assert_eq!(
        unsafe { libc::madvise(p.cast(), bytes, libc::MADV_PAGEOUT) },
        0
    );
    p
}

/// Writes each page of `[from, to)` of the mapping at `p` (not zero, so
/// that a swap-out writes it): a fault on each that is swapped out.
fn write_pages(p: *mut u8, from: usize, to: usize) {
    for off in (from..to).step_by(4096) {
        // SAFETY: the caller's mapping holds the range.
        unsafe { p.add(off).write_volatile((off / 4096) as u8 | 1) };
    }
}

/// `record --pid` of this process to `out` (20 s at most), once its probes
/// are attached (the trace is put in place then); SIGINT stops it.
fn record_this_process(out: &std::path::Path) -> std::process::Child {
    let pid = std::process::id().to_string();
    let rec = std::process::Command::new(EXE)
        .args([
            "record",
            "--quiet",
            "--duration",
            "20s",
            "--pid",
            &pid,
            "-o",
        ])
        .arg(out)
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !out.exists() {
        assert!(t0.elapsed().as_secs() < 20, "record did not start");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    rec
}

/// A row whose program fails to attach gives way to the next row, and the
/// programs it attached itself go: the raw khugepaged scan row fails
/// (forced), its `collapse_isolate` is detached, and the classic row
/// records the scans.
#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn a_failed_rows_own_programs_are_detached() {
    let _lock = live("a_failed_rows_own_programs_are_detached");
    let dir = scratch();
    let out = dir.join("failed-row.swt");
    std::env::set_var("SWAPTRACE_FAIL_PROGRAMS", "khugepaged_scan_pmd_raw");
    let r = record(&RecordOptions {
        output: out.clone(),
        duration: Some(std::time::Duration::from_millis(300)),
        ..RecordOptions::default()
    });
    std::env::remove_var("SWAPTRACE_FAIL_PROGRAMS");
    let r = r.unwrap();
    let has = |target: &str| r.attached.iter().filter(|a| a.ends_with(target)).count();
    assert_eq!(has(" mm_collapse_huge_page_isolate"), 0, "{:?}", r.attached);
    assert_eq!(has(" mm_khugepaged_scan_pmd"), 1, "{:?}", r.attached);
    assert_eq!(has(" mm_collapse_huge_page"), 1, "{:?}", r.attached);
    let t = read_trace(&out).unwrap();
    let scan = t
        .header
        .metrics
        .iter()
        .find(|m| m.metric == "khugepaged-scan");
    assert_eq!(
        scan.map(|m| m.attach.clone()),
        Some(vec![
            "huge_memory:mm_khugepaged_scan_pmd + mm_collapse_huge_page".to_string()
        ]),
        "{scan:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
