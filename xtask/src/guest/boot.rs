//! One qemu (TCG) run: the disks, the boot with the guest's progress echoed,
//! and the `out/` tar read back from the third disk.

use super::initramfs::build_initramfs;
use super::kernel::Kernel;
use super::{log, mkdir, Opts};
use crate::cmd::run;
use anyhow::{Context, Result};
use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BOOT_TIMEOUT: Duration = Duration::from_secs(1800);
const SWAP_DISK: u64 = 1 << 30;
const OUT_DISK: u64 = 256 << 20;

fn make_disk(p: &Path, size: u64, zero: bool) -> Result<()> {
    let ok = fs::metadata(p).is_ok_and(|m| m.len() == size);
    if ok && !zero {
        return Ok(());
    }
    let f = fs::File::create(p).with_context(|| format!("creating {}", p.display()))?;
    f.set_len(size)
        .with_context(|| format!("sizing {} to {size} bytes", p.display()))
}

/// Boots the kernel, runs the scenarios, extracts `out/`; returns the time
/// until /init's first line.
pub fn boot_kernel(base: &Path, k: &Kernel, binary: &Path, opts: &Opts) -> Result<Duration> {
    let dir = base.join(&k.release);
    mkdir(&dir)?;
    let initrd = build_initramfs(k, &dir, binary)?;
    let disks = [dir.join("a.img"), dir.join("b.img"), dir.join("c.img")];
    make_disk(&disks[0], SWAP_DISK, false)?;
    make_disk(&disks[1], SWAP_DISK, false)?;
    make_disk(&disks[2], OUT_DISK, true)?;
    let console = dir.join("console.log");
    let log_file =
        fs::File::create(&console).with_context(|| format!("creating {}", console.display()))?;
    let vmlinuz = &k.vmlinuz;
    let mut cmd = Command::new("qemu-system-x86_64");
    cmd.args(["-accel", "tcg,thread=multi", "-m", &opts.mem, "-smp", "2"])
        .args(["-nographic", "-no-reboot"])
        .arg("-kernel")
        .arg(vmlinuz)
        .arg("-initrd")
        .arg(&initrd)
        .arg("-append")
        .arg(format!(
            "console=ttyS0 panic=-1 quiet st.size={} st.memcg={}{}",
            opts.size,
            opts.memcg,
            // More kernel parameters, for experiments (preempt=voluntary…).
            std::env::var("SWAPTRACE_GUEST_APPEND")
                .map(|a| format!(" {a}"))
                .unwrap_or_default()
        ));
    for d in &disks {
        cmd.arg("-drive")
            .arg(format!("file={},if=virtio,format=raw", d.display()));
    }
    cmd.stdin(Stdio::null())
        .stdout(
            log_file
                .try_clone()
                .context("duplicating the console log handle")?,
        )
        .stderr(log_file);
    log(format!(
        "booting {} (console: {})",
        k.release,
        console.display()
    ));
    let t0 = Instant::now();
    let mut child = cmd.spawn().with_context(|| format!("starting {cmd:?}"))?;
    let mut reader = fs::File::open(&console).context("opening the console log")?;
    let mut pos = 0u64;
    let mut partial = String::new();
    let mut boot = None;
    let status = loop {
        std::thread::sleep(Duration::from_millis(500));
        // Echo the guest's own progress lines.
        reader.seek(SeekFrom::Start(pos)).ok();
        let mut buf = Vec::new();
        if reader.read_to_end(&mut buf).is_ok() {
            pos += buf.len() as u64;
            partial.push_str(&String::from_utf8_lossy(&buf));
            while let Some(i) = partial.find('\n') {
                let line: String = partial.drain(..=i).collect();
                if let Some(l) = line.trim_end().strip_prefix("[guest] ") {
                    boot.get_or_insert_with(|| t0.elapsed());
                    log(format!("[{:6.1}s] {l}", t0.elapsed().as_secs_f64()));
                }
            }
        }
        if let Some(st) = child.try_wait().context("waiting for qemu")? {
            break Some(st);
        }
        if t0.elapsed() > BOOT_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
    };
    let fail = |why: String| -> anyhow::Error {
        let text = fs::read_to_string(&console).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(40)..].join("\n");
        anyhow::anyhow!("{why}; tail of {}:\n{tail}", console.display())
    };
    match status {
        None => {
            return Err(fail(format!(
                "qemu killed after {} s",
                BOOT_TIMEOUT.as_secs()
            )))
        }
        Some(st) if !st.success() => return Err(fail(format!("qemu exited with {st}"))),
        Some(_) => {}
    }
    let text = fs::read_to_string(&console).unwrap_or_default();
    if !text.contains("[guest] done") {
        return Err(fail("the guest powered off before /init finished".into()));
    }
    log(format!(
        "{}: qemu ran {:.1} s (first /init line after {:.1} s)",
        k.release,
        t0.elapsed().as_secs_f64(),
        boot.unwrap_or_default().as_secs_f64()
    ));
    let out = dir.join("out");
    if out.exists() {
        fs::remove_dir_all(&out).with_context(|| format!("removing {}", out.display()))?;
    }
    mkdir(&out)?;
    run(Command::new("tar")
        .arg("-xf")
        .arg(&disks[2])
        .arg("-C")
        .arg(&out))?;
    if !opts.keep {
        for p in disks.iter().chain([&dir.join("initramfs")]) {
            let r = if p.is_dir() {
                fs::remove_dir_all(p)
            } else {
                fs::remove_file(p)
            };
            r.with_context(|| format!("removing {} (--keep keeps it)", p.display()))?;
        }
    }
    Ok(boot.unwrap_or_default())
}
