use rusqlite::{params, Connection, OptionalExtension};
use serde::{de::DeserializeOwned, Serialize};

use super::{Result, StoreError};

pub fn get<T: DeserializeOwned>(c: &Connection, key: &str) -> Result<Option<T>> {
    let text: Option<String> = c
        .query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| {
            r.get(0)
        })
        .optional()?;
    text.map(|t| {
        serde_json::from_str(&t)
            .map_err(|e| StoreError::Invalid(format!("setting `{key}` is not valid: {e}")))
    })
    .transpose()
}

pub fn set<T: Serialize>(c: &Connection, key: &str, value: &T) -> Result<()> {
    c.execute(
        "INSERT INTO settings (key, value) VALUES (?1, ?2)
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        params![key, super::json(value)],
    )?;
    Ok(())
}
