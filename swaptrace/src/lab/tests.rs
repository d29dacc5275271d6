#[test]
fn proc_fields_in_kib() {
    assert!(super::proc_kib("/proc/meminfo", "MemTotal").is_some_and(|k| k > 0));
    assert!(super::proc_kib("/proc/self/status", "VmHWM").is_some_and(|k| k > 0));
    assert_eq!(super::proc_kib("/proc/meminfo", "NoSuchField"), None);
    assert_eq!(super::proc_kib("/nonexistent", "MemTotal"), None);
}

use super::*;

#[test]
fn vmstat_read_delta() {
    let a = VmStat::read().unwrap();
    assert!(a.0.contains_key("pswpin") && a.0.contains_key("pgfault"));
    let _v: Vec<u8> = vec![1u8; 4 << 20];
    let b = VmStat::read().unwrap();
    let d = a.delta(&b);
    assert!(d["pgfault"] >= 0);
    let x = VmStat::parse("a 5\nb 7\n").unwrap();
    let y = VmStat::parse("a 3\nc 2\n").unwrap();
    let d = x.delta(&y);
    assert_eq!(d["a"], -2);
    assert_eq!(d["b"], -7);
    assert_eq!(d["c"], 2);
    assert_eq!(y.get("nope"), 0);
    let js = serde_json::to_string(&x).unwrap();
    assert_eq!(js, r#"{"a":5,"b":7}"#);
    assert_eq!(serde_json::from_str::<VmStat>(&js).unwrap(), x);
}

#[test]
fn proc_swaps() {
    let text = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                /dev/vda2                               partition\t2097148\t\t1024\t\t-2\n\
                /tmp/my\\040swap                          file\t\t262140\t\t0\t\t10\n";
    let v = parse_proc_swaps(text).unwrap();
    assert_eq!(v.len(), 2);
    assert_eq!(v[0].path, Path::new("/dev/vda2"));
    assert_eq!(v[0].priority, -2);
    assert_eq!(v[0].used_kib, 1024);
    assert_eq!(v[1].path, Path::new("/tmp/my swap"));
    assert_eq!(v[1].kind, "file");
    assert!(parse_proc_swaps("h\n/x file abc 0 0\n").is_err());
    let live = swap_devices().unwrap();
    println!("{}", serde_json::to_string(&live).unwrap());
}

#[test]
fn knob_restores() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("knob");
    fs::write(&p, "3\n").unwrap();
    {
        let k = Knob::set(&p, "0").unwrap();
        assert_eq!(k.old(), "3");
        assert_eq!(Knob::read(&p).unwrap(), "0");
    }
    assert_eq!(Knob::read(&p).unwrap(), "3");
    let r = std::panic::catch_unwind(|| {
        let _k = Knob::set(&p, "7").unwrap();
        panic!("boom");
    });
    assert!(r.is_err());
    assert_eq!(Knob::read(&p).unwrap(), "3");
    assert_eq!(restorable("always [madvise] never\n"), "madvise");
    assert!(Knob::set(dir.path().join("missing"), "1").is_err());
    assert!(!dir.path().join("missing").exists());
}

#[test]
#[ignore = "live: needs root, makes swap and a cgroup; `cargo xtask test` runs it as root (or: cargo test -- --ignored)"]
fn live_swap_in_memcg() {
    if let Err(e) = require_root() {
        panic!("live_swap_in_memcg cannot run: {e}");
    }
    let _lock = live_test_lock();
    mount_tracefs().unwrap();
    assert!(Path::new(TRACEFS).join("events").exists());
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();

    let vma = "/sys/kernel/mm/swap/vma_ra_enabled";
    let vma_before = Knob::read(vma).unwrap();
    let flipped = if vma_before == "true" {
        "false"
    } else {
        "true"
    };

    let swap = SwapFile::create(dir.path(), 256 << 20, Some(10)).unwrap();
    let lo = SwapFile::on_loop(dir.path(), 16 << 20, false, Some(1)).unwrap();
    let knob = Knob::set(vma, flipped).unwrap();
    assert_eq!(Knob::read(vma).unwrap(), flipped);
    let devs = swap_devices().unwrap();
    println!("swap devices: {devs:#?}");
    let find = |p: &Path| devs.iter().find(|d| d.path == p).cloned();
    let f = find(swap.path()).expect("swap file listed");
    assert_eq!(f.kind, "file");
    assert_eq!(f.priority, 10);
    let l = find(lo.path()).expect("loop swap listed");
    assert_eq!(l.rotational, Some(false));
    assert_eq!(l.synchronous, Some(false));
    println!("file on {} , loop {}", swap.device_name(), lo.device_name());

    let cg = MemCgroup::create("swaptrace-test-", 64 << 20).unwrap();
    let cg_path = cg.path().to_path_buf();
    println!("cgroup {} inode {}", cg.name(), cg.inode().unwrap());
    let before = VmStat::read().unwrap();
    let script = "cat /proc/self/cgroup; exec python3 -c \"import mmap;m=mmap.mmap(-1,128<<20);[m.__setitem__(slice(i,i+1),b'x') for i in range(0,128<<20,4096)]\"";
    let child = cg
        .spawn(
            Command::new("/bin/sh")
                .args(["-c", script])
                .stdout(std::process::Stdio::piped()),
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let after = VmStat::read().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    println!("child cgroups:\n{text}");
    assert!(out.status.success(), "workload failed: {}", out.status);
    assert!(
        text.lines()
            .any(|l| l.contains(":memory:") && l.ends_with(&cg.name())),
        "child not in {}",
        cg.name()
    );
    println!(
        "max usage {}",
        cg.read("memory.max_usage_in_bytes").unwrap().trim()
    );
    let delta: BTreeMap<_, _> = before
        .delta(&after)
        .into_iter()
        .filter(|(_, v)| *v != 0)
        .collect();
    println!("vmstat delta: {delta:?}");
    assert!(delta.get("pswpout").copied().unwrap_or(0) > 0);

    let (swap_path, lo_path) = (swap.path().to_path_buf(), lo.path().to_path_buf());
    let lo_name = lo.device_name().to_string();
    drop(cg);
    drop(knob);
    drop(lo);
    drop(swap);
    assert_eq!(Knob::read(vma).unwrap(), vma_before);
    assert!(!cg_path.exists(), "cgroup dir still there");
    let devs = swap_devices().unwrap();
    assert!(devs
        .iter()
        .all(|d| d.path != swap_path && d.path != lo_path));
    assert!(!Path::new("/sys/block")
        .join(&lo_name)
        .join("loop/backing_file")
        .exists());
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn synchronous_devices_by_disk_name() {
    use super::swap::synchronous_name;
    for d in ["zram0", "zram12", "ram0", "pmem0", "pmem1s"] {
        assert!(synchronous_name(d), "{d}");
    }
    for d in [
        "loop0", "sda", "nvme0n1", "vda", "ramdisk", "zram", "dm-0", "md0",
    ] {
        assert!(!synchronous_name(d), "{d}");
    }
}
