//! What a transcript entry is.
use std::fmt;
use std::str::FromStr;

/// The kind of a transcript entry. The runtime's own kinds are closed; a write through the
/// inbox names its own display-only kind (`note`, `app.banner`), which the model never
/// sees and which can never be read back as one of the runtime's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// Something the person typed: a goal, a follow-up, a steer.
    User,
    Assistant,
    ToolResult,
    /// Instructions for the model the runtime placed in the transcript.
    System,
    /// A fresh context: the model's view starts after it.
    Reset,
    /// A summary standing for earlier entries in the model's view.
    Compaction,
    /// A kind a caller named (through an inbox write): shown, never sent to the model.
    Written(String),
}

/// The names of the runtime's kinds, in the store's text column and on the wire.
const RUNTIME: [(EntryKind, &str); 6] = [
    (EntryKind::User, "user"),
    (EntryKind::Assistant, "assistant"),
    (EntryKind::ToolResult, "tool_result"),
    (EntryKind::System, "system"),
    (EntryKind::Reset, "reset"),
    (EntryKind::Compaction, "compaction"),
];

impl EntryKind {
    pub fn as_str(&self) -> &str {
        match self {
            EntryKind::Written(name) => name,
            kind => RUNTIME
                .iter()
                .find(|(k, _)| k == kind)
                .map_or("", |(_, name)| name),
        }
    }

    /// Total: a name that is not one of the runtime's is a written kind.
    pub fn of(name: &str) -> Self {
        RUNTIME
            .iter()
            .find(|(_, n)| *n == name)
            .map_or_else(|| EntryKind::Written(name.to_owned()), |(k, _)| k.clone())
    }

    /// The kind a write may name: one of its own, never one of the runtime's (a `system`
    /// or `compaction` entry would reach the model as instructions or a summary).
    pub fn written(name: &str) -> Option<Self> {
        let trimmed = name.trim();
        (!trimmed.is_empty() && !Self::of(trimmed).is_runtime())
            .then(|| EntryKind::Written(name.to_owned()))
    }

    /// Whether only the runtime writes entries of this kind.
    pub fn is_runtime(&self) -> bool {
        !matches!(self, EntryKind::Written(_))
    }
}

impl FromStr for EntryKind {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self::of(s))
    }
}

impl fmt::Display for EntryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for EntryKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for EntryKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Self::of(&String::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_runtime_name_reads_back_as_its_kind_and_others_as_written() {
        for (kind, name) in RUNTIME {
            assert_eq!(EntryKind::of(name), kind);
            assert_eq!(EntryKind::of(name).as_str(), name);
            assert!(EntryKind::of(name).is_runtime());
        }
        let note = EntryKind::of("app.note");
        assert_eq!(note, EntryKind::Written("app.note".into()));
        assert!(!note.is_runtime());
        assert_eq!(EntryKind::written("app.note"), Some(note));
        for refused in ["", "  ", "system", " compaction", "user", "reset"] {
            assert_eq!(EntryKind::written(refused), None, "{refused:?}");
        }
        assert_eq!(
            serde_json::to_string(&EntryKind::ToolResult)
                .ok()
                .as_deref(),
            Some("\"tool_result\"")
        );
    }
}
