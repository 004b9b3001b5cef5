//! Capabilities: what a tool call needs leave for, and what a grant or a workspace rule
//! names. Only the grammar is checked here; which verbs exist and what a rule covers is the
//! policy's decision (`pocketpilot-tools`' `policy`).
use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

/// A capability (`fs:write`), an MCP tool's (`mcp:<server>:<tool>:<verb>`), or, as a grant
/// or a rule, a wider name: an area (`shell`), an area's or a server's wildcard (`mcp:*`,
/// `mcp:<server>:*`), one MCP tool (`mcp:<server>:<tool>`) or everything (`*`).
///
/// Grammar: parts joined by `:`, none empty, none holding a space or a control character;
/// `*` stands for a whole part only. On the wire and in the store it is that string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "specta", derive(specta::Type), specta(transparent))]
pub struct Capability(Cow<'static, str>);

/// A string that is not a capability, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{found}` is not a capability ({why}): use `area:verb` (fs:write), an area (shell), `mcp:SERVER:TOOL` or `*`")]
pub struct BadCapability {
    pub found: String,
    pub why: &'static str,
}

impl Capability {
    /// Running a command (`run_command`).
    pub const SHELL_EXECUTE: Self = Self(Cow::Borrowed("shell:execute"));
    /// What a command needs, besides `shell:execute`, to reach the network; fetching a URL.
    pub const NET_NETWORK: Self = Self(Cow::Borrowed("net:network"));
    /// Writing or editing a file in the workspace.
    pub const FS_WRITE: Self = Self(Cow::Borrowed("fs:write"));
    /// Deleting a file or folder in the workspace.
    pub const FS_DELETE: Self = Self(Cow::Borrowed("fs:delete"));
    /// Keeping a memory the agent proposed.
    pub const MEMORY_WRITE: Self = Self(Cow::Borrowed("memory:write"));
    /// An MCP server's tools unless its configuration says otherwise: each call asks.
    pub const MCP_EXECUTE: Self = Self(Cow::Borrowed("mcp:execute"));
    /// Everything (a rule or grant only).
    pub const EVERYTHING: Self = Self(Cow::Borrowed("*"));

    /// The name, as the policy matches it and the store keeps it. `const`, so the built-in
    /// names can be spelled once, here, and used where a `&str` is wanted.
    pub const fn as_str(&self) -> &str {
        match &self.0 {
            Cow::Borrowed(s) => s,
            Cow::Owned(s) => s.as_str(),
        }
    }
}

/// The built-in capabilities' names, for code that matches names (a tool declares its
/// capability as one). Derived from the constants above so that each is spelled once.
pub mod name {
    use super::Capability;

    pub const SHELL_EXECUTE: &str = Capability::SHELL_EXECUTE.as_str();
    pub const NET_NETWORK: &str = Capability::NET_NETWORK.as_str();
    pub const FS_WRITE: &str = Capability::FS_WRITE.as_str();
    pub const FS_DELETE: &str = Capability::FS_DELETE.as_str();
    pub const MEMORY_WRITE: &str = Capability::MEMORY_WRITE.as_str();
    pub const MCP_EXECUTE: &str = Capability::MCP_EXECUTE.as_str();
}

fn check(s: &str) -> Result<(), &'static str> {
    if s.is_empty() {
        return Err("it is empty");
    }
    for part in s.split(':') {
        if part.is_empty() {
            return Err("a part between colons is empty");
        }
        if part.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err("it holds a space or a control character");
        }
        if part != "*" && part.contains('*') {
            return Err("`*` stands for a whole part only");
        }
    }
    Ok(())
}

impl FromStr for Capability {
    type Err = BadCapability;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        check(s).map_err(|why| BadCapability {
            found: s.to_owned(),
            why,
        })?;
        Ok(Self(Cow::Owned(s.to_owned())))
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl AsRef<str> for Capability {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl From<Capability> for String {
    fn from(c: Capability) -> Self {
        c.0.into_owned()
    }
}

impl serde::Serialize for Capability {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Capability {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        check(&text).map_err(|why| {
            serde::de::Error::custom(BadCapability {
                found: text.clone(),
                why,
            })
        })?;
        Ok(Self(Cow::Owned(text)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forms_policy_matches_parse_and_print_as_they_were_written() {
        for s in [
            "fs:write",
            "shell",
            "*",
            "mcp:*",
            "mcp:files:*",
            "mcp:files",
            "mcp:files:read_text_file",
            "mcp:files:read_text_file:read",
            "mcp:srv-1.local:do.thing:execute",
        ] {
            let c: Capability = s.parse().unwrap();
            assert_eq!(c.as_str(), s);
            assert_eq!(c.to_string(), s);
            assert_eq!(serde_json::to_value(&c).unwrap(), s);
            let back: Capability = serde_json::from_value(serde_json::json!(s)).unwrap();
            assert_eq!(back, c);
        }
    }

    #[test]
    fn malformed_names_are_refused_with_the_reason() {
        for (s, why) in [
            ("", "it is empty"),
            (":", "a part between colons is empty"),
            ("fs:", "a part between colons is empty"),
            (":write", "a part between colons is empty"),
            ("mcp::tool:read", "a part between colons is empty"),
            ("fs: write", "it holds a space or a control character"),
            ("fs:write\n", "it holds a space or a control character"),
            ("shell execute", "it holds a space or a control character"),
            ("fs:wr*te", "`*` stands for a whole part only"),
            ("mcp:files*", "`*` stands for a whole part only"),
        ] {
            let err = s.parse::<Capability>().unwrap_err();
            assert_eq!((err.found.as_str(), err.why), (s, why));
            assert!(err.to_string().contains("use `area:verb`"), "{err}");
            let stored = serde_json::from_value::<Capability>(serde_json::json!(s));
            assert!(stored.is_err(), "{s:?} deserialized");
        }
    }

    #[test]
    fn the_built_in_names_are_capabilities_and_equal_their_parsed_form() {
        for c in [
            Capability::SHELL_EXECUTE,
            Capability::NET_NETWORK,
            Capability::FS_WRITE,
            Capability::FS_DELETE,
            Capability::MEMORY_WRITE,
            Capability::MCP_EXECUTE,
            Capability::EVERYTHING,
        ] {
            assert_eq!(c.as_str().parse::<Capability>().unwrap(), c);
        }
        assert_eq!(name::SHELL_EXECUTE, "shell:execute");
        assert_eq!(name::MEMORY_WRITE, "memory:write");
    }
}
