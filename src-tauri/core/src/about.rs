//! What `pocketpilot --version` and the About view in Settings show: the version, the
//! git commit it was built from, where the data and the logs are, whether the app starts
//! at login, whether the OS keychain answers, and the sandbox's status.
use std::fmt;
use std::path::PathBuf;

use pocketpilot_model::keychain;

/// The build's identity, embedded by the binary's build script (the runtime has none of
/// its own): `commit` is `None` when it was built outside a git checkout.
#[derive(Debug, Clone, Copy)]
pub struct Build<'a> {
    pub version: &'a str,
    pub commit: Option<&'a str>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct About {
    pub version: String,
    /// The short commit hash, or `unknown`.
    pub commit: String,
    pub data_dir: PathBuf,
    pub log_dir: PathBuf,
    /// The autostart entry's path when the app starts at login.
    pub autostart: Option<PathBuf>,
    pub keychain: String,
    pub sandbox: String,
}

impl About {
    /// Reads the current state. Nothing here prompts: the keychain check looks up an
    /// account that never exists, which needs no unlocking.
    pub fn collect(build: Build<'_>) -> Self {
        let data_dir = crate::config::data_dir();
        Self {
            version: build.version.to_owned(),
            commit: build
                .commit
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .unwrap_or("unknown")
                .to_owned(),
            log_dir: crate::logging::log_dir(&data_dir),
            data_dir,
            autostart: crate::autostart::status()
                .ok()
                .filter(|s| s.enabled)
                .map(|s| s.path),
            keychain: keychain_status(),
            sandbox: sandbox_status(),
        }
    }
}

impl fmt::Display for About {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "pocketpilot {} (commit {})", self.version, self.commit)?;
        writeln!(f, "data: {}", self.data_dir.display())?;
        writeln!(f, "logs: {}", self.log_dir.display())?;
        match &self.autostart {
            Some(p) => writeln!(f, "start at login: on ({})", p.display())?,
            None => writeln!(f, "start at login: off")?,
        }
        writeln!(f, "keychain: {}", self.keychain)?;
        write!(f, "sandbox: {}", self.sandbox)
    }
}

/// One line on the OS keychain: reachable or not (and why), and whether
/// `POCKETPILOT_API_KEY` overrides it.
pub fn keychain_status() -> String {
    let overridden = std::env::var(keychain::ENV_API_KEY).is_ok_and(|v| !v.trim().is_empty());
    let base = match keychain::probe() {
        Ok(backend) => format!("available ({backend})"),
        // Its own message already starts "the OS keychain is not available".
        Err(keychain::KeychainError::Unavailable(why)) => format!("not available: {why}"),
        Err(e) => format!("not available: {e}"),
    };
    if overridden {
        format!("{base}; {} overrides it", keychain::ENV_API_KEY)
    } else {
        base
    }
}

/// The sandbox line: the probe's line for a call without the network grant.
pub fn sandbox_status() -> String {
    pocketpilot_sandbox::probe().line(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_commit_it_says_unknown() {
        let about = About::collect(Build {
            version: "1.2.3",
            commit: Some("  "),
        });
        assert_eq!(about.commit, "unknown");
        let text = about.to_string();
        assert!(
            text.starts_with("pocketpilot 1.2.3 (commit unknown)\n"),
            "{text}"
        );
        let sandbox = format!("\nsandbox: {}", pocketpilot_sandbox::probe().line(false));
        assert!(text.ends_with(&sandbox), "{text}");
    }
}
