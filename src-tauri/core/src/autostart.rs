//! Running in the background: the XDG autostart entry that starts the app at login,
//! hidden in the tray (`~/.config/autostart/pocketpilot.desktop`, under
//! `$XDG_CONFIG_HOME` when set), and whether closing the window keeps the app in the
//! tray. Plain functions, no Tauri: the window's Settings and
//! `pocketpilot autostart on|off|status` do exactly the same thing.
//!
//! The entry is the Desktop Entry format the XDG Autostart spec reads at login. Its
//! `Exec` names the running binary with [`BACKGROUND_FLAG`]; its `TryExec` names the
//! binary alone, so an entry left behind after the package is removed is skipped by the
//! session instead of failing at every login.
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::store::{settings, Store, StoreError};

/// The entry's file name in the autostart folder.
pub const FILE_NAME: &str = "pocketpilot.desktop";
/// The argument that starts the app with its window hidden (tray, triggers, recovery).
pub const BACKGROUND_FLAG: &str = "--background";
/// The `settings` key of "keep running in the tray when the window closes".
pub const KEEP_IN_TRAY_KEY: &str = "keep_in_tray";

#[derive(Debug, thiserror::Error)]
pub enum AutostartError {
    #[error("there is no config directory (neither XDG_CONFIG_HOME nor HOME is set)")]
    NoConfigDir,
    /// A newline cannot be written in a desktop entry, and a non-UTF-8 path cannot be
    /// quoted in one: the entry would start something else.
    #[error("the program path {0} cannot be written in a desktop entry")]
    UnusablePath(PathBuf),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot remove {path}: {source}")]
    Remove {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What the autostart folder holds for PocketPilot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// Where the entry is (or would be written).
    pub path: PathBuf,
    /// The session starts the app at login: the entry exists and is not switched off.
    pub enabled: bool,
    /// The entry's `Exec` line as written, when there is an entry.
    pub exec: Option<String>,
}

/// `$XDG_CONFIG_HOME/autostart/pocketpilot.desktop`, else `~/.config/autostart/…`
/// (`dirs` applies the XDG rule: a relative `XDG_CONFIG_HOME` is ignored).
pub fn entry_path() -> Result<PathBuf, AutostartError> {
    dirs::config_dir()
        .map(|d| d.join("autostart").join(FILE_NAME))
        .ok_or(AutostartError::NoConfigDir)
}

/// The entry's text for `program`.
pub fn entry_text(program: &Path) -> Result<String, AutostartError> {
    let exec = exec_arg(program)?;
    let plain = escape_value(program_str(program)?);
    Ok(format!(
        "[Desktop Entry]\n\
         Type=Application\n\
         Version=1.4\n\
         Name=PocketPilot\n\
         Comment=Starts PocketPilot in the tray at login: triggers armed, interrupted work resumed\n\
         Exec={exec} {BACKGROUND_FLAG}\n\
         TryExec={plain}\n\
         Icon=pocketpilot\n\
         Terminal=false\n\
         NoDisplay=true\n\
         X-GNOME-Autostart-enabled=true\n"
    ))
}

/// Writes the entry for `program` (normally `std::env::current_exe()`): replaced
/// atomically, so a session reading the folder at that moment never sees half of it.
pub fn enable(program: &Path) -> Result<Status, AutostartError> {
    let path = entry_path()?;
    let text = entry_text(program)?;
    let write_err = |source| AutostartError::Write {
        path: path.clone(),
        source,
    };
    let dir = path.parent().ok_or(AutostartError::NoConfigDir)?;
    std::fs::create_dir_all(dir).map_err(write_err)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(write_err)?;
    tmp.write_all(text.as_bytes()).map_err(write_err)?;
    tmp.as_file().sync_all().map_err(write_err)?;
    tmp.persist(&path).map_err(|e| write_err(e.error))?;
    status()
}

/// Removes the entry. `Ok(false)` when there was none.
pub fn disable() -> Result<bool, AutostartError> {
    let path = entry_path()?;
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(AutostartError::Remove { path, source }),
    }
}

/// Whether the session will start the app at login. An entry with `Hidden=true` or
/// `X-GNOME-Autostart-enabled=false` (what desktop settings write to switch an entry
/// off without deleting it) counts as off.
pub fn status() -> Result<Status, AutostartError> {
    let path = entry_path()?;
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Status {
                path,
                enabled: false,
                exec: None,
            })
        }
        Err(source) => return Err(AutostartError::Read { path, source }),
    };
    let value = |key: &str| {
        text.lines()
            .skip_while(|l| l.trim() != "[Desktop Entry]")
            .skip(1)
            .take_while(|l| !l.trim_start().starts_with('['))
            .find_map(|l| {
                let (k, v) = l.split_once('=')?;
                (k.trim() == key).then(|| v.trim().to_owned())
            })
    };
    let switched_off = value("Hidden").is_some_and(|v| v == "true")
        || value("X-GNOME-Autostart-enabled").is_some_and(|v| v == "false");
    Ok(Status {
        path,
        enabled: !switched_off,
        exec: value("Exec"),
    })
}

/// "Keep running in the tray when the window closes". Off by default: the app then
/// stays in the tray only while work is going on or a trigger is armed.
pub fn keep_in_tray(store: &Store) -> Result<bool, StoreError> {
    Ok(store
        .read(|c| settings::get(c, KEEP_IN_TRAY_KEY))?
        .unwrap_or(false))
}

pub fn set_keep_in_tray(store: &Store, on: bool) -> Result<(), StoreError> {
    store.write(|c| settings::set(c, KEEP_IN_TRAY_KEY, &on))
}

/// The binary to start at login: this one. After an upgrade replaced the file under a
/// running app, Linux reports it as `PATH (deleted)`; the new file is at PATH.
pub fn current_program() -> Result<PathBuf, AutostartError> {
    let exe = std::env::current_exe().map_err(|source| AutostartError::Read {
        path: PathBuf::from("/proc/self/exe"),
        source,
    })?;
    Ok(
        match exe.to_str().and_then(|s| s.strip_suffix(" (deleted)")) {
            Some(live) => PathBuf::from(live),
            None => exe,
        },
    )
}

fn program_str(program: &Path) -> Result<&str, AutostartError> {
    program
        .to_str()
        .filter(|s| !s.contains(['\n', '\r']) && !s.is_empty())
        .ok_or_else(|| AutostartError::UnusablePath(program.to_owned()))
}

/// The program as the first word of an `Exec` value: quoted when it holds a character
/// the spec reserves, with `"`, `` ` ``, `$` and `\` escaped inside the quotes; then `%`
/// doubled (field codes) and the backslashes escaped again as any string value's are.
fn exec_arg(program: &Path) -> Result<String, AutostartError> {
    const RESERVED: &[char] = &[
        ' ', '\t', '"', '\'', '\\', '>', '<', '~', '|', '&', ';', '$', '*', '?', '#', '(', ')', '`',
    ];
    let s = program_str(program)?;
    let arg = if s.contains(RESERVED) {
        let mut q = String::with_capacity(s.len() + 2);
        q.push('"');
        for c in s.chars() {
            if matches!(c, '"' | '`' | '$' | '\\') {
                q.push('\\');
            }
            q.push(c);
        }
        q.push('"');
        q
    } else {
        s.to_owned()
    };
    Ok(escape_value(&arg.replace('%', "%%")))
}

/// A desktop entry string value: a backslash is written `\\`.
fn escape_value(s: &str) -> String {
    s.replace('\\', "\\\\")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_path_is_written_as_is() {
        let text = entry_text(Path::new("/usr/bin/pocketpilot")).unwrap();
        assert!(text.contains("\nExec=/usr/bin/pocketpilot --background\n"));
        assert!(text.contains("\nTryExec=/usr/bin/pocketpilot\n"));
    }

    #[test]
    fn reserved_characters_are_quoted_and_escaped() {
        let exec = exec_arg(Path::new("/opt/My Apps/p$p\\x%")).unwrap();
        // Quoted for the space; `$` and `\` escaped in the quotes; `%` doubled; then the
        // string-level escape doubles each backslash.
        assert_eq!(exec, r#""/opt/My Apps/p\\$p\\\\x%%""#);
    }

    #[test]
    fn a_newline_in_the_path_is_refused() {
        assert!(matches!(
            entry_text(Path::new("/tmp/a\nExec=rm")),
            Err(AutostartError::UnusablePath(_))
        ));
    }
}

/// Start at login and keep in the tray, as Settings shows them.
#[derive(Debug, Clone, serde::Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct DesktopSettings {
    /// An autostart entry starts the app hidden in the tray at login.
    pub start_at_login: bool,
    /// Where that entry is (or would be written).
    pub autostart_entry: String,
    /// Closing the window always keeps the app in the tray (otherwise only while work is
    /// going on or a trigger is armed).
    pub keep_in_tray: bool,
}

/// What the settings screen can fail at here: the entry's file, or the stored switch.
#[derive(Debug, thiserror::Error)]
pub enum DesktopError {
    #[error(transparent)]
    Autostart(#[from] AutostartError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl DesktopError {
    pub fn kind(&self) -> pocketpilot_protocol::ErrorKind {
        match self {
            DesktopError::Autostart(_) => pocketpilot_protocol::ErrorKind::Io,
            DesktopError::Store(e) => crate::error_kind::store_kind(e),
        }
    }
}

impl crate::Runtime {
    pub fn desktop_settings(&self) -> Result<DesktopSettings, DesktopError> {
        let entry = status()?;
        Ok(DesktopSettings {
            start_at_login: entry.enabled,
            autostart_entry: entry.path.display().to_string(),
            keep_in_tray: keep_in_tray(&self.store)?,
        })
    }

    /// Writes (with this binary's path) or removes the autostart entry.
    pub fn set_start_at_login(&self, on: bool) -> Result<DesktopSettings, DesktopError> {
        if on {
            enable(&current_program()?)?;
        } else {
            disable()?;
        }
        self.desktop_settings()
    }

    pub fn set_keep_in_tray(&self, on: bool) -> Result<DesktopSettings, DesktopError> {
        set_keep_in_tray(&self.store, on)?;
        self.desktop_settings()
    }
}
