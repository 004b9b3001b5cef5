//! Which variables reach a confined command.
use std::ffi::{OsStr, OsString};

/// Name parts (case-insensitive) that mark a variable as secret: `MYSQL_PWD`,
/// `CI_JOB_JWT`, `BW_SESSION`, `OP_SESSION_x`, `SLACK_WEBHOOK_URL`, `DOCKER_AUTH_CONFIG`…
const SECRET_MARKERS: &[&str] = &[
    "KEY",
    "SECRET",
    "TOKEN",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "JWT",
    "SESSION",
    "WEBHOOK",
    "_AUTH",
    "AUTH_",
    "COOKIE",
];

/// Name endings that mark a variable as secret.
const SECRET_SUFFIXES: &[&str] = &["_PAT", "_PWD", "_PASS", "_AUTH"];

/// Names with a secret-looking part that are not secrets (the terminal's session type…).
const NOT_SECRET: &[&str] = &[
    "XDG_SESSION_TYPE",
    "XDG_SESSION_CLASS",
    "XDG_SESSION_DESKTOP",
    "XDG_SESSION_ID",
    "DESKTOP_SESSION",
    "SESSION_MANAGER",
];

/// Whether a variable's name looks secret (PocketPilot's own variables aside).
pub fn looks_secret_name(name: &OsStr) -> bool {
    let upper = name.to_string_lossy().to_ascii_uppercase();
    if NOT_SECRET.contains(&upper.as_str()) {
        return false;
    }
    upper.starts_with("AUTH_")
        || SECRET_SUFFIXES.iter().any(|s| upper.ends_with(s))
        || SECRET_MARKERS.iter().any(|m| upper.contains(m))
}

/// Whether a variable's name looks secret, or belongs to PocketPilot itself.
pub fn is_secret_name(name: &OsStr) -> bool {
    name.to_string_lossy()
        .to_ascii_uppercase()
        .starts_with("POCKETPILOT_")
        || looks_secret_name(name)
}

/// Whether a value carries a password in a URL: `scheme://user:pass@host`, or a
/// `password=` / `pwd=` query parameter (`DATABASE_URL=…?password=…`).
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
        let url_end = after.find([' ', '\t', '\n']).unwrap_or(after.len());
        if has_password_param(&after[..url_end]) {
            return true;
        }
        rest = after;
    }
    false
}

/// A query or fragment parameter named like a password, with a value.
fn has_password_param(url: &str) -> bool {
    let Some(q) = url.find(['?', '#', ';']) else {
        return false;
    };
    url[q + 1..].split(['&', ';', '#', '?']).any(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let k = k.to_ascii_lowercase();
        !v.is_empty()
            && (k.contains("password")
                || k.contains("passwd")
                || k == "pwd"
                || k == "pass"
                || k.contains("secret")
                || k.contains("token")
                || k.ends_with("key"))
    })
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
        for name in [
            "MYSQL_PWD",
            "BW_SESSION",
            "OP_SESSION_my",
            "CI_JOB_JWT",
            "CI_JOB_JWT_V2",
            "NPM_CONFIG__AUTH",
            "REGISTRY_AUTH",
            "DOCKER_AUTH_CONFIG",
            "SLACK_WEBHOOK_URL",
            "DB_PASSWORD_FILE",
            "SMTP_PASSWD",
            "TWINE_PASS",
        ] {
            assert!(is_secret_name(name.as_ref()), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "LANG",
            "TERM",
            "PATTERN",
            "XDG_SESSION_TYPE",
            "PWD",
            "OLDPWD",
            "AUTHOR",
        ] {
            assert!(!is_secret_name(name.as_ref()), "{name}");
        }
        assert!(is_secret_value(
            "postgres://db.example/app?sslmode=require&password=hunter2".as_ref()
        ));
        assert!(is_secret_value("mysql://h/db?user=u&pwd=x".as_ref()));
        assert!(!is_secret_value("https://example.com/?q=password".as_ref()));
        assert!(!is_secret_value("https://example.com/?password=".as_ref()));
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
