//! `cargo xtask readme`: README's synopsis block, rewritten from the clap
//! definitions (`swaptrace __synopsis`); `swaptrace/tests/readme.rs` checks
//! that it is up to date.

use crate::cmd::{capture, root};
use anyhow::{Context, Result};
use std::process::Command;

const BEGIN: &str = "<!-- synopsis:begin -->\n";
const END: &str = "<!-- synopsis:end -->";

/// `readme` with the block between the markers replaced by `synopsis` in a
/// shell fence.
pub fn with_synopsis(readme: &str, synopsis: &str) -> Result<String> {
    let a = readme
        .find(BEGIN)
        .context("README.md has no `<!-- synopsis:begin -->` line")?
        + BEGIN.len();
    let b = a + readme[a..]
        .find(END)
        .context("README.md has no `<!-- synopsis:end -->` after the begin marker")?;
    Ok(format!(
        "{}```sh\n{synopsis}```\n{}",
        &readme[..a],
        &readme[b..]
    ))
}

pub fn readme() -> Result<()> {
    let synopsis = capture(
        Command::new("cargo")
            .args(["run", "--quiet", "-p", "swaptrace", "--no-default-features"])
            .args(["--", "__synopsis"])
            .current_dir(root()),
    )?;
    let path = root().join("README.md");
    let old =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let new = with_synopsis(&old, &synopsis)?;
    if new == old {
        eprintln!("xtask: README.md synopsis is up to date");
    } else {
        std::fs::write(&path, new).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("xtask: README.md synopsis rewritten");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_block_between_the_markers_is_replaced() {
        let r = "a\n<!-- synopsis:begin -->\nold\n<!-- synopsis:end -->\nb\n";
        assert_eq!(
            super::with_synopsis(r, "x y\n").unwrap(),
            "a\n<!-- synopsis:begin -->\n```sh\nx y\n```\n<!-- synopsis:end -->\nb\n"
        );
        assert!(super::with_synopsis("no markers", "x\n").is_err());
    }
}
