//! "Export…" in the session header. The shell asks where, in the system's save dialog, so
//! the window never names a path it could write to; the file's extension picks the format
//! (`.json`, else Markdown). The text is core's (`export_text`), as `pocketpilot export`
//! writes it.
use std::path::{Path, PathBuf};

use pocketpilot_core::api::export::{file_name, ExportFormat};
use pocketpilot_core::ops;
use pocketpilot_protocol::ErrorKind;
use tauri::{AppHandle, Manager, State};
use tauri_plugin_dialog::DialogExt;

use super::wire::CommandError;
use super::{call, AppState};

type Result<T> = std::result::Result<T, CommandError>;

/// Writes a session where the person picks; resolves with the path written, or `null`
/// when they cancelled.
#[tauri::command]
#[specta::specta]
pub async fn export_session(
    app: AppHandle,
    state: State<'_, AppState>,
    session_id: i64,
) -> Result<Option<String>> {
    let session = call(&state, move |rt| rt.call(ops::GetSession { session_id })).await?;
    let name = file_name(session.id, &session.title, ExportFormat::Md.extension());
    let start = app.path().download_dir().ok();
    let picked = tauri::async_runtime::spawn_blocking(move || {
        let mut dialog = app
            .dialog()
            .file()
            .set_title("Export the session")
            .set_file_name(name)
            .add_filter("Markdown", &["md"])
            .add_filter("JSON", &["json"]);
        if let Some(dir) = start {
            dialog = dialog.set_directory(dir);
        }
        dialog.blocking_save_file()
    })
    .await
    .map_err(|e| io_error(format!("the save dialog did not answer: {e}")))?;
    let Some(picked) = picked else {
        return Ok(None);
    };
    let path = picked
        .into_path()
        .map_err(|e| io_error(format!("not a file path: {e}")))?;
    let format = if path.extension().is_some_and(|x| x == "json") {
        ExportFormat::Json
    } else {
        ExportFormat::Md
    };
    let text = call(&state, move |rt| {
        rt.call(ops::ExportText { session_id, format })
    })
    .await?;
    let written = path.clone();
    tauri::async_runtime::spawn_blocking(move || write_whole(&written, &text))
        .await
        .map_err(|e| io_error(format!("the write did not finish: {e}")))?
        .map_err(|e| io_error(format!("cannot write {}: {e}", path.display())))?;
    Ok(Some(path.display().to_string()))
}

/// Written beside, then renamed over: the file at `path` is a whole export or the old one.
fn write_whole(path: &Path, text: &str) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".part");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

fn io_error(message: String) -> CommandError {
    CommandError::new(ErrorKind::Io, message)
}
