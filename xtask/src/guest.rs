//! `cargo xtask guest-test`: boots Debian 6.1 / 6.12 kernels under qemu (TCG)
//! with a busybox initramfs holding a static swaptrace, runs the scenarios of
//! `xtask/guest/init.sh` and checks what they wrote. Everything is cached
//! under `target/guest/`; every step skips what is already there.

use crate::{output, root, run};
use anyhow::{bail, ensure, Context, Result};
use clap::ValueEnum;
use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const INIT_SH: &str = include_str!("../guest/init.sh");
const SWAPON_PRIO_C: &str = include_str!("../guest/swapon_prio.c");
const MUSL: &str = "x86_64-unknown-linux-musl";
const SCENARIOS: &[&str] = &["doctor", "swapoff", "free", "fentry", "kprobe", "both"];
const BOOT_TIMEOUT: Duration = Duration::from_secs(600);
const SWAP_DISK: u64 = 1 << 30;
const OUT_DISK: u64 = 256 << 20;
/// Host packages from the normal sources: (package, file it provides).
const HOST_PACKAGES: &[(&str, &str)] = &[
    ("busybox-static", "/bin/busybox"),
    ("musl-tools", "/usr/bin/musl-gcc"),
    ("cpio", "/usr/bin/cpio"),
    ("xz-utils", "/usr/bin/xz"),
    ("kmod", "/sbin/depmod"),
];
/// Guest modules: (name, required). Dependencies come from modprobe.
const MODULES: &[(&str, bool)] = &[
    ("virtio_pci", false),
    ("virtio_blk", true),
    ("zsmalloc", false),
    ("zram", false),
];

/// What to boot and how big the guest and its workloads are.
#[derive(Clone, Debug, clap::Args)]
pub struct Opts {
    #[arg(long, value_enum, default_value = "all")]
    pub kernel: KernelSel,
    /// Keep the disk images and the initramfs tree after the run.
    #[arg(long)]
    pub keep: bool,
    /// Guest RAM (qemu -m). swapoff must fit the whole workload back in.
    #[arg(long, default_value = "1G")]
    pub mem: String,
    /// Workload size (swaptrace workload --size).
    #[arg(long, default_value = "400M")]
    pub size: String,
    /// Skip the build; use the static swaptrace already in target/.
    #[arg(long)]
    pub no_build: bool,
    /// memory.max of the guest cgroup the workloads run in ("max": none).
    #[arg(long, default_value = "256M")]
    pub memcg: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum KernelSel {
    #[value(name = "6.1")]
    V6_1,
    #[value(name = "6.12")]
    V6_12,
    #[value(name = "all")]
    All,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Series {
    V6_1,
    V6_12,
}

impl Series {
    fn label(self) -> &'static str {
        match self {
            Series::V6_1 => "6.1",
            Series::V6_12 => "6.12",
        }
    }

    /// Does this package name (without `linux-image-`, `-unsigned`) belong to the series?
    fn matches(self, rel: &str) -> bool {
        let Some(flavour_free) = rel.strip_suffix("-amd64") else {
            return false;
        };
        if flavour_free.contains("cloud") || flavour_free.contains("-rt") {
            return false;
        }
        match self {
            // 6.1.0-N
            Series::V6_1 => flavour_free
                .strip_prefix("6.1.0-")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())),
            // 6.12.N+debX
            Series::V6_12 => flavour_free.strip_prefix("6.12.").is_some_and(|rest| {
                rest.split('+')
                    .next()
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            }),
        }
    }
}

/// An unpacked kernel package.
struct Kernel {
    package: String,
    version: String,
    /// Kernel release, e.g. `6.1.0-57-amd64`.
    release: String,
    tree: PathBuf,
}

struct KernelRun {
    boot: Option<Duration>,
    total: Duration,
    result: Result<()>,
}

fn guest_dir() -> PathBuf {
    root().join("target/guest")
}

fn log(msg: impl AsRef<str>) {
    eprintln!("guest-test: {}", msg.as_ref());
}

fn mkdir(p: &Path) -> Result<()> {
    fs::create_dir_all(p).with_context(|| format!("creating {}", p.display()))
}

/// Runs a command and returns its stdout, failing with the command named.
fn capture(cmd: &mut Command) -> Result<String> {
    let out = cmd
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("starting {cmd:?}"))?;
    if !out.status.success() {
        bail!(
            "{cmd:?} failed: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub fn guest_test(opts: &Opts) -> Result<()> {
    let started = Instant::now();
    if !crate::is_root() {
        bail!("guest-test installs packages and makes device nodes: run it as root");
    }
    let base = guest_dir();
    mkdir(&base)?;
    install_tools(&base)?;
    for v in [&opts.mem, &opts.size, &opts.memcg] {
        ensure!(
            !v.is_empty() && v.bytes().all(|b| b.is_ascii_alphanumeric()),
            "bad size {v:?}: use e.g. 512M, 1G"
        );
    }
    let series = match opts.kernel {
        KernelSel::V6_1 => vec![Series::V6_1],
        KernelSel::V6_12 => vec![Series::V6_12],
        KernelSel::All => vec![Series::V6_1, Series::V6_12],
    };
    let kernels = series
        .iter()
        .map(|&s| fetch_kernel(&base, s))
        .collect::<Result<Vec<_>>>()?;
    let binary = if opts.no_build {
        let b = static_swaptrace();
        ensure!(b.exists(), "--no-build: {} does not exist", b.display());
        log(format!("--no-build: using {}", b.display()));
        b
    } else {
        build_swaptrace()?
    };

    let mut runs = Vec::new();
    for k in &kernels {
        log(format!("=== {} ({} {})", k.release, k.package, k.version));
        let t = Instant::now();
        let run = match boot_kernel(&base, k, &binary, opts) {
            Ok(boot) => KernelRun {
                boot: Some(boot),
                total: t.elapsed(),
                result: verify(&base.join(&k.release)),
            },
            Err(e) => KernelRun {
                boot: None,
                total: t.elapsed(),
                result: Err(e),
            },
        };
        runs.push((k, run));
    }
    let mut failed = Vec::new();
    for (k, r) in &runs {
        log(format!(
            "{}: boot to /init {}, boot + scenarios + poweroff {:.1} s: {}",
            k.release,
            r.boot
                .map(|b| format!("{:.1} s", b.as_secs_f64()))
                .unwrap_or_else(|| "n/a".into()),
            r.total.as_secs_f64(),
            if r.result.is_ok() { "ok" } else { "FAILED" }
        ));
        if let Err(e) = &r.result {
            failed.push(format!("{}: {e:#}", k.release));
        }
    }
    log(format!("total {:.1} s", started.elapsed().as_secs_f64()));
    if !failed.is_empty() {
        bail!("guest-test failed:\n{}", failed.join("\n"));
    }
    Ok(())
}

// ---- 1. host tools ----

fn installed(pkg: &str) -> bool {
    output(Command::new("dpkg-query").args(["-W", "-f=${Status}", pkg]))
        .is_some_and(|s| s.contains("install ok installed"))
}

fn install_tools(base: &Path) -> Result<()> {
    if output(Command::new("qemu-system-x86_64").arg("--version")).is_some() {
        log("qemu-system-x86_64: present");
    } else {
        log("installing qemu-system-x86 from bookworm-backports (private APT_CONFIG)");
        let conf = backports_apt_config(base)?;
        run(Command::new("apt-get")
            .args(["update", "-q"])
            .env("APT_CONFIG", &conf))?;
        run(Command::new("apt-get")
            .args(["install", "-y", "-q", "--no-install-recommends"])
            .args(["-t", "bookworm-backports", "qemu-system-x86"])
            .env("APT_CONFIG", &conf)
            .env("DEBIAN_FRONTEND", "noninteractive"))?;
        output(Command::new("qemu-system-x86_64").arg("--version"))
            .context("qemu-system-x86_64 --version still fails after installing qemu-system-x86")?;
    }
    let missing: Vec<&str> = HOST_PACKAGES
        .iter()
        .filter(|(p, f)| !installed(p) && !Path::new(f).exists())
        .map(|(p, _)| *p)
        .collect();
    if missing.is_empty() {
        log("busybox-static, musl-tools, cpio, xz-utils, kmod: present");
    } else {
        log(format!("installing {}", missing.join(", ")));
        let install = |update: bool| -> Result<()> {
            if update {
                run(Command::new("apt-get").args(["update", "-q"]))?;
            }
            run(Command::new("apt-get")
                .args(["install", "-y", "-q", "--no-install-recommends"])
                .args(&missing)
                .env("DEBIAN_FRONTEND", "noninteractive"))
        };
        // Try with the current lists first; refresh them only if that fails.
        if install(false).is_err() {
            install(true)?;
        }
    }
    let targets =
        output(Command::new("rustup").args(["target", "list", "--installed"])).unwrap_or_default();
    if targets.lines().any(|l| l.trim() == MUSL) {
        log(format!("rustup target {MUSL}: present"));
    } else {
        run(Command::new("rustup").args(["target", "add", MUSL]))?;
    }
    Ok(())
}

/// Writes the private APT config: one deb822 source with the machine's
/// bookworm URIs and keyring plus bookworm-backports (qemu's libraries come
/// from bookworm itself), own lists; /etc/apt stays untouched.
fn backports_apt_config(base: &Path) -> Result<PathBuf> {
    let dir = base.join("apt");
    let parts = dir.join("sources.list.d");
    let lists = dir.join("lists");
    mkdir(&parts)?;
    mkdir(&lists.join("partial"))?;
    let sys = Path::new("/etc/apt/sources.list.d/debian.sources");
    let text = fs::read_to_string(sys).with_context(|| format!("reading {}", sys.display()))?;
    let (uris, keyring, suites) = text
        .split("\n\n")
        .find_map(|stanza| {
            let field = |name: &str| {
                stanza.lines().find_map(|l| {
                    l.strip_prefix(name)
                        .and_then(|r| r.strip_prefix(':'))
                        .map(|v| v.trim().to_string())
                })
            };
            let suites = field("Suites")?;
            suites
                .split_whitespace()
                .any(|s| s == "bookworm")
                .then_some(())?;
            Some((field("URIs")?, field("Signed-By")?, suites))
        })
        .with_context(|| {
            format!(
                "no bookworm stanza with URIs and Signed-By in {}",
                sys.display()
            )
        })?;
    fs::write(
        parts.join("bookworm-backports.sources"),
        format!(
            "Types: deb\nURIs: {uris}\nSuites: {suites} bookworm-backports\nComponents: main\nSigned-By: {keyring}\n"
        ),
    )
    .context("writing the backports source")?;
    let conf = dir.join("apt.conf");
    fs::write(
        &conf,
        format!(
            "Dir::Etc::SourceParts \"{}\";\nDir::Etc::SourceList \"/dev/null\";\nDir::State::Lists \"{}\";\n",
            parts.display(),
            lists.display()
        ),
    )
    .with_context(|| format!("writing {}", conf.display()))?;
    Ok(conf)
}

// ---- 2. kernels ----

/// Sort key of a release: its numbers in order (6.12.117+deb12 → [6,12,117,12]).
fn numbers(s: &str) -> Vec<u64> {
    s.split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty())
        .filter_map(|p| p.parse().ok())
        .collect()
}

fn candidate(pkg: &str) -> Result<Option<String>> {
    let out = capture(Command::new("apt-cache").args(["policy", pkg]))?;
    Ok(out
        .lines()
        .find_map(|l| l.trim().strip_prefix("Candidate:"))
        .map(|v| v.trim().to_string())
        .filter(|v| v != "(none)"))
}

/// The highest non-cloud, non-rt image of the series: (package, version, release).
fn pick_kernel(series: Series) -> Result<(String, String, String)> {
    let pattern = match series {
        Series::V6_1 => r"^linux-image-6\.1\.0-[0-9]+-amd64",
        Series::V6_12 => r"^linux-image-6\.12\.[0-9]+",
    };
    let found = capture(Command::new("apt-cache").args(["search", "--names-only", pattern]))?;
    let mut names: Vec<(String, String)> = found
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(|name| {
            let rel = name.strip_prefix("linux-image-")?;
            let rel = rel.strip_suffix("-unsigned").unwrap_or(rel);
            series
                .matches(rel)
                .then(|| (name.to_string(), rel.to_string()))
        })
        .collect();
    // Highest release first; the signed package before -unsigned.
    names.sort_by(|a, b| {
        numbers(&b.1)
            .cmp(&numbers(&a.1))
            .then(a.0.len().cmp(&b.0.len()))
    });
    for (name, rel) in names {
        if let Some(v) = candidate(&name)? {
            return Ok((name, v, rel));
        }
    }
    bail!(
        "apt-cache search --names-only '{pattern}' found no installable non-cloud {} amd64 image (apt-get update?)",
        series.label()
    )
}

fn fetch_kernel(base: &Path, series: Series) -> Result<Kernel> {
    let (package, version, release) = pick_kernel(series)?;
    let tree = base.join(format!("k-{release}"));
    let vmlinuz = tree.join(format!("boot/vmlinuz-{release}"));
    if vmlinuz.exists() && modules_dir(&tree, &release).is_ok() {
        log(format!(
            "{package} {version}: unpacked in {}",
            tree.display()
        ));
    } else {
        let debs = base.join("debs");
        mkdir(&debs)?;
        let deb = find_deb(&debs, &package)?;
        let deb = match deb {
            Some(d) => d,
            None => {
                log(format!("downloading {package} {version}"));
                let mut dl = Command::new("apt-get");
                dl.args(["download", "-q"])
                    .arg(format!("{package}={version}"))
                    .current_dir(&debs);
                eprintln!("xtask: running {dl:?} in {}", debs.display());
                let st = dl.status().context("starting apt-get download")?;
                ensure!(
                    st.success(),
                    "apt-get download {package}={version} failed: {st}"
                );
                find_deb(&debs, &package)?.with_context(|| {
                    format!(
                        "apt-get download left no {package}_*.deb in {}",
                        debs.display()
                    )
                })?
            }
        };
        let tmp = base.join(format!("k-{release}.partial"));
        if tmp.exists() {
            fs::remove_dir_all(&tmp).with_context(|| format!("removing {}", tmp.display()))?;
        }
        log(format!("unpacking {}", deb.display()));
        run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&tmp))?;
        if tree.exists() {
            fs::remove_dir_all(&tree).with_context(|| format!("removing {}", tree.display()))?;
        }
        fs::rename(&tmp, &tree).with_context(|| format!("renaming to {}", tree.display()))?;
    }
    ensure!(vmlinuz.exists(), "{} has no {}", package, vmlinuz.display());
    Ok(Kernel {
        package,
        version,
        release,
        tree,
    })
}

fn find_deb(dir: &Path, package: &str) -> Result<Option<PathBuf>> {
    let prefix = format!("{package}_");
    for e in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let p = e?.path();
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name.starts_with(&prefix) && name.ends_with(".deb") {
            return Ok(Some(p));
        }
    }
    Ok(None)
}

/// `lib/modules/<release>` of an unpacked tree (or `usr/lib/...`).
fn modules_dir(tree: &Path, release: &str) -> Result<PathBuf> {
    ["lib/modules", "usr/lib/modules"]
        .iter()
        .map(|d| tree.join(d).join(release))
        .find(|p| p.is_dir())
        .with_context(|| format!("no lib/modules/{release} in {}", tree.display()))
}

// ---- 3. static swaptrace ----

/// The static binary; it also reads the traces back on the host, so the
/// checks use the very code that wrote them.
fn static_swaptrace() -> PathBuf {
    root().join(format!("target/{MUSL}/release/swaptrace"))
}

fn build_swaptrace() -> Result<PathBuf> {
    log(format!("building a static swaptrace ({MUSL})"));
    run(Command::new("cargo")
        .args(["build", "--release", "--target", MUSL, "-p", "swaptrace"])
        // No charts in the guest: plotting needs fontconfig, absent for musl.
        .args(["--no-default-features", "--features", "live"])
        .env("CC_x86_64_unknown_linux_musl", "musl-gcc"))?;
    let bin = static_swaptrace();
    let kind = capture(Command::new("file").arg("-L").arg(&bin))?;
    ensure!(
        kind.contains("statically linked") || kind.contains("static-pie linked"),
        "{} is not static: {}",
        bin.display(),
        kind.trim()
    );
    Ok(bin)
}

// ---- 4. initramfs ----

/// Modules to load, in dependency order, as paths inside the unpacked tree.
fn module_list(k: &Kernel) -> Result<Vec<PathBuf>> {
    let mdir = modules_dir(&k.tree, &k.release)?;
    // depmod and modprobe -d want BASE with BASE/lib/modules/<release>.
    let base = mdir
        .parent()
        .and_then(Path::parent)
        .and_then(Path::parent)
        .context("modules dir has no base")?;
    if !mdir.join("modules.dep").exists() {
        // Debian's postinst runs depmod; the unpacked package has no modules.dep.
        log(format!("depmod for {}", k.release));
        run(Command::new("depmod").arg("-b").arg(base).arg(&k.release))?;
    }
    let mut list: Vec<PathBuf> = Vec::new();
    for &(name, required) in MODULES {
        let out = Command::new("modprobe")
            .arg("-d")
            .arg(base)
            .args(["-S", &k.release, "--show-depends", name])
            .output()
            .with_context(|| format!("starting modprobe --show-depends {name}"))?;
        if !out.status.success() {
            let msg = format!(
                "modprobe -d {} -S {} --show-depends {name}: {}",
                base.display(),
                k.release,
                String::from_utf8_lossy(&out.stderr).trim()
            );
            if required {
                bail!(msg);
            }
            log(format!("skipping {name}: {msg}"));
            continue;
        }
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let mut w = line.split_whitespace();
            match (w.next(), w.next()) {
                (Some("insmod"), Some(path)) => {
                    let mut p = PathBuf::from(path);
                    if !p.exists() {
                        p = base.join(path.trim_start_matches('/'));
                    }
                    ensure!(
                        p.exists(),
                        "modprobe named {path}, which is not in {}",
                        base.display()
                    );
                    if !list.contains(&p) {
                        list.push(p);
                    }
                }
                (Some("builtin"), Some(m)) => log(format!("{}: {m} is built in", k.release)),
                _ => {}
            }
        }
    }
    Ok(list)
}

/// Copies a module into `dst`, decompressing .xz/.zst; returns its file name.
fn install_module(src: &Path, dst: &Path) -> Result<String> {
    let name = src
        .file_name()
        .and_then(|n| n.to_str())
        .with_context(|| format!("bad module path {}", src.display()))?;
    let (plain, tool) = if let Some(s) = name.strip_suffix(".xz") {
        (s, Some("xz"))
    } else if let Some(s) = name.strip_suffix(".zst") {
        (s, Some("zstd"))
    } else {
        (name, None)
    };
    let out = dst.join(plain);
    match tool {
        Some(tool) => {
            let f =
                fs::File::create(&out).with_context(|| format!("creating {}", out.display()))?;
            let st = Command::new(tool)
                .args(["-d", "-c"])
                .arg(src)
                .stdout(f)
                .status()
                .with_context(|| format!("starting {tool} -d"))?;
            ensure!(st.success(), "{tool} -d -c {} failed: {st}", src.display());
        }
        None => {
            fs::copy(src, &out).with_context(|| format!("copying {}", src.display()))?;
        }
    }
    Ok(plain.to_string())
}

fn build_initramfs(k: &Kernel, dir: &Path, binary: &Path) -> Result<PathBuf> {
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

// ---- 5. disks and boot ----

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
fn boot_kernel(base: &Path, k: &Kernel, binary: &Path, opts: &Opts) -> Result<Duration> {
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
    let vmlinuz = k.tree.join(format!("boot/vmlinuz-{}", k.release));
    let mut cmd = Command::new("qemu-system-x86_64");
    cmd.args(["-accel", "tcg,thread=multi", "-m", &opts.mem, "-smp", "2"])
        .args(["-nographic", "-no-reboot"])
        .arg("-kernel")
        .arg(&vmlinuz)
        .arg("-initrd")
        .arg(&initrd)
        .arg("-append")
        .arg(format!(
            "console=ttyS0 panic=-1 quiet st.size={} st.memcg={}",
            opts.size, opts.memcg
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

// ---- 7. checks ----

fn json_file(p: &Path) -> Result<serde_json::Value> {
    let text = fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", p.display()))
}

/// Claims checked and failed over all kernels, for the closing line.
pub static CHECKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
pub static FAILED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Checks what the guest wrote into `<kernel_dir>/out`; prints a summary.
pub fn verify(kernel_dir: &Path) -> Result<()> {
    let out = kernel_dir.join("out");
    let host = static_swaptrace();
    let mut errors = Vec::new();
    for f in ["uname", "features", "kallsyms.txt"] {
        match fs::read_to_string(out.join(f)) {
            Ok(t) => log(format!("  {f}: {}", t.trim().replace('\n', " | "))),
            Err(e) => errors.push(format!("out/{f}: {e}")),
        }
    }
    for sc in SCENARIOS {
        let d = out.join(sc);
        if !d.is_dir() {
            errors.push(format!("{sc}: no out/{sc}/ directory"));
            continue;
        }
        let status = fs::read_to_string(d.join("status"))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "missing".into());
        let elapsed = fs::read_to_string(d.join("elapsed")).unwrap_or_default();
        let mut files: Vec<(String, u64)> = fs::read_dir(&d)
            .with_context(|| format!("reading {}", d.display()))?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let len = e.metadata().ok()?.len();
                Some((e.file_name().to_string_lossy().into_owned(), len))
            })
            .collect();
        files.sort();
        log(format!(
            "  {sc}: status {status}, {} s; {}",
            elapsed.trim(),
            files
                .iter()
                .map(|(n, l)| format!("{n} {l}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        if status != "0" {
            let steps = fs::read_to_string(d.join("steps.txt")).unwrap_or_default();
            errors.push(format!(
                "{sc}: status {status} (steps: {})",
                steps.trim().replace('\n', ", ")
            ));
        }
        for (name, _) in files.iter().filter(|(n, _)| n.ends_with(".swt")) {
            let p = d.join(name);
            match capture(Command::new(&host).arg("info").arg("--json").arg(&p)).and_then(|s| {
                serde_json::from_str::<serde_json::Value>(&s).context("info --json output")
            }) {
                Ok(v) => {
                    let fin = v.get("finalized").and_then(|f| f.as_bool()) == Some(true);
                    log(format!(
                        "    {name}: finalized {fin}, records {}",
                        v.get("records").map(|r| r.to_string()).unwrap_or_default()
                    ));
                    if !fin {
                        errors.push(format!("{sc}/{name}: not finalized"));
                    }
                }
                Err(e) => errors.push(format!("{sc}/{name}: swaptrace info --json failed: {e:#}")),
            }
        }
        let expect: &[&str] = match *sc {
            "doctor" => &["doctor.json", "doctor.txt"],
            "swapoff" => &["swapoff.swt", "swapoff.time"],
            "free" => &["free.swt", "free.time"],
            "fentry" => &["fentry.swt"],
            "kprobe" => &["kprobe.swt"],
            "both" => &["fentry.swt", "kprobe.swt"],
            _ => &[],
        };
        for f in expect.iter().chain(&["vmstat.before", "vmstat.after"]) {
            if !files.iter().any(|(n, _)| n == f) {
                errors.push(format!("{sc}: no {f}"));
            }
        }
        if *sc == "doctor" {
            if let Err(e) = json_file(&d.join("doctor.json")) {
                errors.push(format!("doctor: {e:#}"));
            }
        }
    }
    // The claims: seed 000 windows and hits, seed 001 batches, fentry vs kprobe.
    let verdict = swaptrace::report::verify_guest_out(&out);
    let checks = verdict.report.matches("[ok]").count() + verdict.failures.len();
    CHECKS.fetch_add(checks, std::sync::atomic::Ordering::Relaxed);
    FAILED.fetch_add(verdict.failures.len(), std::sync::atomic::Ordering::Relaxed);
    for line in verdict.report.lines() {
        log(format!("  {line}"));
    }
    errors.extend(verdict.failures);
    if errors.is_empty() {
        Ok(())
    } else {
        bail!(
            "{} check(s) failed:\n  {}",
            errors.len(),
            errors.join("\n  ")
        )
    }
}
