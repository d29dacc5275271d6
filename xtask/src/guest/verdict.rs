//! The outcome of a guest run as a value: the checks with their results,
//! between the notes (tables, figures) that explain them.

use std::fmt;

/// One claim checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    pub what: String,
    pub ok: bool,
    /// Why it failed (an error, a log tail); may be empty.
    pub detail: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Entry {
    Note(String),
    Check(Check),
}

/// The checks of a run, in order, with the notes between them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    entries: Vec<Entry>,
}

impl Verdict {
    /// Report text (one or more lines), not a check.
    pub fn note(&mut self, text: impl AsRef<str>) {
        self.entries
            .extend(text.as_ref().lines().map(|l| Entry::Note(l.to_string())));
    }

    pub fn check(&mut self, ok: bool, what: impl Into<String>) {
        self.check_with(ok, what, "");
    }

    pub fn check_with(&mut self, ok: bool, what: impl Into<String>, detail: impl Into<String>) {
        self.entries.push(Entry::Check(Check {
            what: what.into(),
            ok,
            detail: detail.into(),
        }));
    }

    /// A failed check.
    pub fn fail(&mut self, what: impl Into<String>, detail: impl fmt::Display) {
        self.check_with(false, what, detail.to_string());
    }

    pub fn checks(&self) -> impl Iterator<Item = &Check> {
        self.entries.iter().filter_map(|e| match e {
            Entry::Check(c) => Some(c),
            Entry::Note(_) => None,
        })
    }

    pub fn failures(&self) -> impl Iterator<Item = &Check> {
        self.checks().filter(|c| !c.ok)
    }

    pub fn passed(&self) -> usize {
        self.checks().filter(|c| c.ok).count()
    }

    pub fn failed(&self) -> usize {
        self.failures().count()
    }

    /// Adds the checks of `other` (not its notes), named after `scope`.
    pub fn absorb(&mut self, scope: &str, other: Verdict) {
        self.entries
            .extend(other.entries.into_iter().filter_map(|e| match e {
                Entry::Check(c) => Some(Entry::Check(Check {
                    what: format!("{scope}: {}", c.what),
                    ..c
                })),
                Entry::Note(_) => None,
            }));
    }

    /// The closing line CI reads: `guest-test: N passed, M failed`.
    pub fn summary(&self) -> String {
        format!(
            "guest-test: {} passed, {} failed",
            self.passed(),
            self.failed()
        )
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", if self.ok { "ok" } else { "FAIL" }, self.what)?;
        for l in self.detail.lines() {
            write!(f, "\n      {l}")?;
        }
        Ok(())
    }
}

/// The human report: notes as they are, checks as `  [ok] what`.
impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for e in &self.entries {
            match e {
                Entry::Note(n) => writeln!(f, "{n}")?,
                Entry::Check(c) => writeln!(f, "  {c}")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Verdict {
        let mut v = Verdict::default();
        v.note("doctor:\n    ra-window fentry");
        v.check(true, "doctor: ra-window by an exact probe");
        v.fail("swapoff/swapoff.swt is complete and finalized", "bad magic");
        v.check(true, "free: 3 batches");
        v
    }

    #[test]
    fn counts_checks_not_notes() {
        let v = sample();
        assert_eq!((v.passed(), v.failed()), (2, 1));
        assert_eq!(v.summary(), "guest-test: 2 passed, 1 failed");
        assert_eq!(
            Verdict::default().summary(),
            "guest-test: 0 passed, 0 failed"
        );
    }

    #[test]
    fn absorb_scopes_checks_and_drops_notes() {
        let mut all = Verdict::default();
        all.absorb("6.1.0-1-amd64", sample());
        all.absorb("6.12.9+deb13-amd64", sample());
        assert_eq!((all.passed(), all.failed()), (4, 2));
        let failed: Vec<&str> = all.failures().map(|c| c.what.as_str()).collect();
        assert_eq!(
            failed,
            [
                "6.1.0-1-amd64: swapoff/swapoff.swt is complete and finalized",
                "6.12.9+deb13-amd64: swapoff/swapoff.swt is complete and finalized"
            ]
        );
        assert!(!all.to_string().contains("doctor:\n"));
    }

    #[test]
    fn renders_like_the_report() {
        assert_eq!(
            sample().to_string(),
            "doctor:\n    ra-window fentry\n  [ok] doctor: ra-window by an exact probe\n  \
             [FAIL] swapoff/swapoff.swt is complete and finalized\n      bad magic\n  \
             [ok] free: 3 batches\n"
        );
    }
}
