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
}

impl Series {
    pub fn label(self) -> &'static str {
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
pub struct Kernel {
    pub package: String,
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

pub fn fetch_kernel(base: &Path, series: Series) -> Result<Kernel> {
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
    }

    #[test]
    fn releases_sort_by_their_numbers() {
        assert_eq!(numbers("6.12.117+deb12-amd64"), [6, 12, 117, 12, 64]);
        assert!(numbers("6.1.0-57-amd64") > numbers("6.1.0-9-amd64"));
    }
}
