//! Tool names.
//!
//! Each MCP tool has two names:
//! - its **identity** `mcp:<server>:<tool>` (DESIGN §7): shown in descriptions, effects,
//!   logs and problems, and used in whitelists;
//! - its **model-facing name** `mcp__<server>__<tool>` (what `Tool::name()` returns and
//!   the model calls): OpenAI-compatible APIs accept only `^[a-zA-Z0-9_-]{1,64}$`. Characters
//!   outside that set become `_`; a name that would be longer than 64 bytes, or that
//!   collides with another tool's after that substitution, is cut and ends in `_` plus 8
//!   hex digits of a hash of the identity, so it stays stable from run to run.
//!
//! `Tool::name()`, `description()` and `capability()` return `&'static str`, so the strings
//! are interned: each distinct string is leaked once per process and reused by later runs.
use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

/// Longest tool name OpenAI-compatible APIs accept.
pub const MAX_MODEL_NAME: usize = 64;

pub fn identity(server: &str, tool: &str) -> String {
    format!("mcp:{server}:{tool}")
}

/// The capability the policy decides a tool by: its identity and the verb of the
/// capability the server's configuration gives it (`mcp:execute` → `mcp:s:t:execute`).
/// Grants and allow rules then name the tool, never every tool of a server alike.
pub fn capability(server: &str, tool: &str, configured: &str) -> String {
    let verb = configured.rsplit(':').next().unwrap_or(configured);
    format!("{}:{verb}", identity(server, tool))
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// FNV-1a, 32 bits: stable across runs and platforms (std's hasher is not).
fn fnv1a(s: &str) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in s.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

/// The plain model-facing name, or `None` when it does not fit.
fn plain(server: &str, tool: &str) -> Option<String> {
    let name = format!("mcp__{}__{}", sanitize(server), sanitize(tool));
    (name.len() <= MAX_MODEL_NAME && name != format!("mcp__{server}__")).then_some(name)
}

/// The hashed form: as much of the plain name as fits, `_`, 8 hex digits.
fn hashed(server: &str, tool: &str) -> String {
    let full = format!("mcp__{}__{}", sanitize(server), sanitize(tool));
    let suffix = format!("_{:08x}", fnv1a(&identity(server, tool)));
    // Every character of `full` is ASCII, so any byte index is a char boundary.
    let keep = MAX_MODEL_NAME - suffix.len();
    let head = &full[..full.len().min(keep)];
    format!("{head}{suffix}")
}

/// Model-facing names for the tools of one connection, unique among themselves.
#[derive(Default)]
pub struct NameAllocator {
    taken: HashSet<String>,
}

impl NameAllocator {
    pub fn allocate(&mut self, server: &str, tool: &str) -> String {
        let sanitized_same = sanitize(tool) == tool;
        let name = match plain(server, tool) {
            // A name changed by sanitising could collide with a real tool's name later on
            // (`a.b` then `a_b`): such names always carry the hash.
            Some(name) if sanitized_same && !self.taken.contains(&name) => name,
            _ => hashed(server, tool),
        };
        let mut name = name;
        let mut n = 1u32;
        while self.taken.contains(&name) {
            // Only two different identities with the same 32-bit hash get here.
            name = hashed(server, &format!("{tool}#{n}"));
            n += 1;
        }
        self.taken.insert(name.clone());
        name
    }
}

pub fn is_valid_model_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_MODEL_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A `&'static str` equal to `s`, leaked at most once per distinct string.
pub fn intern(s: &str) -> &'static str {
    static POOL: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let pool = POOL.get_or_init(|| Mutex::new(HashSet::new()));
    let mut pool = match pool.lock() {
        Ok(guard) => guard,
        // A panic while holding the lock cannot leave the set inconsistent.
        Err(poisoned) => poisoned.into_inner(),
    };
    if let Some(found) = pool.get(s) {
        return found;
    }
    let leaked: &'static str = Box::leak(s.to_owned().into_boxed_str());
    pool.insert(leaked);
    leaked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names() {
        let mut a = NameAllocator::default();
        assert_eq!(
            a.allocate("fs", "read_text_file"),
            "mcp__fs__read_text_file"
        );
        assert_eq!(
            a.allocate("everything", "trigger-long-running-operation"),
            "mcp__everything__trigger-long-running-operation"
        );
    }

    #[test]
    fn odd_and_long_names_are_valid_and_stable() {
        let mut a = NameAllocator::default();
        let dotted = a.allocate("srv", "files.read");
        assert!(dotted.starts_with("mcp__srv__files_read_"), "{dotted}");
        assert!(is_valid_model_name(&dotted));
        let real = a.allocate("srv", "files_read");
        assert_eq!(real, "mcp__srv__files_read");
        assert_ne!(dotted, real);

        let long_tool = "x".repeat(80);
        let long = a.allocate("a-server-with-a-long-name-too", &long_tool);
        assert_eq!(long.len(), MAX_MODEL_NAME);
        assert!(is_valid_model_name(&long));
        let mut b = NameAllocator::default();
        assert_eq!(
            b.allocate("a-server-with-a-long-name-too", &long_tool),
            long
        );

        let unicode = a.allocate("srv", "données/é");
        assert!(is_valid_model_name(&unicode), "{unicode}");
        let empty = a.allocate("srv", "");
        assert!(is_valid_model_name(&empty), "{empty}");
    }

    #[test]
    fn interning_reuses() {
        let a = intern("mcp__x__y");
        let b = intern(&String::from("mcp__x__y"));
        assert!(std::ptr::eq(a, b));
    }
}
