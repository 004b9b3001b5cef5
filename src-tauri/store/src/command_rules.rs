//! Command rules (`cargo test *`, allow or deny) of a workspace, and of one session of it.
//! The text is stored as the person wrote it, after `pocketpilot-cmdrules` read it back
//! (the runtime checks it before it gets here); the matching happens in the runtime.
use rusqlite::{params, Connection, OptionalExtension, Row};

use pocketpilot_protocol::{CommandRule, CommandRuleKind, CommandRuleOrigin};

use super::{now, row::At, Result, StoreError};

const COLUMNS: &str = "id, workspace, session_id, kind, rule, origin, created_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<CommandRule> {
    let at = At::new("command_rules", r, 0)?;
    Ok(CommandRule {
        id: at.id,
        workspace: r.get(1)?,
        session_id: r.get(2)?,
        kind: at.name(3, "kind")?,
        rule: r.get(4)?,
        origin: at.name(5, "origin")?,
        created_at: r.get(6)?,
    })
}

/// What [`add`] stores.
#[derive(Debug, Clone)]
pub struct NewRule<'a> {
    pub workspace: &'a str,
    /// `Some` for a rule of that session only.
    pub session_id: Option<i64>,
    pub kind: CommandRuleKind,
    pub rule: &'a str,
    pub origin: CommandRuleOrigin,
}

/// Adds a rule, or returns the same rule already there (same workspace, session, kind and
/// text): adding twice keeps the first date.
pub fn add(c: &Connection, new: &NewRule<'_>) -> Result<CommandRule> {
    if new.rule.trim().is_empty() {
        return Err(StoreError::Invalid("a command rule cannot be empty".into()));
    }
    if let Some(existing) = find(c, new)? {
        return Ok(existing);
    }
    c.execute(
        "INSERT INTO command_rules (workspace, session_id, kind, rule, origin, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            new.workspace,
            new.session_id,
            new.kind.as_str(),
            new.rule,
            new.origin.as_str(),
            now()
        ],
    )?;
    get(c, c.last_insert_rowid())
}

fn find(c: &Connection, new: &NewRule<'_>) -> Result<Option<CommandRule>> {
    Ok(c.query_row(
        &format!(
            "SELECT {COLUMNS} FROM command_rules WHERE workspace = ?1
             AND IFNULL(session_id, 0) = IFNULL(?2, 0) AND kind = ?3 AND rule = ?4"
        ),
        params![new.workspace, new.session_id, new.kind.as_str(), new.rule],
        from_row,
    )
    .optional()?)
}

pub fn get(c: &Connection, id: i64) -> Result<CommandRule> {
    c.query_row(
        &format!("SELECT {COLUMNS} FROM command_rules WHERE id = ?1"),
        [id],
        from_row,
    )
    .optional()?
    .ok_or(StoreError::NotFound {
        what: "command rule",
        id: id.to_string(),
    })
}

/// The rules in force for a run of `session` in `workspace`: the workspace's, and that
/// session's own. Oldest first.
pub fn in_force(c: &Connection, workspace: &str, session: Option<i64>) -> Result<Vec<CommandRule>> {
    let mut stmt = c.prepare(&format!(
        "SELECT {COLUMNS} FROM command_rules WHERE workspace = ?1
         AND (session_id IS NULL OR session_id = ?2) ORDER BY id"
    ))?;
    let rows = stmt.query_map(params![workspace, session], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Every rule of `workspace` (with every session's), or of all workspaces. Oldest first.
pub fn list(c: &Connection, workspace: Option<&str>) -> Result<Vec<CommandRule>> {
    let mut stmt = c.prepare(&format!(
        "SELECT {COLUMNS} FROM command_rules WHERE ?1 IS NULL OR workspace = ?1 ORDER BY id"
    ))?;
    let rows = stmt.query_map([workspace], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Removes a rule; `NotFound` when there is none with that id.
pub fn remove(c: &Connection, id: i64) -> Result<CommandRule> {
    let rule = get(c, id)?;
    c.execute("DELETE FROM command_rules WHERE id = ?1", [id])?;
    Ok(rule)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> Connection {
        let c = Connection::open_in_memory().unwrap();
        c.pragma_update(None, "foreign_keys", "ON").unwrap();
        for m in crate::schema::MIGRATIONS {
            c.execute_batch(m).unwrap();
        }
        c
    }

    fn session(c: &Connection, ws: &str) -> i64 {
        c.execute(
            "INSERT INTO sessions (title, workspace, created_at, updated_at) VALUES ('t', ?1, 'x', 'x')",
            [ws],
        )
        .unwrap();
        c.last_insert_rowid()
    }

    #[test]
    fn a_session_sees_its_workspace_rules_and_its_own_but_no_other_sessions() {
        let c = db();
        let (s1, s2) = (session(&c, "/w"), session(&c, "/w"));
        let rule = |session_id, rule, kind| NewRule {
            workspace: "/w",
            session_id,
            kind,
            rule,
            origin: if session_id.is_some() {
                CommandRuleOrigin::Session
            } else {
                CommandRuleOrigin::Person
            },
        };
        let a = add(&c, &rule(None, "cargo test *", CommandRuleKind::Allow)).unwrap();
        let again = add(&c, &rule(None, "cargo test *", CommandRuleKind::Allow)).unwrap();
        assert_eq!(a, again, "adding twice keeps one rule");
        add(&c, &rule(None, "rm *", CommandRuleKind::Deny)).unwrap();
        add(&c, &rule(Some(s1), "cargo fmt *", CommandRuleKind::Allow)).unwrap();
        add(&c, &rule(Some(s2), "ls *", CommandRuleKind::Allow)).unwrap();
        let other = NewRule {
            workspace: "/other",
            ..rule(None, "ls *", CommandRuleKind::Allow)
        };
        add(&c, &other).unwrap();
        let texts = |v: Vec<CommandRule>| v.into_iter().map(|r| r.rule).collect::<Vec<_>>();
        assert_eq!(
            texts(in_force(&c, "/w", Some(s1)).unwrap()),
            ["cargo test *", "rm *", "cargo fmt *"]
        );
        assert_eq!(
            texts(in_force(&c, "/w", None).unwrap()),
            ["cargo test *", "rm *"]
        );
        assert_eq!(list(&c, Some("/w")).unwrap().len(), 4);
        assert_eq!(list(&c, None).unwrap().len(), 5);
        assert_eq!(remove(&c, a.id).unwrap().rule, "cargo test *");
        assert!(matches!(remove(&c, a.id), Err(StoreError::NotFound { .. })));
        assert!(add(&c, &rule(None, "  ", CommandRuleKind::Allow)).is_err());
        // A deleted session takes its rules along: a later session reusing its id
        // inherits none.
        c.execute("DELETE FROM sessions WHERE id = ?1", [s2])
            .unwrap();
        assert_eq!(list(&c, Some("/w")).unwrap().len(), 2);
    }
}
