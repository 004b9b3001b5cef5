//! Full-text search over the transcripts: the person's words, the answers and tool output
//! (the `entry_search` FTS5 index, kept by triggers on `entries` in the entry's own
//! transaction). A hit names its session and entry and carries the matching words with
//! some context (`snippet()`), the match between [`MARK_START`] and [`MARK_END`].
use pocketpilot_protocol::EntryKind;
use rusqlite::{params, Connection, Row};
use serde::Serialize;

use super::Result;

/// Starts the matched words in a snippet (a control character no text typed contains).
pub const MARK_START: char = '\u{2}';
/// Ends the matched words in a snippet.
pub const MARK_END: char = '\u{3}';
/// The most hits one search answers.
pub const MAX_HITS: u32 = 200;

/// One entry that matched.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SearchHit {
    pub entry_id: i64,
    pub session_id: i64,
    pub task_id: Option<i64>,
    /// `user`, `assistant` or `tool_result`.
    #[cfg_attr(feature = "specta", specta(type = String))]
    pub kind: EntryKind,
    pub session_title: String,
    pub workspace: String,
    pub created_at: String,
    /// The matching words with a few around them; the match is marked.
    pub snippet: String,
}

/// What a person typed, as an FTS5 query: each word quoted (so `-`, `:`, `"` and `*` are
/// plain text, never syntax), all of them required, the last one also as a prefix so
/// that results come while the word is being typed. `None` when nothing is searchable.
pub fn fts_query(typed: &str) -> Option<String> {
    let words: Vec<String> = typed
        .split_whitespace()
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect();
    let (last, rest) = words.split_last()?;
    let mut q = rest.join(" ");
    if !q.is_empty() {
        q.push(' ');
    }
    // `"word"*`: the word itself or any word it starts.
    q.push_str(last);
    q.push('*');
    Some(q)
}

fn from_row(r: &Row<'_>) -> rusqlite::Result<SearchHit> {
    Ok(SearchHit {
        entry_id: r.get(0)?,
        session_id: r.get(1)?,
        task_id: r.get(2)?,
        kind: EntryKind::of(&r.get::<_, String>(3)?),
        session_title: r.get(4)?,
        workspace: r.get(5)?,
        created_at: r.get(6)?,
        // One line: the words around the match, whatever lines they came from.
        snippet: r
            .get::<_, Option<String>>(7)?
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    })
}

/// The newest entries matching `typed` (at most `limit`, capped at [`MAX_HITS`]), in
/// `workspace` only when given. Newest first: FTS5 walks its index from the newest row
/// and stops at the limit, so a common word costs no more than a rare one.
pub fn search(
    c: &Connection,
    typed: &str,
    workspace: Option<&str>,
    limit: u32,
) -> Result<Vec<SearchHit>> {
    let Some(query) = fts_query(typed) else {
        return Ok(Vec::new());
    };
    let limit = limit.clamp(1, MAX_HITS);
    let mut stmt = c.prepare_cached(
        "SELECT e.id, e.session_id, e.task_id, e.kind, s.title, s.workspace, e.created_at,
                snippet(entry_search, 0, char(2), char(3), '…', 16)
         FROM entry_search
         JOIN entries e ON e.id = entry_search.rowid
         JOIN sessions s ON s.id = e.session_id
         WHERE entry_search MATCH ?1 AND (?2 IS NULL OR s.workspace = ?2)
         ORDER BY entry_search.rowid DESC
         LIMIT ?3",
    )?;
    let rows = stmt.query_map(params![query, workspace, limit], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

#[cfg(test)]
mod tests {
    use super::fts_query;

    #[test]
    fn typed_words_are_quoted_and_the_last_is_a_prefix() {
        assert_eq!(fts_query("  "), None);
        assert_eq!(fts_query("cargo").as_deref(), Some("\"cargo\"*"));
        assert_eq!(fts_query("cargo te").as_deref(), Some("\"cargo\" \"te\"*"));
        // Syntax a person may type is text: a quote, a minus, a column filter, NEAR.
        assert_eq!(
            fts_query("say \"hi -x text:a").as_deref(),
            Some("\"say\" \"\"\"hi\" \"-x\" \"text:a\"*")
        );
    }
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod search_tests;
