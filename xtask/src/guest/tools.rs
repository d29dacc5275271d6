//! Host tools: qemu from bookworm-backports through a private APT_CONFIG,
//! the packages that build the initramfs, and the static (musl) swaptrace.

use super::{log, mkdir};
use crate::cmd::{capture, installed, output, root, run};
use anyhow::{ensure, Context, Result};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const MUSL: &str = "x86_64-unknown-linux-musl";
/// musl-gcc, for the static build.
const MUSL_GCC: (&str, &str) = ("musl-tools", "/usr/bin/musl-gcc");
/// Host packages from the normal sources: (package, file it provides).
const HOST_PACKAGES: &[(&str, &str)] = &[
    ("busybox-static", "/bin/busybox"),
    MUSL_GCC,
    ("cpio", "/usr/bin/cpio"),
    ("xz-utils", "/usr/bin/xz"),
    ("kmod", "/sbin/depmod"),
    ("zstd", "/usr/bin/zstd"),
    ("curl", "/usr/bin/curl"),
    ("make", "/usr/bin/make"),
];

/// The real program of the zswap scenario: zstd from Debian's source
/// package, built static with musl (Debian's own binary is dynamic).
const ZSTD_ORIG: &str = "pool/main/libz/libzstd/libzstd_1.5.4+dfsg2.orig.tar.xz";
const ZSTD_SHA256: &str = "8cf4bbb65e77ec348d052c8d6230eba66d435bddf64c8b5be2fcb16880c19953";

pub fn install_tools(base: &Path) -> Result<()> {
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
    install_packages(HOST_PACKAGES)?;
    musl_target()
}

/// What a static swaptrace needs: musl-gcc and the rustup musl target.
pub fn install_static_build() -> Result<()> {
    install_packages(&[MUSL_GCC])?;
    musl_target()
}

/// Installs the packages of `pkgs` whose file is missing.
fn install_packages(pkgs: &[(&str, &str)]) -> Result<()> {
    let missing: Vec<&str> = pkgs
        .iter()
        .filter(|(p, f)| !installed(p) && !Path::new(f).exists())
        .map(|(p, _)| *p)
        .collect();
    if missing.is_empty() {
        let names: Vec<&str> = pkgs.iter().map(|(p, _)| *p).collect();
        log(format!("{}: present", names.join(", ")));
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
    Ok(())
}

fn musl_target() -> Result<()> {
    let targets =
        output(Command::new("rustup").args(["target", "list", "--installed"])).unwrap_or_default();
    if targets.lines().any(|l| l.trim() == MUSL) {
        log(format!("rustup target {MUSL}: present"));
    } else {
        run(Command::new("rustup").args(["target", "add", MUSL]))?;
    }
    Ok(())
}

/// The bookworm stanza of a deb822 sources file: (URIs, Signed-By, Suites).
fn bookworm_source(deb822: &str) -> Option<(String, String, String)> {
    deb822.split("\n\n").find_map(|stanza| {
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
}

/// The machine's bookworm stanza (URIs, Signed-By, Suites).
fn machine_bookworm() -> Result<(String, String, String)> {
    let sys = Path::new("/etc/apt/sources.list.d/debian.sources");
    let text = fs::read_to_string(sys).with_context(|| format!("reading {}", sys.display()))?;
    bookworm_source(&text).with_context(|| {
        format!(
            "no bookworm stanza with URIs and Signed-By in {}",
            sys.display()
        )
    })
}

/// Writes a private APT config under `base/dir`: one deb822 source with
/// the machine's bookworm URIs and keyring (which also holds trixie's keys),
/// suite `name`, after the machine's own suites when `with_own`; own lists;
/// /etc/apt stays untouched. Returns the config's path.
fn private_apt_config(base: &Path, dir: &str, name: &str, with_own: bool) -> Result<PathBuf> {
    let dir = base.join(dir);
    let parts = dir.join("sources.list.d");
    let lists = dir.join("lists");
    mkdir(&parts)?;
    mkdir(&lists.join("partial"))?;
    let (uris, keyring, own) = machine_bookworm()?;
    let suites = if with_own {
        format!("{own} {name}")
    } else {
        name.to_string()
    };
    fs::write(
        parts.join(format!("{name}.sources")),
        format!(
            "Types: deb\nURIs: {uris}\nSuites: {suites}\nComponents: main\nSigned-By: {keyring}\n"
        ),
    )
    .with_context(|| format!("writing the {name} source"))?;
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

/// bookworm plus bookworm-backports (qemu's libraries come from bookworm).
fn backports_apt_config(base: &Path) -> Result<PathBuf> {
    private_apt_config(base, "apt", "bookworm-backports", true)
}

/// trixie-backports alone (the 6.16 … 7.x kernels).
pub fn trixie_apt_config(base: &Path) -> Result<PathBuf> {
    private_apt_config(base, "apt-trixie", "trixie-backports", false)
}

/// A static zstd under `base/tools`, built once from Debian's source.
pub fn static_zstd(base: &Path) -> Result<PathBuf> {
    let tools = base.join("tools");
    let bin = tools.join("zstd");
    if bin.exists() {
        log(format!("{}: present", bin.display()));
        return Ok(bin);
    }
    mkdir(&tools)?;
    let (uris, _, _) = machine_bookworm()?;
    let uri = uris.split_whitespace().next().unwrap_or_default();
    let tarball = tools.join("libzstd.orig.tar.xz");
    log(format!("building a static zstd from {uri}/{ZSTD_ORIG}"));
    run(Command::new("curl")
        .args(["-fsSL", "--retry", "3", "-o"])
        .arg(&tarball)
        .arg(format!("{uri}/{ZSTD_ORIG}")))?;
    let sum = capture(Command::new("sha256sum").arg(&tarball))?;
    ensure!(
        sum.split_whitespace().next() == Some(ZSTD_SHA256),
        "{}: sha256 {} is not {ZSTD_SHA256}",
        tarball.display(),
        sum.trim()
    );
    let src = tools.join("zstd-src");
    if src.exists() {
        fs::remove_dir_all(&src).with_context(|| format!("removing {}", src.display()))?;
    }
    mkdir(&src)?;
    run(Command::new("tar")
        .args(["-xJf"])
        .arg(&tarball)
        .arg("--strip-components=1")
        .arg("-C")
        .arg(&src))?;
    run(Command::new("make")
        .args(["-s", "-j2", "-C"])
        .arg(src.join("programs"))
        .args([
            "zstd",
            "CC=musl-gcc",
            "LDFLAGS=-static",
            "HAVE_ZLIB=0",
            "HAVE_LZMA=0",
            "HAVE_LZ4=0",
            "HAVE_THREAD=0",
        ]))?;
    let tmp = tools.join("zstd.tmp");
    run(Command::new("strip")
        .arg("-s")
        .arg(src.join("programs/zstd"))
        .arg("-o")
        .arg(&tmp))?;
    let kind = capture(Command::new("file").arg(&tmp))?;
    ensure!(
        kind.contains("statically linked"),
        "zstd is not static: {}",
        kind.trim()
    );
    fs::rename(&tmp, &bin).with_context(|| format!("renaming to {}", bin.display()))?;
    Ok(bin)
}

/// The static binary; it also reads the traces back on the host, so the
/// checks use the very code that wrote them.
pub fn static_swaptrace() -> PathBuf {
    root().join(format!("target/{MUSL}/release/swaptrace"))
}

pub fn build_swaptrace() -> Result<PathBuf> {
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

#[cfg(test)]
mod tests {
    use super::bookworm_source;

    #[test]
    fn finds_the_bookworm_stanza() {
        let text = "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: trixie\n\
                    Components: main\nSigned-By: /a.gpg\n\n\
                    Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\n\
                    Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n";
        assert_eq!(
            bookworm_source(text),
            Some((
                "http://deb.debian.org/debian".into(),
                "/usr/share/keyrings/debian-archive-keyring.gpg".into(),
                "bookworm bookworm-updates".into()
            ))
        );
        // bookworm-security alone is not bookworm; no Signed-By, no stanza.
        assert_eq!(
            bookworm_source("URIs: x\nSuites: bookworm-security\nSigned-By: k\n"),
            None
        );
        assert_eq!(bookworm_source("URIs: x\nSuites: bookworm\n"), None);
    }
}
