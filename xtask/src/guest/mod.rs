//! `cargo xtask guest-test`: boots Debian 6.1 / 6.12 / 6.18 / 7.3 kernels under qemu (TCG)
//! with a busybox initramfs holding a static swaptrace, runs the scenarios of
//! `xtask/guest/init.sh` and checks what they wrote. Everything is cached
//! under `target/guest/`; every step skips what is already there.

mod boot;
mod claims;
mod initramfs;
mod kernel;
mod library;
mod tools;
mod verdict;
mod verify;

pub use tools::{build_swaptrace, install_static_build};
pub use verdict::Verdict;

use crate::cmd::{is_root, root};
use anyhow::{bail, ensure, Context, Result};
use kernel::{Series, Wanted};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

const DEFAULT_MEM: &str = "1G";
const DEFAULT_SIZE: &str = "400M";
const DEFAULT_MEMCG: &str = "256M";

/// What to boot and how big the guest and its workloads are.
#[derive(Clone, Debug, clap::Args)]
pub struct Opts {
    /// 6.1, 6.12, 6.18, 7.3 (the newest Debian image of the series), all
    /// (those four), or a Debian kernel release, e.g. 6.18.9+deb13-amd64.
    #[arg(long, default_value = "all")]
    pub kernel: KernelSel,
    /// Keep the disk images and the initramfs tree after the run.
    #[arg(long)]
    pub keep: bool,
    /// Guest RAM (qemu -m). swapoff must fit the whole workload back in.
    #[arg(long, default_value = DEFAULT_MEM)]
    pub mem: String,
    /// Workload size (swaptrace workload --size).
    #[arg(long, default_value = DEFAULT_SIZE)]
    pub size: String,
    /// Skip the build; use the static swaptrace already in target/.
    #[arg(long)]
    pub no_build: bool,
    /// memory.max of the guest cgroup the workloads run in ("max": none).
    #[arg(long, default_value = DEFAULT_MEMCG)]
    pub memcg: String,
}

/// The options' defaults, as `cargo xtask guest-test` with no flags.
impl Default for Opts {
    fn default() -> Opts {
        Opts {
            kernel: KernelSel::All,
            keep: false,
            mem: DEFAULT_MEM.into(),
            size: DEFAULT_SIZE.into(),
            no_build: false,
            memcg: DEFAULT_MEMCG.into(),
        }
    }
}

/// `--kernel`: a series (6.1, 6.12, 6.18, 7.3: its newest Debian image),
/// `all` (the four), or one Debian kernel release (`6.18.9+deb13-amd64`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelSel {
    All,
    One(Wanted),
}

impl std::str::FromStr for KernelSel {
    type Err = String;
    fn from_str(s: &str) -> Result<KernelSel, String> {
        if s == "all" {
            return Ok(KernelSel::All);
        }
        if let Some(series) = Series::ALL.iter().find(|x| x.label() == s) {
            return Ok(KernelSel::One(Wanted::Series(*series)));
        }
        if s.ends_with("-amd64") {
            return Ok(KernelSel::One(Wanted::Release(s.to_string())));
        }
        Err(format!(
            "--kernel {s:?}: use 6.1, 6.12, 6.18, 7.3, all, or a Debian release such as 6.18.9+deb13-amd64"
        ))
    }
}

impl KernelSel {
    fn wanted(&self) -> Vec<Wanted> {
        match self {
            KernelSel::All => Series::ALL.iter().map(|&s| Wanted::Series(s)).collect(),
            KernelSel::One(w) => vec![w.clone()],
        }
    }
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

/// Boots every selected kernel and checks its run. Err: no run could start
/// (tools, kernels, build); a kernel that does not boot is a failed check.
pub fn guest_test(opts: &Opts) -> Result<Verdict> {
    let started = Instant::now();
    if !is_root() {
        bail!("guest-test installs packages and makes device nodes: run it as root");
    }
    let base = guest_dir();
    mkdir(&base)?;
    tools::install_tools(&base)?;
    for v in [&opts.mem, &opts.size, &opts.memcg] {
        ensure!(
            !v.is_empty() && v.bytes().all(|b| b.is_ascii_alphanumeric()),
            "bad size {v:?}: use e.g. 512M, 1G"
        );
    }
    let kernels = opts
        .kernel
        .wanted()
        .iter()
        .map(|w| kernel::fetch(&base, w))
        .collect::<Result<Vec<_>>>()?;
    let binary = if opts.no_build {
        let b = tools::static_swaptrace();
        ensure!(b.exists(), "--no-build: {} does not exist", b.display());
        log(format!("--no-build: using {}", b.display()));
        b
    } else {
        tools::build_swaptrace()?
    };

    let mut runs = Vec::new();
    for k in &kernels {
        log(format!("=== {} ({} {})", k.release, k.package, k.version));
        let t = Instant::now();
        let booted = boot::boot_kernel(&base, k, &binary, opts);
        let total = t.elapsed();
        let verdict = match &booted {
            Ok(_) => verify::verify(&base.join(&k.release), &binary),
            Err(e) => {
                let mut v = Verdict::default();
                v.fail("boot, scenarios and poweroff", format!("{e:#}"));
                v
            }
        };
        for line in verdict.to_string().lines() {
            log(format!("  {line}"));
        }
        runs.push((k, booted.ok(), total, verdict));
    }
    let mut all = Verdict::default();
    for (k, boot, total, verdict) in runs {
        log(format!(
            "{}: boot to /init {}, boot + scenarios + poweroff {:.1} s: {}",
            k.release,
            boot.map(|b| format!("{:.1} s", b.as_secs_f64()))
                .unwrap_or_else(|| "n/a".into()),
            total.as_secs_f64(),
            if verdict.failed() == 0 {
                "ok"
            } else {
                "FAILED"
            }
        ));
        all.absorb(&k.release, verdict);
    }
    log(format!("total {:.1} s", started.elapsed().as_secs_f64()));
    Ok(all)
}

/// Prints the failed checks, then `guest-test: N passed, M failed` as the
/// last line; fails when a check failed or the run could not happen.
pub fn report(result: Result<Verdict>) -> ExitCode {
    let verdict = match result {
        Ok(v) => v,
        Err(e) => {
            log(format!("could not run: {e:#}"));
            println!("{}", Verdict::default().summary());
            return ExitCode::FAILURE;
        }
    };
    for c in verdict.failures() {
        log(format!("FAILED {}", c.what));
    }
    println!("{}", verdict.summary());
    if verdict.failed() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod sel_tests {
    use super::{KernelSel, Series, Wanted};

    #[test]
    fn kernel_selection_parses_series_all_and_releases() {
        let p = |s: &str| s.parse::<KernelSel>();
        assert_eq!(p("all").map(|k| k.wanted().len()), Ok(4));
        assert_eq!(p("7.3"), Ok(KernelSel::One(Wanted::Series(Series::V7_3))));
        assert_eq!(p("6.18"), Ok(KernelSel::One(Wanted::Series(Series::V6_18))));
        assert_eq!(
            p("6.18.9+deb13-amd64"),
            Ok(KernelSel::One(Wanted::Release("6.18.9+deb13-amd64".into())))
        );
        assert!(p("6.13").is_err());
        assert!(p("").is_err());
    }
}
