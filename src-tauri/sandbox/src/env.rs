//! Which variables reach a confined command.
use std::ffi::{OsStr, OsString};

/// Name parts (case-insensitive) that mark a variable as secret.
const SECRET_MARKERS: &[&str] = &["KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL"];

/// Whether a variable's name looks secret, or belongs to PocketPilot itself.
pub fn is_secret_name(name: &OsStr) -> bool {
    let upper = name.to_string_lossy().to_ascii_uppercase();
    upper.starts_with("POCKETPILOT_")
        || upper.ends_with("_PAT")
        || SECRET_MARKERS.iter().any(|m| upper.contains(m))
}

/// Whether a value carries credentials in a URL (`scheme://user:pass@host`).
pub fn is_secret_value(value: &OsStr) -> bool {
    let value = value.to_string_lossy();
    let mut rest = value.as_ref();
    while let Some(i) = rest.find("://") {
        let after = &rest[i + 3..];
        let authority_end = after.find(['/', '?', '#', ' ']).unwrap_or(after.len());
        let authority = &after[..authority_end];
        if let Some(at) = authority.rfind('@') {
            if authority[..at].contains(':') {
                return true;
            }
        }
        rest = after;
    }
    false
}

/// `base` without secret-looking variables; names in `pass` are kept whatever they look
/// like (exact, case-sensitive match).
pub fn scrub_env(base: Vec<(OsString, OsString)>, pass: &[String]) -> Vec<(OsString, OsString)> {
    base.into_iter()
        .filter(|(name, value)| {
            let passed = pass.iter().any(|p| OsStr::new(p) == name.as_os_str());
            passed || !(is_secret_name(name) || is_secret_value(value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_values() {
        for name in [
            "OPENAI_API_KEY",
            "github_token",
            "POCKETPILOT_API_KEY",
            "POCKETPILOT_SANDBOX",
            "X_SECRET",
            "PGPASSWORD",
            "GITLAB_PAT",
            "AWS_CREDENTIALS",
        ] {
            assert!(is_secret_name(name.as_ref()), "{name}");
        }
        for name in ["PATH", "HOME", "LANG", "TERM", "PATTERN"] {
            assert!(!is_secret_name(name.as_ref()), "{name}");
        }
        assert!(is_secret_value("postgres://bob:hunter2@db/x".as_ref()));
        assert!(is_secret_value("see https://u:p@h.example".as_ref()));
        assert!(!is_secret_value("https://example.com/a@b".as_ref()));
        assert!(!is_secret_value("https://bob@example.com".as_ref()));
    }

    #[test]
    fn pass_list_keeps_named_ones() {
        let env = |k: &str, v: &str| (OsString::from(k), OsString::from(v));
        let out = scrub_env(
            vec![
                env("A_TOKEN", "1"),
                env("B_TOKEN", "2"),
                env("PATH", "/bin"),
                env("DB", "x://u:p@h"),
            ],
            &["B_TOKEN".into()],
        );
        assert_eq!(out, vec![env("B_TOKEN", "2"), env("PATH", "/bin")]);
    }
}
