//! Reading typed values out of rows. A value that does not parse is an error naming its
//! table, row and column — never a default standing in for a corrupt row.
use pocketpilot_protocol::WireName;
use rusqlite::types::Type;
use rusqlite::Row;
use serde::de::DeserializeOwned;

/// A stored value that does not parse: carried through rusqlite as a conversion failure and
/// turned into `StoreError::CorruptRow` at the store's edge.
#[derive(Debug, thiserror::Error)]
#[error("row {id} of `{table}` is corrupt: column `{column}`: {detail}")]
pub struct CorruptRow {
    pub table: &'static str,
    pub id: String,
    pub column: &'static str,
    pub detail: String,
}

/// Where a row comes from, for the error when one of its values does not parse.
#[derive(Clone, Copy)]
pub(crate) struct At<'a> {
    pub table: &'static str,
    pub row: &'a Row<'a>,
    pub id: i64,
}

impl<'a> At<'a> {
    /// `id_column` holds the row's identity (for the error message).
    pub fn new(table: &'static str, row: &'a Row<'a>, id_column: usize) -> rusqlite::Result<Self> {
        Ok(Self {
            table,
            row,
            id: row.get(id_column)?,
        })
    }

    fn corrupt(&self, idx: usize, column: &'static str, detail: String) -> rusqlite::Error {
        rusqlite::Error::FromSqlConversionFailure(
            idx,
            Type::Text,
            Box::new(CorruptRow {
                table: self.table,
                id: self.id.to_string(),
                column,
                detail,
            }),
        )
    }

    /// A text column holding one of a wire enum's names.
    pub fn name<T: WireName>(&self, idx: usize, column: &'static str) -> rusqlite::Result<T> {
        let text: String = self.row.get(idx)?;
        T::from_name(&text).map_err(|e| self.corrupt(idx, column, e.to_string()))
    }

    /// A nullable text column holding one of a wire enum's names.
    pub fn opt_name<T: WireName>(
        &self,
        idx: usize,
        column: &'static str,
    ) -> rusqlite::Result<Option<T>> {
        let text: Option<String> = self.row.get(idx)?;
        text.map(|t| T::from_name(&t).map_err(|e| self.corrupt(idx, column, e.to_string())))
            .transpose()
    }

    /// A text column holding JSON.
    pub fn json<T: DeserializeOwned>(
        &self,
        idx: usize,
        column: &'static str,
    ) -> rusqlite::Result<T> {
        let text: String = self.row.get(idx)?;
        serde_json::from_str(&text).map_err(|e| self.corrupt(idx, column, e.to_string()))
    }

    /// A nullable text column holding JSON.
    pub fn opt_json<T: DeserializeOwned>(
        &self,
        idx: usize,
        column: &'static str,
    ) -> rusqlite::Result<Option<T>> {
        let text: Option<String> = self.row.get(idx)?;
        text.map(|t| serde_json::from_str(&t).map_err(|e| self.corrupt(idx, column, e.to_string())))
            .transpose()
    }

    /// A value that parsed but means nothing valid (e.g. an event whose payload does not
    /// fit its kind).
    pub fn invalid(
        &self,
        idx: usize,
        column: &'static str,
        detail: impl ToString,
    ) -> rusqlite::Error {
        self.corrupt(idx, column, detail.to_string())
    }
}
