//! The built-in model as the window shows it: the models kept on this computer, the
//! state of the server that runs them, a download's progress, and the settings.
//! Sizes are MiB in `u32` or `f64` (TypeScript numbers, never BigInt).
use serde::{Deserialize, Serialize};

crate::wire_enum! {
    /// Where a kept model came from.
    pub enum ModelOrigin {
        /// A file the person chose; the model is a link to it or a copy.
        Imported = "imported",
        /// Downloaded from a URL.
        Pulled = "pulled",
        /// Shipped with the app; its file stays where the app installed it.
        Bundled = "bundled",
    }
}

/// One model in the Models list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ModelRow {
    /// The name `pocketpilot models` knows it by.
    pub name: String,
    /// What a person reads ("SmolLM2 135M Instruct").
    pub display_name: String,
    pub size_mib: u32,
    /// Parameters, shortened ("135M"), when the file says.
    pub parameters: Option<String>,
    /// The weights' quantisation ("Q4_1"), when the file says.
    pub quantization: Option<String>,
    /// The context the model was trained for, in tokens.
    pub training_context: Option<u32>,
    /// Runs without a configured provider use this one.
    pub in_use: bool,
    pub source: ModelOrigin,
}

/// The built-in model's server, as Settings and the thinking line show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum LocalServerStatus {
    /// Not running; it starts when a run needs it.
    Stopped,
    /// Loading the model; a run is waiting for it.
    Starting { model: String },
    Ready {
        model: String,
        /// On 127.0.0.1.
        port: u16,
        /// Resident memory of the server process.
        memory_mib: u32,
        /// The window it was started with, in tokens.
        context: u32,
    },
    /// It exited when it should not have; the last lines of its log say why.
    Crashed {
        model: String,
        reason: String,
        log_tail: Vec<String>,
    },
}

/// How far a download is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PullProgressEvent {
    /// On disk, a resumed part included.
    pub done_mib: f64,
    /// `None` when the server did not say how large the file is.
    pub total_mib: Option<f64>,
    /// MiB a second over this download.
    pub rate_mib_s: f64,
    pub eta_secs: Option<f64>,
}

/// The built-in model's settings as the window edits them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct LocalModelForm {
    /// Off: runs without a configured provider fail with "no model" instead.
    pub enabled: bool,
    /// Minutes without a request after which the server stops and gives its memory back.
    pub idle_minutes: u32,
    /// The largest window, in tokens, the server is started with.
    pub max_context: u32,
}
