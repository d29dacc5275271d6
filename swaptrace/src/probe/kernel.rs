//! What the running kernel offers: BTF, kallsyms, kprobes, fentry.

use super::btf::Btf;
use super::table::{AttachPoint, Req};
use serde::Serialize;
use std::collections::HashSet;
use std::path::Path;

/// The result of trying to load a program kind.
#[derive(Clone, Debug, Serialize)]
pub enum Trial {
    Allowed,
    Refused(String),
    NotTried(String),
}

pub struct KernelFacts {
    pub release: String,
    /// How the kernel preempts kernel code ([`preemption`]).
    pub preempt: Result<Preempt, String>,
    pub btf: Result<Btf, String>,
    /// Text symbols (T/t) of /proc/kallsyms.
    pub text_symbols: HashSet<String>,
    /// Data symbols (D/d/B/b/R/r, and the statics of [`DATA_AS_TEXT`] under
    /// any type) and their addresses (0 when not root), present only with
    /// KALLSYMS_ALL.
    pub data_symbols: Vec<(String, u64)>,
    pub kallsyms_error: Option<String>,
    pub kprobes: Result<(), String>,
    pub fentry: Trial,
    /// DAMON schemes running (None: no DAMON sysfs interface).
    pub damon: Option<Vec<super::damon::DamonScheme>>,
}

pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 {
        v as u64
    } else {
        4096
    }
}

pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// Which programs `record` attaches twice (`swaptrace_common::twin`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Twins {
    #[default]
    None,
    /// fentry and fexit programs.
    Trampolines,
    /// Raw tracepoint programs too.
    All,
}

/// The first kernel (major, minor) taken to run raw tracepoint programs
/// with migration, not preemption, disabled (`__bpf_trace_##call`): they
/// were skipped on 7.3 (lazy), never on 6.12 (`preempt=full`) or 6.18
/// (lazy), so from the release after 6.18.
pub const RAW_TP_PREEMPTIBLE_FROM: (u32, u32) = (6, 19);

fn twins_for(preempt: &Result<Preempt, String>, release: &str) -> Twins {
    if !preempt.as_ref().map_or(true, Preempt::preempts_programs) {
        return Twins::None;
    }
    match release_number(release) {
        Some(v) if v < RAW_TP_PREEMPTIBLE_FROM => Twins::Trampolines,
        _ => Twins::All,
    }
}

/// (major, minor) of a release such as `6.12.118+deb12-amd64`.
pub fn release_number(release: &str) -> Option<(u32, u32)> {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

/// The kernel's preemption model and where it was read.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Preempt {
    /// `none`, `voluntary`, `full` or `lazy`.
    pub mode: String,
    pub source: String,
}

impl Preempt {
    /// Kernel code may be preempted anywhere: so may a tracing program
    /// (fentry/fexit run with migration disabled only; raw tracepoints too
    /// on 7.x). Another task's run of that program on the CPU is then
    /// skipped by the kernel's recursion guard: its event is lost.
    pub fn preempts_programs(&self) -> bool {
        matches!(self.mode.as_str(), "full" | "lazy")
    }

    /// What [`Preempt::preempts_programs`] costs the probes, in words.
    pub const SKIPS: &'static str =
        "a task preempted inside a program makes other tasks' runs of it on that CPU skip";
}

/// Where debugfs shows the preemption model.
pub const PREEMPT_DEBUGFS: &str = "/sys/kernel/debug/sched/preempt";

/// The mode of `sched/preempt` in debugfs: the one in parentheses
/// (`none voluntary (full) lazy`).
fn debugfs_mode(text: &str) -> Option<String> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('(')?.strip_suffix(')'))
        .map(str::to_string)
}

/// The `preempt=` of a kernel command line.
fn cmdline_mode(cmdline: &str) -> Option<String> {
    cmdline
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("preempt="))
        .next_back()
        .filter(|m| matches!(*m, "none" | "voluntary" | "full" | "lazy"))
        .map(str::to_string)
}

/// The default preemption mode a kernel config builds in.
pub fn config_preempt_mode(config: &str) -> Option<String> {
    let set = |k: &str| config.lines().any(|l| l.trim() == format!("CONFIG_{k}=y"));
    [
        ("PREEMPT_RT", "full"),
        ("PREEMPT_LAZY", "lazy"),
        ("PREEMPT", "full"),
        ("PREEMPT_VOLUNTARY", "voluntary"),
        ("PREEMPT_NONE", "none"),
    ]
    .iter()
    .find(|(k, _)| set(k))
    .map(|(_, m)| m.to_string())
}

/// The running kernel's preemption model: debugfs's `sched/preempt` when
/// mounted, else the command line's `preempt=` (the kernel may refuse a
/// mode: 7.x keeps only full and lazy), else the config's default
/// (`/boot/config-<release>`, else `/proc/config.gz`).
pub fn preemption(release: &str) -> Result<Preempt, String> {
    if let Some(mode) = std::fs::read_to_string(PREEMPT_DEBUGFS)
        .ok()
        .and_then(|t| debugfs_mode(&t))
    {
        return Ok(Preempt {
            mode,
            source: PREEMPT_DEBUGFS.into(),
        });
    }
    if let Some(mode) = std::fs::read_to_string("/proc/cmdline")
        .ok()
        .and_then(|t| cmdline_mode(&t))
    {
        return Ok(Preempt {
            mode,
            source: "preempt= on the kernel command line".into(),
        });
    }
    let boot = format!("/boot/config-{release}");
    let (config, text) = match std::fs::read_to_string(&boot) {
        Ok(t) => (boot, t),
        Err(e) => match proc_config() {
            Ok(t) => ("/proc/config.gz".to_string(), t),
            Err(gz) => {
                return Err(format!(
                    "not known: debugfs not mounted ({PREEMPT_DEBUGFS}), no preempt= on the command line, \
                     {boot}: {e}, /proc/config.gz: {gz}"
                ))
            }
        },
    };
    config_preempt_mode(&text)
        .map(|mode| Preempt {
            mode,
            source: format!("{config}, the build's default"),
        })
        .ok_or_else(|| format!("{config} names no preemption model"))
}

/// The running kernel's config (CONFIG_IKCONFIG_PROC), decompressed.
fn proc_config() -> std::io::Result<String> {
    use std::io::Read;
    let f = std::fs::File::open("/proc/config.gz")?;
    let mut text = String::new();
    // A config is a few hundred KiB; the bound keeps a bad file harmless.
    flate2::read::GzDecoder::new(f)
        .take(16 << 20)
        .read_to_string(&mut text)?;
    Ok(text)
}

/// Data statics the probes read that some kernels list in kallsyms with a
/// text type (t/T): taken as data symbols whatever their letter.
const DATA_AS_TEXT: &[&str] = &["swapin_readahead_hits", "last_readahead_pages"];

/// `sym` is `name` or a compiler-suffixed static `name.N`.
fn is_symbol(sym: &str, name: &str) -> bool {
    sym == name
        || sym
            .strip_prefix(name)
            .and_then(|r| r.strip_prefix('.'))
            .is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()))
}

/// Text symbols, and data symbols with their addresses, of a kallsyms text.
fn parse_kallsyms(text: &str) -> (HashSet<String>, Vec<(String, u64)>) {
    let mut text_symbols = HashSet::new();
    let mut data_symbols = Vec::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(addr), Some(t), Some(name)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let addr = u64::from_str_radix(addr, 16).unwrap_or(0);
        match t {
            "T" | "t" => {
                // Some kernels list the readahead statics as text
                // (6.18: `swapin_readahead_hits` is `t`).
                if DATA_AS_TEXT.iter().any(|d| is_symbol(name, d)) {
                    data_symbols.push((name.to_string(), addr));
                }
                text_symbols.insert(name.to_string());
            }
            "D" | "d" | "B" | "b" | "R" | "r" => data_symbols.push((name.to_string(), addr)),
            _ => {}
        }
    }
    (text_symbols, data_symbols)
}

impl KernelFacts {
    /// Whether reclaim keeps a dirty swap-cache folio never mapped:
    /// `pageout()` writes only anon and shmem folios where swap has no
    /// `swap_writepage()` (6.18; 6.12 writes it). None without kallsyms.
    pub fn keeps_unmapped_dirty(&self) -> Option<bool> {
        (!self.text_symbols.is_empty()).then(|| !self.text_symbols.contains("swap_writepage"))
    }

    /// MGLRU on (bit 0 of `/sys/kernel/mm/lru_gen/enabled`; no file, no
    /// MGLRU) and PG_readahead the bit of PG_reclaim, which MGLRU's
    /// `isolate_folio()` clears. None where either cannot be read.
    pub fn lru_gen_clears_readahead(&self) -> Option<bool> {
        let on = match std::fs::read_to_string("/sys/kernel/mm/lru_gen/enabled") {
            Ok(v) => u64::from_str_radix(v.trim().trim_start_matches("0x"), 16).ok()? & 1 != 0,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(_) => return None,
        };
        if !on {
            return Some(false);
        }
        let btf = self.btf.as_ref().ok()?;
        let bit = |name| btf.enum_value(Some("pageflags"), name).ok();
        Some(bit("PG_readahead").is_some() && bit("PG_readahead") == bit("PG_reclaim"))
    }

    /// Which of the recorder's programs need twins (`swaptrace_common::twin`):
    /// none where this kernel does not preempt them; fentry/fexit where it
    /// may (or its model is not known), and raw tracepoints too from the
    /// kernel that runs them with migration disabled only
    /// ([`RAW_TP_PREEMPTIBLE_FROM`]).
    pub fn twins_wanted(&self) -> Twins {
        twins_for(&self.preempt, &self.release)
    }

    /// Reads BTF, kallsyms and the kprobe PMU. fentry is left `NotTried`:
    /// trying needs a load (see `Probe::trial_fentry`).
    pub fn gather() -> KernelFacts {
        let btf = Btf::from_sys_fs().map_err(|e| e.to_string());
        let (text_symbols, data_symbols, kallsyms_error) =
            match std::fs::read_to_string("/proc/kallsyms") {
                Ok(s) => {
                    let (t, d) = parse_kallsyms(&s);
                    (t, d, None)
                }
                Err(e) => (
                    HashSet::new(),
                    Vec::new(),
                    Some(format!("/proc/kallsyms: {e}")),
                ),
            };
        let kprobes = if Path::new("/sys/bus/event_source/devices/kprobe/type").exists() {
            Ok(())
        } else {
            Err("kprobes not built into this kernel (no kprobe PMU)".into())
        };
        let release = kernel_release();
        KernelFacts {
            preempt: preemption(&release),
            release,
            btf,
            text_symbols,
            data_symbols,
            kallsyms_error,
            kprobes,
            fentry: Trial::NotTried("needs root and a live build".into()),
            damon: super::damon::running_schemes(Path::new(super::damon::DAMON_ADMIN)),
        }
    }

    /// Why `ap` cannot be used here; empty when it can.
    pub fn unmet(&self, ap: &AttachPoint) -> Vec<String> {
        let mut why = Vec::new();
        for r in ap.requires {
            if let Err(e) = self.check(r) {
                why.push(e);
            }
        }
        why
    }

    /// Address of a data symbol: `name` itself or a compiler-suffixed static
    /// `name.N` (e.g. `last_readahead_pages.0`).
    pub fn data_symbol(&self, name: &str) -> Option<u64> {
        self.data_symbols
            .iter()
            .find(|(s, _)| is_symbol(s, name))
            .map(|(_, a)| *a)
    }

    fn btf(&self) -> Result<&Btf, String> {
        self.btf.as_ref().map_err(|e| format!("no BTF: {e}"))
    }

    pub fn check(&self, r: &Req) -> Result<(), String> {
        match *r {
            Req::BtfFunc(f) => {
                if self.btf()?.has_func(f) {
                    Ok(())
                } else if self.text_symbols.contains(f) {
                    Err(format!("{f} in kallsyms but not in BTF"))
                } else {
                    Err(format!("{f} inlined or absent: not in BTF or kallsyms"))
                }
            }
            Req::Kallsyms(f) => match &self.kallsyms_error {
                Some(e) => Err(e.clone()),
                None if self.text_symbols.contains(f) => Ok(()),
                None => Err(format!("{f} not in kallsyms (inlined or absent)")),
            },
            Req::DataSymbol(p) => match self.data_symbol(p) {
                Some(0) => Err(format!("data symbol {p}: address hidden (not root)")),
                Some(_) => Ok(()),
                None => Err(format!(
                    "data symbol {p} not in kallsyms (no KALLSYMS_ALL or absent)"
                )),
            },
            Req::FuncParams(f, want) => {
                let have = self
                    .btf()?
                    .func_params(f)
                    .map_err(|_| format!("{f} not in BTF"))?;
                let names: Vec<&str> = have.iter().map(|(n, _)| n.as_str()).collect();
                if names.len() >= want.len() && names[..want.len()] == want[..] {
                    Ok(())
                } else {
                    Err(format!(
                        "{f}({}) is not {f}({})",
                        names.join(", "),
                        want.join(", ")
                    ))
                }
            }
            Req::Tracepoint(tp, args) | Req::TracepointHas(tp, args) => {
                let params = self
                    .btf()?
                    .tracepoint_params(tp)
                    .map_err(|e| format!("tracepoint {tp}: {e}"))?;
                // `a|b`: either name.
                let is = |want: &str, name: &str| want.split('|').any(|w| w == name);
                if matches!(r, Req::TracepointHas(..)) {
                    return match args
                        .iter()
                        .find(|want| !params.iter().any(|(n, _)| is(want, n)))
                    {
                        Some(want) => Err(format!("tracepoint {tp} has no argument `{want}`")),
                        None => Ok(()),
                    };
                }
                for (i, want) in args.iter().enumerate() {
                    match params.get(i) {
                        Some((name, _)) if is(want, name) => {}
                        Some((name, _)) => {
                            return Err(format!(
                                "tracepoint {tp} argument {i} is `{name}`, expected `{want}`"
                            ))
                        }
                        None => return Err(format!("tracepoint {tp} has no argument {i}")),
                    }
                }
                Ok(())
            }
            Req::TraceFormat(event, fields) => {
                let (cat, name) = event.split_once('/').unwrap_or(("", event));
                let format = super::tpformat::read_format(cat, name)?;
                match fields
                    .iter()
                    .find(|f| super::tpformat::field_offset(&format, f).is_none())
                {
                    Some(f) => Err(format!("{event} has no field `{f}`")),
                    None => Ok(()),
                }
            }
            Req::Member(s, m) => self
                .btf()?
                .member_offset(s, m)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Req::VmEvent(e) => self
                .btf()?
                .enum_value(Some("vm_event_item"), e)
                .map(|_| ())
                .map_err(|_| format!("vm event {e} not in this kernel")),
            Req::FentryAllowed => match &self.fentry {
                Trial::Allowed => Ok(()),
                Trial::Refused(e) => Err(format!("fentry refused: {e}")),
                Trial::NotTried(e) => Err(format!("fentry not tried: {e}")),
            },
            Req::KprobesBuilt => self.kprobes.clone(),
            Req::Built(true) => Ok(()),
            Req::Built(false) => Err("not in this build yet".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{
        cmdline_mode, config_preempt_mode as config_mode, debugfs_mode, is_symbol, parse_kallsyms,
        DATA_AS_TEXT,
    };

    #[test]
    fn twins_where_the_kernel_may_preempt_programs() {
        use super::{release_number, twins_for, Preempt, Twins};
        let p = |mode: &str| {
            Ok(Preempt {
                mode: mode.into(),
                source: "debugfs".into(),
            })
        };
        assert_eq!(release_number("6.12.118+deb12-amd64"), Some((6, 12)));
        assert_eq!(release_number("7.3.4+deb13-amd64"), Some((7, 3)));
        assert_eq!(release_number("6"), None);
        assert_eq!(twins_for(&p("voluntary"), "6.12.1"), Twins::None);
        assert_eq!(twins_for(&p("none"), "7.3.4"), Twins::None);
        assert_eq!(twins_for(&p("full"), "6.12.1"), Twins::Trampolines);
        assert_eq!(twins_for(&p("lazy"), "7.3.4"), Twins::All);
        // Not known: guard against it, raw tracepoints too where the release
        // is not known either.
        assert_eq!(twins_for(&Err("?".into()), "6.1.0"), Twins::Trampolines);
        assert_eq!(twins_for(&Err("?".into()), "unknown"), Twins::All);
    }

    #[test]
    fn preemption_models_as_the_kernel_prints_and_builds_them() {
        assert_eq!(
            debugfs_mode("none voluntary (full) lazy\n").as_deref(),
            Some("full")
        );
        assert_eq!(debugfs_mode("none (lazy)").as_deref(), Some("lazy"));
        assert_eq!(debugfs_mode("none voluntary full"), None);
        assert_eq!(
            cmdline_mode("BOOT_IMAGE=/vmlinuz root=/dev/vda preempt=full quiet").as_deref(),
            Some("full")
        );
        // The last one counts; an unknown mode is no answer.
        assert_eq!(
            cmdline_mode("preempt=none preempt=lazy").as_deref(),
            Some("lazy")
        );
        assert_eq!(cmdline_mode("preempt=rt quiet"), None);
        assert_eq!(cmdline_mode("console=ttyS0"), None);
        // Debian 6.12 and 6.18 guests' configs, cut to these lines.
        let d612 = "CONFIG_PREEMPT_BUILD=y\nCONFIG_PREEMPT_VOLUNTARY=y\n# CONFIG_PREEMPT is not set\nCONFIG_PREEMPT_DYNAMIC=y\n";
        let d618 = "CONFIG_PREEMPT_BUILD=y\nCONFIG_PREEMPT_LAZY=y\nCONFIG_PREEMPT_DYNAMIC=y\nCONFIG_PREEMPTION=y\n";
        assert_eq!(config_mode(d612).as_deref(), Some("voluntary"));
        assert_eq!(config_mode(d618).as_deref(), Some("lazy"));
        assert_eq!(
            config_mode("CONFIG_PREEMPT_NONE=y\nCONFIG_PREEMPTION=y\n").as_deref(),
            Some("none")
        );
        assert_eq!(config_mode("CONFIG_PREEMPT=y\n").as_deref(), Some("full"));
        assert_eq!(
            config_mode("CONFIG_PREEMPT_RT=y\nCONFIG_PREEMPT=y\n").as_deref(),
            Some("full")
        );
        assert_eq!(config_mode("CONFIG_SWAP=y\n"), None);
    }

    #[test]
    fn readahead_statics_are_data_whatever_their_type() {
        let (text, data) = parse_kallsyms(
            "ffffffff81000010 T do_swap_page\n\
             ffffffff82000020 t swapin_readahead_hits\n\
             ffffffff83000030 b last_readahead_pages.1\n\
             ffffffff81000040 t unuse_pte_range\n\
             ffffffff84000050 d some_data\n",
        );
        assert!(text.contains("do_swap_page") && text.contains("swapin_readahead_hits"));
        let addr = |n: &str| data.iter().find(|(s, _)| s == n).map(|(_, a)| *a);
        assert_eq!(addr("swapin_readahead_hits"), Some(0xffffffff82000020));
        assert_eq!(addr("last_readahead_pages.1"), Some(0xffffffff83000030));
        assert_eq!(addr("some_data"), Some(0xffffffff84000050));
        assert_eq!(addr("unuse_pte_range"), None);
    }

    #[test]
    fn suffixed_statics_match_their_name_only() {
        assert!(is_symbol("last_readahead_pages.1", "last_readahead_pages"));
        assert!(is_symbol("swapin_readahead_hits", "swapin_readahead_hits"));
        assert!(!is_symbol("last_readahead_pages.", "last_readahead_pages"));
        assert!(!is_symbol("last_readahead_pages_x", "last_readahead_pages"));
        assert!(!is_symbol(
            "swapin_readahead_hits.a",
            "swapin_readahead_hits"
        ));
        // The readahead statics, listed as `t` on 6.18, are data to the probe.
        assert!(DATA_AS_TEXT.contains(&"swapin_readahead_hits"));
        assert!(DATA_AS_TEXT.contains(&"last_readahead_pages"));
    }
}
