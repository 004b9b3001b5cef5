//! The one command surface: every operation the window, the CLI, the triggers and the
//! evals perform is a typed op, handed to [`crate::Runtime::call`]. An op is plain data
//! (public fields; most are `Clone` and `Debug`, so a caller can log or queue one), and its
//! reply type is fixed by the op. An op whose work waits on the network or a run replies
//! with a [`Pending`] future; every other op replies at once.
//!
//! Each op is declared next to its handler (`op!` in each `api` module) and listed here,
//! so `pocketpilot_core::ops::*` is the whole surface. Nothing in core imports this list.
//!
//! Why here and not in `protocol`: most replies (`Task`, `Session`, `Approval`, stored
//! events) are the store's types, and several requests (`NewTask`, undo targets, limits)
//! are core's. `protocol` sits below both, so it cannot name them.
pub use crate::api::call::{Op, Pending};

// Every op, declared next to its handler.
pub use crate::api::command_rules::{
    AddCommandRule, ExplainCall, GetCommandOffer, ListCommandRules, RemoveCommandRule,
    ResolveApprovalKeeping,
};
pub use crate::api::confinement::{
    GetCommandSandbox, GetWorkspaceSandbox, SetWorkspaceSandbox, VetSessionGrant,
};
pub use crate::api::context::{
    CompactNow, ContextTurns, FreshContext, GetContextMarks, GetContextUse, ListCompactions,
};
pub use crate::api::cost::{GetPrices, GetSessionCost, GetTaskCost, GetUsage, SetPrices};
pub use crate::api::data::{
    BackupNow, GetBackupSettings, KeepDailyBackups, ListBackups, PendingRestore, ScheduleRestore,
    SetBackupSettings,
};
pub use crate::api::export::{ExportIndex, ExportSession, ExportText};
pub use crate::api::fork::ForkSession;
pub use crate::api::hooks::{ConsentHooks, GetHooksInEffect, RevokeHooks};
pub use crate::api::local::{
    GetLocalModelForm, ImportLocalModel, ListLocalModels, RemoveLocalModel, SaveLocalModelForm,
    UseLocalModel,
};
pub use crate::api::money::{DeletePrice, GetMoneySettings, SetMoneyBudgets, SetPrice};
pub use crate::api::open::{GetInstructionText, InstructionFile, TaskFile};
pub use crate::api::open_session::OpenSession;
pub use crate::api::pause::{
    ContinueTask, GetPauseOffer, NextLiftedPause, ResumeLiftedPauses, SetClock, StopTask,
};
pub use crate::api::plan::{
    ApprovePlan, EditPlan, GetSessionPlanMode, PlanOfTask, RejectPlan, SessionPlans,
    SetSessionPlanMode, SubmitPlanning,
};
pub use crate::api::records::{
    AddMcpServerConfig, GetApproval, GetKeepInTray, GetPlan, GetResumeOnStart, OpenTaskOfSession,
    RecordEvents, SetChangeSetChanges, TaskChangeSets,
};
pub use crate::api::rewind::Rewind;
pub use crate::api::rules::{
    AddMemory, DeleteMemory, EditMemory, GetRulesInEffect, ListMemories, SetMemoryAutoAccept,
    SetSkillEnabled,
};
pub use crate::api::search::Search;
pub use crate::api::service::{
    AttachEditor, CancelTask, ChangeSummaries, CreateTask, DataDir, DetachEditor, DriveSession,
    GetChangeList, GetChangeSettings, GetCounts, GetInbox, GetLimits, GetPolicyRules,
    GetProviderSettings, GetSession, GetSessionHistory, GetTask, InterruptedSessions, IsBusy,
    IsRunningHere, ListModels, ListSessions, ListSubmissions, ListTasks, PendingApprovals,
    PersonHooksFile, PruneChanges, Redo, RenameSession, ResolveApproval, ResumeAll, ResumeOnStart,
    Say, SessionEntries, SessionTasks, SetChangeSettings, SetLimits, SetPolicyRules,
    SetProviderSettings, SetResumeOnStart, SetSessionModes, StartTask, StoredLimits,
    StoredProviderSettings, SubmitTask, SubscribeTask, TaskEvents, TestConnection, Undo,
    WaitSettled, WatchFeed, Withdraw,
};
pub use crate::api::session_delete::DeleteSession;
pub use crate::api::settings::{
    AddMcpServer, AnnounceTriggers, ApiKeyStored, DeleteApiKey, DeleteMcpServer, GetLimitsForm,
    GetProviderForm, GetSessionTitles, GetSetupStatus, ListMcpSecrets, ListMcpServers,
    SaveLimitsForm, SaveProviderForm, SetApiKey, SetMcpSecret, SetSessionTitles, SettingOverrides,
    TitlesSettled,
};
pub use crate::api::triggers::{
    AgentChangesSince, ClaimTick, CreateSchedule, CreateWatch, CreateWebhook, DeleteSchedule,
    DeleteWatch, DeleteWebhook, GetSchedule, GetSetting, GetWatch, GetWebhook, ListSchedules,
    ListWatches, ListWebhooks, NoteScheduleTask, NoteWatchFired, NoteWebhookFired,
    RecordTriggerRun, SetSchedulePaused, SetSetting, SetSettingField, SetWatchPaused,
    SetWebhookPaused, ToolCallInFlight, TriggerDefinitions, TriggerOutcome, TriggerRuns,
};
