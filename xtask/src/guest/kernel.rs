//! Debian kernels: the newest image of each series from the host's APT
//! sources, downloaded and unpacked once, and the modules the guest loads.

use super::{log, mkdir};
use crate::cmd::{capture, run};
use anyhow::{bail, ensure, Context, Result};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Guest modules: (name, required). Dependencies come from modprobe.
const MODULES: &[(&str, bool)] = &[
    ("virtio_pci", false),
    ("virtio_blk", true),
    ("zsmalloc", false),
    ("zram", false),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Series {
    V6_1,
    V6_12,
    V6_18,
    V7_3,
}

impl Series {
    pub const ALL: [Series; 4] = [Series::V6_1, Series::V6_12, Series::V6_18, Series::V7_3];

    pub fn label(self) -> &'static str {
        match self {
            Series::V6_1 => "6.1",
            Series::V6_12 => "6.12",
            Series::V6_18 => "6.18",
            Series::V7_3 => "7.3",
        }
    }

    /// Where the series comes from: the machine's own sources (bookworm and
    /// its security suite) or the private trixie-backports source.
    fn trixie(self) -> bool {
        matches!(self, Series::V6_18 | Series::V7_3)
    }

    /// Does this package name (without `linux-image-`, `-unsigned`) belong to the series?
    fn matches(self, rel: &str) -> bool {
        let Some(flavour_free) = rel.strip_suffix("-amd64") else {
            return false;
        };
        if flavour_free.contains("cloud") || flavour_free.contains("-rt") {
            return false;
        }
        // X.Y.N+debZ
        let point = |prefix: &str| {
            flavour_free.strip_prefix(prefix).is_some_and(|rest| {
                rest.split('+')
                    .next()
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            })
        };
        match self {
            // 6.1.0-N
            Series::V6_1 => flavour_free
                .strip_prefix("6.1.0-")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())),
            Series::V6_12 => point("6.12."),
            Series::V6_18 => point("6.18."),
            Series::V7_3 => point("7.3."),
        }
    }
}

/// Which kernels to boot: a series (its newest image) or one release.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wanted {
    Series(Series),
    /// A Debian kernel release, e.g. `6.18.9+deb13-amd64`.
    Release(String),
}

/// An unpacked kernel package.
pub struct Kernel {
    pub package: String,
    /// The kernel image inside `tree`.
    pub vmlinuz: PathBuf,
    pub version: String,
    /// Kernel release, e.g. `6.1.0-57-amd64`.
    pub release: String,
    pub tree: PathBuf,
}

/// Sort key of a release: its numbers in order (6.12.117+deb12 → [6,12,117,12]).
fn numbers(s: &str) -> Vec<u64> {
    s.split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty())
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// apt-get/apt-cache, through the private trixie-backports config when `apt` is Some.
fn apt(tool: &str, conf: Option<&Path>) -> Command {
    let mut c = Command::new(tool);
    if let Some(conf) = conf {
        c.env("APT_CONFIG", conf);
    }
    c
}

fn candidate(pkg: &str, conf: Option<&Path>) -> Result<Option<String>> {
    let out = capture(apt("apt-cache", conf).args(["policy", pkg]))?;
    Ok(out
        .lines()
        .find_map(|l| l.trim().strip_prefix("Candidate:"))
        .map(|v| v.trim().to_string())
        .filter(|v| v != "(none)"))
}

/// A picked image: (package, version, release) and the APT config it comes from.
struct Picked {
    package: String,
    version: String,
    release: String,
    conf: Option<PathBuf>,
}

/// The highest non-cloud, non-rt image of the series.
fn pick_kernel(base: &Path, series: Series) -> Result<Picked> {
    let conf = if series.trixie() {
        Some(trixie_apt_config(base)?)
    } else {
        None
    };
    let pattern = match series {
        Series::V6_1 => r"^linux-image-6\.1\.0-[0-9]+-amd64",
        Series::V6_12 => r"^linux-image-6\.12\.[0-9]+",
        Series::V6_18 => r"^linux-image-6\.18\.[0-9]+",
        Series::V7_3 => r"^linux-image-7\.3\.[0-9]+",
    };
    let found =
        capture(apt("apt-cache", conf.as_deref()).args(["search", "--names-only", pattern]))?;
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
        if let Some(v) = candidate(&name, conf.as_deref())? {
            return Ok(Picked {
                package: name,
                version: v,
                release: rel,
                conf,
            });
        }
    }
    bail!(
        "apt-cache search --names-only '{pattern}' found no installable non-cloud {} amd64 image (apt-get update?)",
        series.label()
    )
}

/// One release by name, from the machine's sources or trixie-backports.
fn pick_release(base: &Path, release: &str) -> Result<Picked> {
    ensure!(
        !release.is_empty()
            && release
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".+-~".contains(&b)),
        "bad kernel release {release:?}: use e.g. 6.18.9+deb13-amd64"
    );
    let trixie = trixie_apt_config(base)?;
    for conf in [None, Some(trixie)] {
        for package in [
            format!("linux-image-{release}"),
            format!("linux-image-{release}-unsigned"),
        ] {
            if let Some(version) = candidate(&package, conf.as_deref())? {
                return Ok(Picked {
                    package,
                    version,
                    release: release.to_string(),
                    conf,
                });
            }
        }
    }
    bail!("no linux-image-{release} in the machine's APT sources or trixie-backports")
}

/// The packages that hold the files of `image`: itself and, from 6.19 on
/// (where `linux-image-…` is empty), its `linux-binary-…` (vmlinuz) and
/// `linux-modules-…` dependencies of the same version.
fn packages_of(p: &Picked) -> Result<Vec<String>> {
    let show = capture(
        apt("apt-cache", p.conf.as_deref()).args(["show", &format!("{}={}", p.package, p.version)]),
    )?;
    let mut out = vec![p.package.clone()];
    let deps = show
        .lines()
        .find_map(|l| l.strip_prefix("Depends:"))
        .unwrap_or_default();
    for dep in deps.split(',') {
        let name = dep.split_whitespace().next().unwrap_or_default();
        if name.starts_with("linux-binary-") || name.starts_with("linux-modules-") {
            out.push(name.to_string());
        }
    }
    Ok(out)
}

/// The private APT config for trixie-backports, its lists fetched once.
fn trixie_apt_config(base: &Path) -> Result<PathBuf> {
    let conf = super::tools::trixie_apt_config(base)?;
    let lists = base.join("apt-trixie/lists");
    let have = fs::read_dir(&lists)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .any(|e| e.file_name().to_string_lossy().contains("_Packages"))
        })
        .unwrap_or(false);
    if !have {
        log("apt-get update for trixie-backports (private APT_CONFIG)");
        run(apt("apt-get", Some(&conf)).args(["update", "-q"]))?;
    }
    Ok(conf)
}

pub fn fetch(base: &Path, wanted: &Wanted) -> Result<Kernel> {
    let picked = match wanted {
        Wanted::Series(s) => pick_kernel(base, *s)?,
        Wanted::Release(r) => pick_release(base, r)?,
    };
    fetch_kernel(base, picked)
}

fn fetch_kernel(base: &Path, picked: Picked) -> Result<Kernel> {
    let Picked {
        package,
        version,
        release,
        conf,
    } = &picked;
    let tree = base.join(format!("k-{release}"));
    if let (Some(vmlinuz), Ok(_)) = (vmlinuz_in(&tree, release), modules_dir(&tree, release)) {
        log(format!(
            "{package} {version}: unpacked in {}",
            tree.display()
        ));
        return Ok(Kernel {
            package: package.clone(),
            vmlinuz,
            version: version.clone(),
            release: release.clone(),
            tree,
        });
    }
    let debs = base.join("debs");
    mkdir(&debs)?;
    let tmp = base.join(format!("k-{release}.partial"));
    if tmp.exists() {
        fs::remove_dir_all(&tmp).with_context(|| format!("removing {}", tmp.display()))?;
    }
    for pkg in packages_of(&picked)? {
        let deb = match find_deb(&debs, &pkg)? {
            Some(d) => d,
            None => {
                log(format!("downloading {pkg} {version}"));
                let mut dl = apt("apt-get", conf.as_deref());
                dl.args(["download", "-q"])
                    .arg(format!("{pkg}={version}"))
                    .current_dir(&debs);
                eprintln!("xtask: running {dl:?} in {}", debs.display());
                let st = dl.status().context("starting apt-get download")?;
                ensure!(
                    st.success(),
                    "apt-get download {pkg}={version} failed: {st}"
                );
                find_deb(&debs, &pkg)?.with_context(|| {
                    format!("apt-get download left no {pkg}_*.deb in {}", debs.display())
                })?
            }
        };
        log(format!("unpacking {}", deb.display()));
        run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&tmp))?;
    }
    if tree.exists() {
        fs::remove_dir_all(&tree).with_context(|| format!("removing {}", tree.display()))?;
    }
    fs::rename(&tmp, &tree).with_context(|| format!("renaming to {}", tree.display()))?;
    let vmlinuz = vmlinuz_in(&tree, release)
        .with_context(|| format!("{package} {version} holds no vmlinuz for {release}"))?;
    Ok(Kernel {
        package: package.clone(),
        vmlinuz,
        version: version.clone(),
        release: release.clone(),
        tree,
    })
}

/// `boot/vmlinuz-<release>`, or `usr/lib/modules/<release>/vmlinuz` (6.19+'s linux-binary).
fn vmlinuz_in(tree: &Path, release: &str) -> Option<PathBuf> {
    [
        format!("boot/vmlinuz-{release}"),
        format!("usr/lib/modules/{release}/vmlinuz"),
        format!("lib/modules/{release}/vmlinuz"),
    ]
    .iter()
    .map(|p| tree.join(p))
    .find(|p| p.is_file())
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

/// Modules to load, in dependency order, as paths inside the unpacked tree.
pub fn module_list(k: &Kernel) -> Result<Vec<PathBuf>> {
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
pub fn install_module(src: &Path, dst: &Path) -> Result<String> {
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

#[cfg(test)]
mod tests {
    use super::{numbers, Series};

    #[test]
    fn series_takes_plain_amd64_images_only() {
        assert!(Series::V6_1.matches("6.1.0-57-amd64"));
        assert!(!Series::V6_1.matches("6.1.0-57-cloud-amd64"));
        assert!(!Series::V6_1.matches("6.1.0-57-rt-amd64"));
        assert!(!Series::V6_1.matches("6.1.0-57-arm64"));
        assert!(!Series::V6_1.matches("6.1.0--amd64"));
        assert!(Series::V6_12.matches("6.12.57+deb12-amd64"));
        assert!(!Series::V6_12.matches("6.12.57+deb12-cloud-amd64"));
        assert!(!Series::V6_12.matches("6.1.0-57-amd64"));
        assert!(!Series::V6_1.matches("6.12.57+deb12-amd64"));
        assert!(Series::V6_18.matches("6.18.15+deb13-amd64"));
        assert!(!Series::V6_18.matches("6.18.15+deb13-cloud-amd64"));
        assert!(!Series::V6_18.matches("6.1.0-57-amd64"));
        assert!(Series::V7_3.matches("7.3.4+deb13-amd64"));
        assert!(!Series::V7_3.matches("7.3.4+deb13-rt-amd64"));
        assert!(!Series::V7_3.matches("6.18.15+deb13-amd64"));
    }

    #[test]
    fn releases_sort_by_their_numbers() {
        assert_eq!(numbers("6.12.117+deb12-amd64"), [6, 12, 117, 12, 64]);
        assert!(numbers("6.1.0-57-amd64") > numbers("6.1.0-9-amd64"));
    }
}
