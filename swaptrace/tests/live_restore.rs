//! A killed run leaves nothing behind (issue 18, defect 13): `swaptrace demo`,
//! `record` and an example script (examples/lib.sh) are killed with SIGKILL at
//! several moments; then `swaptrace lab restore` (or the next live command)
//! must leave no swap, loop device, cgroup or process of theirs, and every
//! knob at its old value. Needs root; holds the live-test lock.
#![cfg(feature = "live")]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use swaptrace::lab::{self, journal};

const EXE: &str = env!("CARGO_BIN_EXE_swaptrace");
const KNOBS: [&str; 2] = [
    "/sys/kernel/mm/swap/vma_ra_enabled",
    "/proc/sys/vm/page-cluster",
];

fn live(test: &str) -> std::sync::MutexGuard<'static, ()> {
    if let Err(e) = lab::require_root() {
        panic!("{test} cannot run: {e}");
    }
    lab::live_test_lock()
}

fn scratch(tag: &str) -> PathBuf {
    let d = PathBuf::from(format!(
        "/var/tmp/swaptrace-test-{}-{tag}",
        std::process::id()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// What a run could leave: swap files in `dir` and loop devices over them
/// (on or not), the memory cgroups `demo` and `lab cgroup` make, the knobs'
/// values. Other processes' swap and cgroups are left out: other live runs
/// may come and go meanwhile.
#[derive(Debug, PartialEq)]
struct State {
    swaps: Vec<PathBuf>,
    loops: Vec<PathBuf>,
    cgroups: BTreeSet<String>,
    knobs: Vec<String>,
}

fn state(dir: &Path) -> State {
    let mine = |p: &Path| {
        p.parent() == Some(dir)
            && p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("swaptrace-swap-"))
    };
    let mut loops = Vec::new();
    for e in std::fs::read_dir("/sys/block").unwrap().flatten() {
        if let Ok(b) = std::fs::read_to_string(e.path().join("loop/backing_file")) {
            if mine(Path::new(b.trim_end().trim_end_matches(" (deleted)"))) {
                loops.push(e.path());
            }
        }
    }
    let loop_devs: Vec<PathBuf> = loops
        .iter()
        .filter_map(|p| p.file_name().map(|n| Path::new("/dev").join(n)))
        .collect();
    State {
        swaps: lab::swap_devices()
            .unwrap()
            .into_iter()
            .map(|d| d.path)
            .filter(|p| mine(p) || loop_devs.contains(p))
            .collect(),
        loops,
        cgroups: std::fs::read_dir("/sys/fs/cgroup/memory")
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("swaptrace-demo-") || n.starts_with("swaptrace-lab-"))
            .collect(),
        knobs: KNOBS.iter().map(|k| lab::Knob::read(k).unwrap()).collect(),
    }
}

/// Every process whose parent is `pid`, with its start time.
fn children(pid: u32) -> Vec<(u32, u64)> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        if rest.split_whitespace().nth(1) == Some(&pid.to_string()) {
            if let Some(st) = journal::start_time(p) {
                v.push((p, st));
            }
        }
    }
    v
}

fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(t.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn journal_of(pid: u32) -> PathBuf {
    Path::new(journal::JOURNAL_DIR).join(format!("{pid}.journal"))
}

/// `lab restore --json`: the owners it restored.
fn lab_restore() -> Vec<serde_json::Value> {
    let out = Command::new(EXE)
        .args(["lab", "restore", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "lab restore: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// After the kill and the restore: nothing of the run is left.
fn assert_clean(dir: &Path, before: &State, pid: u32, kids: &[(u32, u64)], when: &str) {
    let after = state(dir);
    assert_eq!(after, *before, "{when}: left behind");
    assert!(!journal_of(pid).exists(), "{when}: journal left");
    for (k, st) in kids {
        assert_ne!(journal::start_time(*k), Some(*st), "{when}: child {k} runs");
    }
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().starts_with("swaptrace-swap-"))
        .collect();
    assert!(left.is_empty(), "{when}: swap files left: {left:?}");
}

#[derive(Clone, Copy, Debug)]
enum Moment {
    /// The journal exists: the first change is being made.
    FirstChange,
    /// Swap is on (the cgroup may not be made yet).
    SwapOn,
    /// The workload runs and is being recorded.
    Recording,
}

fn demo(dir: &Path, loop_device: bool) -> std::process::Child {
    let mut c = Command::new(EXE);
    c.args([
        "demo",
        "--json",
        "--size",
        "128M",
        "--limit",
        "32M",
        "--swap-size",
        "256M",
    ])
    .arg("--swap-dir")
    .arg(dir)
    .arg("-o")
    .arg(dir.join("demo.swt"))
    // A killed run leaves its trace there: the next one replaces it.
    .arg("--force")
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    if loop_device {
        c.arg("--loop-device");
    }
    c.spawn().unwrap()
}

#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn killed_demo_leaves_nothing_after_restore() {
    let _lock = live("killed_demo_leaves_nothing_after_restore");
    let dir = scratch("demo");
    let before = state(&dir);
    let cases = [
        (Moment::FirstChange, false),
        (Moment::SwapOn, true),
        (Moment::Recording, false),
        (Moment::Recording, true),
    ];
    for (i, (moment, loop_device)) in cases.into_iter().enumerate() {
        let when = format!("kill -9 at {moment:?} (loop device: {loop_device})");
        let mut d = demo(&dir, loop_device);
        let pid = d.id();
        let mut kids = Vec::new();
        match moment {
            Moment::FirstChange => {
                wait_for("the journal", Duration::from_secs(20), || {
                    journal_of(pid).exists()
                });
            }
            Moment::SwapOn => wait_for("swap on", Duration::from_secs(30), || {
                !state(&dir).swaps.is_empty()
            }),
            Moment::Recording => {
                // Not mkswap or losetup: the workload, recorded. Its pid is
                // taken when it is seen: a fast run may end before the kill.
                wait_for("the workload", Duration::from_secs(60), || {
                    kids = children(pid);
                    kids.iter().any(|(k, _)| {
                        std::fs::read(format!("/proc/{k}/cmdline"))
                            .is_ok_and(|c| c.windows(9).any(|w| w == b"\0workload"))
                    })
                });
                std::thread::sleep(Duration::from_millis(300));
            }
        }
        let during = state(&dir);
        // SAFETY: kill(2) of our own child.
        assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
        d.wait().unwrap();
        eprintln!(
            "{when}: at the kill: {} swap line(s), {} loop(s), {} lab cgroup(s), {} child(ren)",
            during.swaps.len(),
            during.loops.len(),
            during.cgroups.len(),
            kids.len()
        );
        if matches!(moment, Moment::Recording) {
            assert!(!kids.is_empty() && during.cgroups.len() > before.cgroups.len());
            // PR_SET_PDEATHSIG: the workload dies with demo, before any restore.
            for (k, st) in &kids {
                wait_for("the workload to die", Duration::from_secs(10), || {
                    journal::start_time(*k) != Some(*st)
                });
            }
        }
        if i == 2 {
            // The next live command restores first.
            let out = Command::new(EXE)
                .args(["top", "--json", "--interval", "100ms", "--count", "1"])
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            eprintln!("top: {err}");
            assert!(
                err.contains(&format!("restored what pid {pid} left")),
                "{err}"
            );
        } else {
            let r = lab_restore();
            eprintln!("{when}: {}", serde_json::to_string(&r).unwrap());
            assert!(
                r.iter().any(|o| o["owner"] == pid && o["removed"] == true),
                "{when}: pid {pid} not restored"
            );
        }
        assert_clean(&dir, &before, pid, &kids, &when);
    }
    // A run that is not killed undoes everything itself, journal included.
    let mut d = demo(&dir, true);
    let pid = d.id();
    assert!(d.wait().unwrap().success(), "demo failed");
    assert!(lab_restore().iter().all(|o| o["owner"] != pid));
    assert_clean(&dir, &before, pid, &[], "a finished demo");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn killed_example_script_leaves_nothing_after_restore() {
    let _lock = live("killed_example_script_leaves_nothing_after_restore");
    let dir = PathBuf::from("/var/tmp");
    let before = state(&dir);
    let work_before: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/lib.sh");
    let flip = if before.knobs[0] == "true" {
        "false"
    } else {
        "true"
    };
    // What the examples do: knobs, swap on a loop device, a cgroup, a
    // workload in it; then it is killed mid-run.
    let script = format!(
        ". {lib}\nneed_root\nknob_set /proc/sys/vm/page-cluster 1\necho {flip} > /sys/kernel/mm/swap/vma_ra_enabled\n\
         swap_on 64M 1 7\ncgroup_make $((16 << 20))\n\
         bash -c \"echo 0 > $CG/cgroup.procs; exec sleep 300\" &\nwait\n",
        lib = lib.display(),
    );
    let mut sh = Command::new("bash")
        .args(["-c", &script, "example"])
        .env("SWAPTRACE", EXE)
        .spawn()
        .unwrap();
    let pid = sh.id();
    wait_for("the script's setup", Duration::from_secs(60), || {
        let s = state(&dir);
        s.knobs[1] == "1"
            && s.knobs[0] == flip
            && s.cgroups.len() > before.cgroups.len()
            && s.cgroups.difference(&before.cgroups).any(|cg| {
                std::fs::read_to_string(format!("/sys/fs/cgroup/memory/{cg}/cgroup.procs"))
                    .is_ok_and(|p| !p.trim().is_empty())
            })
    });
    let kids = children(pid);
    let during = state(&dir);
    assert_ne!(during, before);
    assert!(during.swaps.len() > before.swaps.len());
    // SAFETY: kill(2) of our own child.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    sh.wait().unwrap();
    // Its background workload outlives the shell until restored.
    assert!(kids
        .iter()
        .any(|(k, st)| journal::start_time(*k) == Some(*st)));
    let r = lab_restore();
    eprintln!("example: {}", serde_json::to_string_pretty(&r).unwrap());
    let mine = r.iter().find(|o| o["owner"] == pid).expect("restored");
    assert_eq!(mine["removed"], true);
    // The knob journaled first is written back last.
    let undone = mine["undone"].as_array().unwrap();
    assert_eq!(undone.last().unwrap()["change"]["kind"], "knob");
    for (k, st) in &kids {
        wait_for(
            "the script's processes to go",
            Duration::from_secs(10),
            || journal::start_time(*k) != Some(*st),
        );
    }
    assert_clean(&dir, &before, pid, &[], "example script");
    // And `lab restore` again finds nothing.
    assert!(lab_restore().iter().all(|o| o["owner"] != pid));
    // The script's scratch directory (mktemp -d, not journaled) is ours to remove.
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.starts_with("swaptrace-example.") && !work_before.contains(&n) {
            std::fs::remove_dir_all(e.path()).unwrap();
        }
    }
}

/// `record -- CMD` killed while it records: the command dies with it, the
/// journal is cleared by the next restore, and the trace is under its name,
/// readable up to its last chunk and reported as cut (no footer).
#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn killed_record_leaves_its_trace_and_no_process() {
    let _lock = live("killed_record_leaves_its_trace_and_no_process");
    let dir = scratch("record");
    let swap = lab::SwapFile::create(&dir, 1 << 30, None).unwrap();
    let cg = lab::MemCgroup::create("swaptrace-killed-", 64 << 20).unwrap();
    let out = dir.join("killed.swt");
    let mut r = Command::new(EXE)
        .args(["record", "--quiet", "--json", "-o"])
        .arg(&out)
        .arg("--cgroup")
        .arg(cg.path())
        .args([
            "--", EXE, "workload", "--size", "128M", "--passes", "100000",
        ])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = r.id();
    let mut kids = Vec::new();
    wait_for("the workload", Duration::from_secs(30), || {
        kids = children(pid);
        !kids.is_empty() && journal_of(pid).exists()
    });
    // A few chunks written (the writer flushes at least once a second).
    std::thread::sleep(Duration::from_millis(2500));
    // SAFETY: kill(2) of our own child.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    r.wait().unwrap();
    // PR_SET_PDEATHSIG: the workload goes with it, before any restore.
    wait_for("the workload to die", Duration::from_secs(10), || {
        kids.iter()
            .all(|(k, st)| journal::start_time(*k) != Some(*st))
    });
    lab_restore();
    assert!(!journal_of(pid).exists(), "journal left");
    let t = swaptrace::trace::read_trace(&out).unwrap();
    assert!(t.footer.is_none());
    assert!(!t.records.is_empty(), "nothing recorded in 2.5 s");
    let said: Vec<String> = t.problems.iter().map(|p| p.to_string()).collect();
    assert!(said.iter().any(|p| p.contains("no footer")), "{said:?}");
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
    drop(cg);
    drop(swap);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[ignore = "live: needs root and BPF, changes kernel knobs; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn interrupted_fidelity_stops_and_restores() {
    let _lock = live("interrupted_fidelity_stops_and_restores");
    let dir = scratch("fidelity");
    let before = state(&dir);
    let mut f = Command::new(EXE)
        .args([
            "lab",
            "fidelity",
            "--runs",
            "2",
            "--limit-mib",
            "64",
            "--dir",
        ])
        .arg(&dir)
        .args(["--", "sleep", "60"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = f.id();
    let is_sleep = |k: u32| {
        std::fs::read_to_string(format!("/proc/{k}/comm")).is_ok_and(|c| c.trim() == "sleep")
    };
    wait_for("the first run's command", Duration::from_secs(60), || {
        children(pid).iter().any(|&(k, _)| is_sleep(k))
    });
    std::thread::sleep(Duration::from_millis(500));
    let t = Instant::now();
    // SAFETY: kill(2) of our own child.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGINT) }, 0);
    let status = f.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut f.stderr.take().unwrap(), &mut err).unwrap();
    // Ctrl-C ends the experiment: no second run, a failure that says why.
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "took {:?}",
        t.elapsed()
    );
    assert!(!status.success(), "{err}");
    assert!(
        err.contains("interrupted by SIGINT") && err.contains("0 of 4 runs done"),
        "{err}"
    );
    assert!(!err.contains("OOM"), "{err}");
    assert_eq!(state(&dir), before, "left behind");
    let traces: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().contains(".swt"))
        .collect();
    assert!(traces.is_empty(), "traces left: {traces:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
