//! Telling the model (and the person) that a failure came from the sandbox, not the code.
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;

use crate::policy::{SandboxPolicy, SYSTEM_READ_ROOTS};

/// At most this many hints per call: enough to name the cause, not to flood the output.
const MAX_HINTS: usize = 5;

#[derive(Debug, Clone, Default)]
pub(crate) struct Reach {
    pub write: Vec<PathBuf>,
    pub read: Vec<PathBuf>,
    /// Read-only inside the workspace (git metadata: configs, hooks, info, `.git` files).
    pub protected: Vec<PathBuf>,
    pub network: bool,
}

/// Hints for a command run under `policy` (the policy's paths as given; prefer
/// [`crate::CallGuard::blocked_hints`], which knows the resolved roots).
pub fn blocked_hints(output: &str, policy: &SandboxPolicy) -> Vec<String> {
    let mut read: Vec<PathBuf> = SYSTEM_READ_ROOTS.iter().map(PathBuf::from).collect();
    read.extend(policy.extra_read.iter().cloned());
    let git = policy.workspace.join(".git");
    Reach {
        write: policy.write_roots().map(Path::to_path_buf).collect(),
        read,
        protected: vec![
            git.join("hooks"),
            git.join("config"),
            policy.workspace.join(crate::PROTECTED_DIR),
        ],
        network: policy.network,
    }
    .hints(output)
}

fn denial(line: &str) -> bool {
    [
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
        "Device or resource busy",
        "EACCES",
        "EPERM",
        "EROFS",
    ]
    .iter()
    .any(|m| line.contains(m))
}

/// Whether the failed operation was a write (`cannot create`, `Read-only file system`, …)
/// rather than a read: the hint must not call a refused read a write.
fn looks_write(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    [
        "create",
        "touch",
        "remove",
        "unlink",
        "mkdir",
        "rmdir",
        "rename",
        "move",
        "write",
        "writing",
        "read-only file system",
        "erofs",
        "truncate",
        "chmod",
        "chown",
        "delete",
        "overwrite",
        "symlink",
        "link",
    ]
    .iter()
    .any(|m| lower.contains(m))
}

/// `/etc`'s hidden files (`shadow`, `sudoers`, …), which the sandbox keeps unreadable.
fn is_hidden_etc(path: &Path) -> bool {
    path.parent() == Some(Path::new("/etc"))
        && path
            .file_name()
            .is_some_and(|n| crate::policy::etc_hidden(&n.to_string_lossy()))
}

/// `/bin/cat: /etc/shadow: Permission denied` names the program first; it is not what
/// was refused.
fn names_the_program(line: &str, start: usize, end: usize, path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    start == 0
        && line[end..].starts_with(':')
        && path
            .metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn looks_network(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    [
        "connect", "socket", "network", "resolve", "host", "port", "http", "dns", "bind",
    ]
    .iter()
    .any(|m| lower.contains(m))
}

fn path_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r#"(?:^|[\s'"`(=:])(/[^\s'"`):,;]*)"#).unwrap_or_else(|_| unreachable!())
    })
}

fn endpoint_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?:to ([\w.\-:\[\]]+) port (\d{1,5}))|((?:\[[0-9a-fA-F:]+\]|[A-Za-z0-9][\w.\-]*):(\d{1,5}))\b")
            .unwrap_or_else(|_| unreachable!())
    })
}

impl Reach {
    pub(crate) fn hints(&self, output: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let push = |h: String, out: &mut Vec<String>| {
            if out.len() < MAX_HINTS && !out.contains(&h) {
                out.push(h);
            }
        };
        for line in output.lines().filter(|l| denial(l)) {
            let mut named_path = false;
            for cap in path_re().captures_iter(line) {
                let Some(m) = cap.get(1) else { continue };
                let path = Path::new(m.as_str().trim_end_matches(['.', '\'']));
                if path.as_os_str().len() < 2 || names_the_program(line, m.start(), m.end(), path) {
                    continue;
                }
                named_path = true;
                if let Some(hint) = self.path_hint(path, line) {
                    push(hint, &mut out);
                }
            }
            // A write refused with no path the sandbox can place (a relative name, such as
            // a symlink the command made in the workspace that points out of it).
            if !named_path && line.contains("Permission denied") && looks_write(line) {
                push(
                    "possibly blocked by the sandbox: a write was refused (writes are allowed only in the workspace; a link there does not lead out)"
                        .to_string(),
                    &mut out,
                );
            }
            // seccomp answers a refused socket() with EPERM, often printed with no context
            // at all ("PermissionError: [Errno 1] Operation not permitted").
            let bare_eperm = line.contains("Operation not permitted") || line.contains("EPERM");
            if !named_path && !self.network && (looks_network(line) || bare_eperm) {
                push(network_hint(line), &mut out);
            }
        }
        out
    }

    /// Why the sandbox refused `path`, named in a refusal `line`; `None` when the path is
    /// inside a write root, so the refusal is not the sandbox's doing.
    fn path_hint(&self, path: &Path, line: &str) -> Option<String> {
        let shown = path.display();
        if self.protected.iter().any(|p| path.starts_with(p)) {
            Some(format!(
                "blocked by the sandbox: write to {shown} (kept read-only)"
            ))
        } else if self.write.iter().any(|r| path.starts_with(r)) {
            None
        } else if is_hidden_etc(path) {
            Some(format!(
                "blocked by the sandbox: read of {shown} (kept unreadable to commands)"
            ))
        } else if self.read.iter().any(|r| path.starts_with(r)) {
            Some(if looks_write(line) {
                format!(
                    "blocked by the sandbox: write to {shown} (writes are allowed only in the workspace)"
                )
            } else {
                format!(
                    "blocked by the sandbox: access to {shown} (commands may only read there, outside the workspace)"
                )
            })
        } else {
            Some(format!(
                "blocked by the sandbox: access to {shown} (outside the workspace and the paths this call may read)"
            ))
        }
    }
}

/// A refused network access, with the endpoint when `line` names one.
fn network_hint(line: &str) -> String {
    let endpoint =
        endpoint_re()
            .captures(line)
            .and_then(|c| match (c.get(1), c.get(2), c.get(3), c.get(4)) {
                (Some(h), Some(p), _, _) | (_, _, Some(h), Some(p)) => {
                    Some(format!("{}:{}", h.as_str(), p.as_str()))
                }
                _ => None,
            });
    match endpoint {
        Some(ep) => format!(
            "blocked by the sandbox: network connect to {ep} (this call has no network permission)"
        ),
        None => "blocked by the sandbox: network access (this call has no network permission)"
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reach() -> Reach {
        Reach {
            write: vec!["/w".into(), "/tmp/call".into()],
            read: vec!["/usr".into(), "/etc".into()],
            protected: vec!["/w/.git/hooks".into(), "/w/.git/config".into()],
            network: false,
        }
    }

    #[test]
    fn paths_and_network() {
        let h = reach().hints(
            "touch: cannot touch '/home/u/x': Permission denied\n\
             sh: 1: cannot create /usr/local/y: Permission denied\n\
             sh: 1: cannot create /w/.git/config: Read-only file system\n\
             cp: cannot create regular file '/w/ok': Permission denied\n\
             curl: (7) Failed to connect to 127.0.0.1 port 8080: Operation not permitted\n\
             ok line\n",
        );
        assert_eq!(
            h,
            vec![
                "blocked by the sandbox: access to /home/u/x (outside the workspace and the paths this call may read)",
                "blocked by the sandbox: write to /usr/local/y (writes are allowed only in the workspace)",
                "blocked by the sandbox: write to /w/.git/config (kept read-only)",
                "blocked by the sandbox: network connect to 127.0.0.1:8080 (this call has no network permission)",
            ]
        );
    }

    #[test]
    fn a_refused_read_is_not_called_a_write() {
        let h = reach().hints(
            "cat: /etc/shadow: Permission denied\n\
             /bin/cat: /usr/share/x: Permission denied\n\
             mkdir: cannot create directory '/usr/y': Permission denied\n",
        );
        assert_eq!(
            h,
            vec![
                "blocked by the sandbox: read of /etc/shadow (kept unreadable to commands)",
                "blocked by the sandbox: access to /usr/share/x (commands may only read there, outside the workspace)",
                "blocked by the sandbox: write to /usr/y (writes are allowed only in the workspace)",
            ]
        );
    }

    #[test]
    fn nothing_without_a_denial() {
        assert!(reach()
            .hints("all good\nconnected to example.com:443\n")
            .is_empty());
        let mut r = reach();
        r.network = true;
        assert!(r.hints("connect: Operation not permitted").is_empty());
    }
}
