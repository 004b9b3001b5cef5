//! An editor's view of the workspace's files, when a client offers one (ACP's
//! `fs/read_text_file` and `fs/write_text_file`). The file tools still resolve every path
//! with the guard and the sandbox first, and a write still waits for the person's
//! approval: the editor only changes where the text comes from and goes to.
use std::path::Path;

use async_trait::async_trait;

/// The client's file methods, as the client offered them.
#[async_trait]
pub trait EditorFiles: Send + Sync {
    /// `read_file` asks the editor (its buffer, saved or not) rather than the disk.
    fn reads(&self) -> bool;
    /// `write_file` and `edit_file` hand the approved text to the editor.
    fn writes(&self) -> bool;
    /// The file's text as the editor holds it. `path` is absolute and guarded.
    async fn read_text(&self, path: &Path) -> Result<String, String>;
    /// Gives the editor the file's new text. `path` is absolute and guarded.
    async fn write_text(&self, path: &Path, content: &str) -> Result<(), String>;
}
