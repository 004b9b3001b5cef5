//! The records the settings screen edits: the provider form, the limits, MCP servers, and
//! which fields an environment variable currently overrides. The window reads and writes
//! the *stored* values; an override is shown next to its field and never saved.
use serde::{Deserialize, Serialize};

/// The provider as the settings screen edits it. Extra headers are left out on purpose:
/// they may carry credentials, and the window never reads those back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ProviderForm {
    /// The keychain account the API key is filed under.
    pub name: String,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    pub stream: bool,
}

/// The run limits as stored (the window edits these; the environment may override them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct LimitsForm {
    pub max_steps: u32,
    pub max_task_seconds: u64,
    pub max_task_tokens: Option<u64>,
    pub delta_window_ms: u64,
}

crate::wire_enum! {
    /// Whether a new session started in the window is named by the model after its first
    /// answer (one small request without tools). Until then, and whenever it is not, the
    /// title is the first line of the first message.
    #[derive(Default)]
    pub enum SessionTitles {
        Always = "always",
        /// Only with a model that costs nothing: the built-in model, a server on this
        /// computer, or a model whose price is set to zero.
        #[default]
        FreeModels = "free_models",
        Off = "off",
    }
}

crate::wire_enum! {
    /// A stored setting an environment variable can override.
    pub enum SettingField {
        BaseUrl = "base_url",
        Model = "model",
        Stream = "stream",
        MaxSteps = "max_steps",
        MaxTaskSeconds = "max_task_seconds",
        MaxTaskTokens = "max_task_tokens",
        DeltaWindowMs = "delta_window_ms",
        MaxTaskUsd = "max_task_usd",
        MaxDayUsd = "max_day_usd",
        MaxTriggerDayUsd = "max_trigger_day_usd",
    }
}

/// A field whose effective value comes from the environment, not from what is stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct EnvOverride {
    pub field: SettingField,
    /// The variable, e.g. `POCKETPILOT_MODEL`.
    pub variable: String,
    /// Its value as the runs see it.
    pub value: String,
}

/// What the app needs to know at start: whether a model is configured at all, and the
/// built-in model runs use when none is (else the window opens the welcome screen).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Setup {
    pub provider_configured: bool,
    /// The model on this computer that runs use while no provider is configured.
    pub builtin: Option<BuiltinModel>,
}

/// The built-in model as the welcome screen and the session header name it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct BuiltinModel {
    /// The name `pocketpilot models` knows it by.
    pub name: String,
    /// What a person reads ("SmolLM2 135M Instruct").
    pub display_name: String,
    pub size_mib: u32,
    /// Parameters, shortened ("135M"), when the file says.
    pub parameters: Option<String>,
    /// The context the model was trained for, in tokens.
    pub training_context: Option<u32>,
}

/// What the settings screen sends to add (or replace, by name and workspace) an MCP
/// server: `url`, or `command` with `args` and `env`. Core validates it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct NewMcpServer {
    pub name: String,
    /// A workspace folder (stored as its canonical path); `None`: every workspace.
    pub workspace: Option<String>,
    pub command: Option<String>,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub url: Option<String>,
    pub capability: Option<String>,
    pub allow_read_only: bool,
    pub startup_timeout_secs: Option<u64>,
    pub call_timeout_secs: Option<u64>,
}

/// One secret variable an MCP server declares (`--secret-env`), and whether a value is in
/// the keychain: a yes or no, never the value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct McpSecret {
    pub server: String,
    pub var: String,
    pub stored: bool,
}

/// One model's prices in dollars per million tokens, as stored (issue 19).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PriceRow {
    /// A provider label (`openai:gpt-4o-mini`), a model name, `provider:*` or `*`.
    pub model: String,
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    /// For prompt tokens the server reports as cached; `None`: the input price.
    pub cached_input_per_mtok: Option<f64>,
}

/// A price as typed in the settings screen. The runtime parses and checks the text, so a
/// negative or non-numeric price is refused with its message and nothing is saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PriceForm {
    pub model: String,
    pub input: String,
    pub output: String,
    /// Blank: cached prompt tokens cost the input price.
    pub cached: String,
}

/// The money budgets as typed in the settings screen: dollars, blank for no budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct MoneyBudgetsForm {
    pub task_usd: String,
    pub day_usd: String,
    /// The separate daily cap for unattended runs (schedules, watches, webhooks).
    pub trigger_day_usd: String,
}

/// What the current UTC day's model turns cost, against the budgets runs use now (the
/// environment's overrides applied).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SpendToday {
    /// The UTC day, `YYYY-MM-DD`.
    pub day: String,
    pub cost_usd: f64,
    /// Of which unattended runs.
    pub unattended_cost_usd: f64,
    pub turns: u32,
    /// Turns of a model without a price: not in the figures.
    pub unpriced_turns: u32,
    pub day_budget_usd: Option<f64>,
    pub trigger_day_budget_usd: Option<f64>,
    /// When the day's budgets start again (a stamp, UTC).
    pub resets_at: String,
}

/// The settings screen's money section: the prices, the budgets as stored, and today's
/// spend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct MoneySettings {
    pub prices: Vec<PriceRow>,
    pub max_task_usd: Option<f64>,
    pub max_day_usd: Option<f64>,
    pub max_trigger_day_usd: Option<f64>,
    pub today: SpendToday,
}
