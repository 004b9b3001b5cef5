//! Which model a run talks to, as a task names it: the configured model, or a script.
//!
//! The text form is what a task stores and what `--provider` takes: `scripted:FILE`, or
//! nothing (`settings` and the empty text say the same) for the configured model. It is
//! parsed once where it enters; past that, code matches on [`ProviderSpec`].
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

const SCRIPTED: &str = "scripted:";
const CONFIGURED: &str = "settings";

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub enum ProviderSpec {
    /// The model the settings name (or the built-in one when none is set up).
    #[default]
    Configured,
    /// Turns played from a script file (see [`crate::ScriptedProvider`]).
    Scripted(PathBuf),
}

/// A provider text that names neither the configured model nor a script.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown provider `{0}`: use `scripted:FILE`, or leave it out to use the configured model")]
pub struct UnknownProvider(pub String);

impl ProviderSpec {
    /// The spec of a task's stored provider column: absent is the configured model.
    pub fn from_stored(stored: Option<&str>) -> Result<Self, UnknownProvider> {
        stored.map_or(Ok(ProviderSpec::Configured), str::parse)
    }

    /// What a task stores for it: nothing for the configured model.
    pub fn to_stored(&self) -> Option<String> {
        match self {
            ProviderSpec::Configured => None,
            ProviderSpec::Scripted(_) => Some(self.to_string()),
        }
    }

    pub fn is_configured(&self) -> bool {
        matches!(self, ProviderSpec::Configured)
    }

    /// The script's path made absolute against the current directory, so that the task
    /// reads the same file when it is continued from another folder.
    pub fn absolute(self) -> Self {
        match self {
            ProviderSpec::Scripted(path) => {
                ProviderSpec::Scripted(std::path::absolute(&path).unwrap_or(path))
            }
            other => other,
        }
    }

    /// The script a scripted spec plays.
    pub fn script(&self) -> Option<&Path> {
        match self {
            ProviderSpec::Scripted(path) => Some(path),
            ProviderSpec::Configured => None,
        }
    }
}

impl FromStr for ProviderSpec {
    type Err = UnknownProvider;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.is_empty() || text == CONFIGURED {
            return Ok(ProviderSpec::Configured);
        }
        match text.strip_prefix(SCRIPTED) {
            Some(path) => Ok(ProviderSpec::Scripted(PathBuf::from(path))),
            None => Err(UnknownProvider(text.to_owned())),
        }
    }
}

impl fmt::Display for ProviderSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProviderSpec::Configured => f.write_str(CONFIGURED),
            ProviderSpec::Scripted(path) => write!(f, "{SCRIPTED}{}", path.display()),
        }
    }
}

impl Serialize for ProviderSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ProviderSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
