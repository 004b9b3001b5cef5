//! Which servers and tools a task may use.
//!
//! The rule: **an empty whitelist offers nothing and starts no server.** Entries are
//! - `*`: every configured server, every tool;
//! - `<server>`: every tool of that server;
//! - `<server>:<tool>`: that one tool (the server's own tool name).
//!
//! A leading `mcp:` is accepted, so `mcp:fs:read_text_file` (the tool identity) works too.
//! A server is started only when at least one entry names it (or `*` is present).
use serde::{Deserialize, Serialize};

use crate::config::validate_server_name;
use crate::error::McpError;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<String>", into = "Vec<String>")]
pub struct McpWhitelist {
    entries: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    All,
    Server(String),
    Tool(String, String),
}

impl McpWhitelist {
    /// Nothing allowed (the default).
    pub fn none() -> Self {
        Self {
            entries: Vec::new(),
        }
    }

    /// Every configured server and tool (`*`).
    pub fn all() -> Self {
        Self {
            entries: vec![Entry::All],
        }
    }

    /// Parses `*`, `server` and `server:tool` entries (each optionally prefixed `mcp:`);
    /// blank entries are ignored.
    pub fn parse<I, S>(entries: I) -> Result<Self, McpError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut parsed = Vec::new();
        for raw in entries {
            let raw = raw.as_ref().trim();
            if raw.is_empty() {
                continue;
            }
            let invalid = |message: String| McpError::InvalidWhitelist {
                entry: raw.to_string(),
                message,
            };
            let body = raw.strip_prefix("mcp:").unwrap_or(raw);
            let entry = if body == "*" {
                Entry::All
            } else if let Some((server, tool)) = body.split_once(':') {
                validate_server_name(server).map_err(invalid)?;
                if tool.is_empty() {
                    return Err(invalid("the tool name is empty".into()));
                }
                if tool == "*" {
                    Entry::Server(server.to_string())
                } else {
                    Entry::Tool(server.to_string(), tool.to_string())
                }
            } else {
                validate_server_name(body).map_err(invalid)?;
                Entry::Server(body.to_string())
            };
            if !parsed.contains(&entry) {
                parsed.push(entry);
            }
        }
        Ok(Self { entries: parsed })
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether any of the server's tools may be offered (so the server is worth starting).
    pub fn allows_server(&self, server: &str) -> bool {
        self.entries.iter().any(|e| match e {
            Entry::All => true,
            Entry::Server(s) | Entry::Tool(s, _) => s == server,
        })
    }

    pub fn allows_tool(&self, server: &str, tool: &str) -> bool {
        self.entries.iter().any(|e| match e {
            Entry::All => true,
            Entry::Server(s) => s == server,
            Entry::Tool(s, t) => s == server && t == tool,
        })
    }

    /// Servers named explicitly (not through `*`), in order, without repeats.
    pub fn named_servers(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for e in &self.entries {
            if let Entry::Server(s) | Entry::Tool(s, _) = e {
                if !out.contains(&s.as_str()) {
                    out.push(s);
                }
            }
        }
        out
    }

    /// Tools named explicitly for `server`.
    pub fn named_tools<'a>(&'a self, server: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.entries.iter().filter_map(move |e| match e {
            Entry::Tool(s, t) if s == server => Some(t.as_str()),
            _ => None,
        })
    }
}

impl Default for McpWhitelist {
    fn default() -> Self {
        Self::none()
    }
}

impl TryFrom<Vec<String>> for McpWhitelist {
    type Error = McpError;
    fn try_from(entries: Vec<String>) -> Result<Self, Self::Error> {
        Self::parse(entries)
    }
}

impl From<McpWhitelist> for Vec<String> {
    fn from(list: McpWhitelist) -> Self {
        list.entries
            .into_iter()
            .map(|e| match e {
                Entry::All => "*".to_string(),
                Entry::Server(s) => s,
                Entry::Tool(s, t) => format!("{s}:{t}"),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_allows_nothing() {
        let w = McpWhitelist::parse(Vec::<String>::new()).unwrap();
        assert!(w.is_empty());
        assert!(!w.allows_server("fs"));
        assert!(!w.allows_tool("fs", "read_text_file"));
        assert_eq!(w, McpWhitelist::default());
    }

    #[test]
    fn entries() {
        let w = McpWhitelist::parse(["fs", "mcp:everything:echo", " ", "mem:*"]).unwrap();
        assert!(w.allows_tool("fs", "anything"));
        assert!(w.allows_server("everything"));
        assert!(w.allows_tool("everything", "echo"));
        assert!(!w.allows_tool("everything", "get-env"));
        assert!(w.allows_tool("mem", "x"));
        assert!(!w.allows_server("other"));
        assert_eq!(w.named_servers(), vec!["fs", "everything", "mem"]);
        assert_eq!(
            w.named_tools("everything").collect::<Vec<_>>(),
            vec!["echo"]
        );
        let all = McpWhitelist::parse(["*"]).unwrap();
        assert_eq!(all, McpWhitelist::all());
        assert!(all.allows_tool("x", "y"));
        assert!(all.named_servers().is_empty());
    }

    #[test]
    fn bad_entries() {
        for bad in ["a b", "x:", "mcp:", ":tool", "a/b:c"] {
            assert!(McpWhitelist::parse([bad]).is_err(), "{bad}");
        }
    }

    #[test]
    fn serde_round_trip() {
        let w = McpWhitelist::parse(["fs", "everything:echo"]).unwrap();
        let json = serde_json::to_string(&w).unwrap();
        assert_eq!(json, r#"["fs","everything:echo"]"#);
        let back: McpWhitelist = serde_json::from_str(&json).unwrap();
        assert_eq!(back, w);
        assert!(serde_json::from_str::<McpWhitelist>(r#"["bad name"]"#).is_err());
    }
}
