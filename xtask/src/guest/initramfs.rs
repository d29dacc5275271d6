//! The initramfs: static busybox and its applets, the static swaptrace,
//! swapon_prio, a static zstd, the kernel's modules in load order and `/init`.

use super::kernel::{install_module, module_list, Kernel};
use super::tools::static_zstd;
use super::{guest_dir, log, mkdir};
use crate::cmd::{capture, run};
use anyhow::{Context, Result};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const INIT_SH: &str = include_str!("../../guest/init.sh");
const SWAPON_PRIO_C: &str = include_str!("../../guest/swapon_prio.c");

pub fn build_initramfs(k: &Kernel, dir: &Path, binary: &Path) -> Result<PathBuf> {
    let stage = dir.join("initramfs");
    if stage.exists() {
        fs::remove_dir_all(&stage).with_context(|| format!("removing {}", stage.display()))?;
    }
    for d in [
        "bin",
        "sbin",
        "usr/bin",
        "usr/sbin",
        "dev",
        "proc",
        "sys",
        "tmp",
        "out",
        "etc",
        "lib/modules",
    ] {
        mkdir(&stage.join(d))?;
    }
    // busybox and its applets.
    let bb = stage.join("bin/busybox");
    fs::copy("/bin/busybox", &bb).context("copying /bin/busybox")?;
    let applets = capture(Command::new("/bin/busybox").arg("--list-full"))?;
    for a in applets.lines().map(str::trim).filter(|a| !a.is_empty()) {
        if a == "bin/busybox" || a.ends_with("/busybox") {
            continue;
        }
        let link = stage.join(a);
        if link.exists() {
            continue;
        }
        if let Some(parent) = link.parent() {
            mkdir(parent)?;
        }
        std::os::unix::fs::symlink("/bin/busybox", &link)
            .with_context(|| format!("linking {}", link.display()))?;
    }
    // swaptrace, without debug info.
    let st = stage.join("bin/swaptrace");
    run(Command::new("objcopy")
        .arg("--strip-debug")
        .arg(binary)
        .arg(&st))?;
    // swapon with a priority: busybox-static's swapon has no -p.
    let tools = guest_dir().join("tools");
    mkdir(&tools)?;
    let src = tools.join("swapon_prio.c");
    fs::write(&src, SWAPON_PRIO_C).with_context(|| format!("writing {}", src.display()))?;
    run(Command::new("musl-gcc")
        .args(["-static", "-O2", "-o"])
        .arg(stage.join("bin/swapon_prio"))
        .arg(&src))?;
    // zstd, the zswap scenario's real program.
    fs::copy(static_zstd(&guest_dir())?, stage.join("bin/zstd")).context("copying zstd")?;
    // Modules, decompressed, in load order.
    let mut order = String::new();
    for m in module_list(k)? {
        order.push_str(&install_module(&m, &stage.join("lib/modules"))?);
        order.push('\n');
    }
    log(format!(
        "{}: modules {}",
        k.release,
        if order.is_empty() {
            "none".into()
        } else {
            order.trim().replace('\n', " ")
        }
    ));
    fs::write(stage.join("etc/modules"), &order).context("writing etc/modules")?;
    let init = stage.join("init");
    fs::write(&init, INIT_SH).context("writing init")?;
    run(Command::new("chmod").arg("755").arg(&init))?;
    // /dev/console, for /init's first output before devtmpfs.
    run(Command::new("mknod")
        .arg(stage.join("dev/console"))
        .args(["c", "5", "1"]))?;

    let img = dir.join("initrd.cpio.gz");
    let script = format!(
        "set -o pipefail; cd '{}' && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc -R 0:0 --quiet | gzip -1 > '{}'",
        stage.display(),
        img.display()
    );
    run(Command::new("bash").args(["-c", &script]))?;
    Ok(img)
}
