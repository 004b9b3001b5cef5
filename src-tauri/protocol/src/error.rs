//! Error kinds: stable names for what went wrong, for events, the window and exit codes.
//! Each layer keeps its own thiserror enum and maps it to one of these; nobody matches an
//! error's message text.

crate::wire_enum! {
    /// Why a request to the runtime, or a task, failed.
    pub enum ErrorKind {
        // Requests a caller got wrong (a CLI usage error, an HTTP 4xx).
        EmptyGoal = "empty_goal",
        Workspace = "workspace",
        AlreadyEnded = "already_ended",
        NotPending = "not_pending",
        InvalidArguments = "invalid_arguments",
        ConversationBusy = "conversation_busy",
        ConversationIdle = "conversation_idle",
        RequestMismatch = "request_mismatch",
        NotQueued = "not_queued",
        NotFound = "not_found",
        InboxFull = "inbox_full",
        Settings = "settings",
        InvalidConfig = "invalid_config",
        InvalidName = "invalid_name",
        Duplicate = "duplicate",
        InvalidExpression = "invalid_expression",
        OutsideWorkspace = "outside_workspace",
        InvalidPattern = "invalid_pattern",
        /// Nothing to undo or redo as asked (none recorded, already undone or redone, or
        /// the kept contents were pruned).
        NothingToUndo = "nothing_to_undo",
        /// Undo or redo refused: files changed since (the report lists them).
        UndoConflict = "undo_conflict",
        /// A session cannot be deleted while one of its tasks is not done (queued,
        /// running, waiting for an approval, paused): stop it first.
        SessionActive = "session_active",
        // Tasks that could not go on.
        NoModel = "no_model",
        /// The built-in model (the server this computer runs) could not start or answer.
        LocalModel = "local_model",
        StepsExhausted = "steps_exhausted",
        Record = "record",
        LeaseLost = "lease_lost",
        ModelAuth = "model_auth",
        ModelNotFound = "model_not_found",
        ModelRateLimited = "model_rate_limited",
        ModelServer = "model_server",
        ModelRequest = "model_request",
        ModelConnect = "model_connect",
        ModelTimeout = "model_timeout",
        ModelStream = "model_stream",
        ModelInvalidResponse = "model_invalid_response",
        ModelScripted = "model_scripted",
        ModelConfig = "model_config",
        /// The request did not fit the model's context window; the runtime compacts and
        /// asks again rather than sending the same request.
        ModelContextOverflow = "model_context_overflow",
        /// The answer went over a per-turn cap (text, tool-argument bytes, tool calls);
        /// the connection was closed. Asking again would stream the same.
        ModelStreamLimit = "model_stream_limit",
        // The machine.
        Listen = "listen",
        Watch = "watch",
        Store = "store",
        Keychain = "keychain",
        Io = "io",
        /// The change journal's files (blob store, workspace) failed.
        ChangeJournal = "change_journal",
        /// The disk holding the data directory is full.
        DiskFull = "disk_full",
        /// A `UserPromptSubmit` hook refused the goal (exit code 2 or `decision: block`).
        HookBlocked = "hook_blocked",
    }
}

impl ErrorKind {
    /// The caller asked for something that cannot be done as asked: fix the request, do
    /// not retry it.
    pub fn is_usage(self) -> bool {
        use ErrorKind::*;
        match self {
            EmptyGoal | Workspace | AlreadyEnded | NotPending | InvalidArguments
            | ConversationBusy | ConversationIdle | RequestMismatch | NotQueued | NotFound
            | InboxFull | Settings | InvalidConfig | InvalidName | Duplicate
            | InvalidExpression | OutsideWorkspace | InvalidPattern | NothingToUndo
            | UndoConflict | SessionActive => true,
            NoModel | LocalModel | StepsExhausted | Record | LeaseLost | ModelAuth
            | ModelNotFound | ModelRateLimited | ModelServer | ModelRequest | ModelConnect
            | ModelTimeout | ModelStream | ModelInvalidResponse | ModelScripted | ModelConfig
            | ModelContextOverflow | ModelStreamLimit | Store | Keychain | Io | Listen | Watch
            | ChangeJournal | DiskFull | HookBlocked => false,
        }
    }

    /// The same request may succeed later, unchanged.
    pub fn is_retryable(self) -> bool {
        use ErrorKind::*;
        match self {
            ModelRateLimited | ModelServer | ModelConnect | ModelTimeout | ModelStream
            | ConversationBusy | InboxFull | Store | Io | Listen | Watch | DiskFull => true,
            EmptyGoal | Workspace | AlreadyEnded | NotPending | InvalidArguments
            | ConversationIdle | RequestMismatch | NotQueued | NotFound | Settings
            | InvalidConfig | NoModel | LocalModel | StepsExhausted | Record | LeaseLost
            | ModelAuth | ModelNotFound | ModelRequest | ModelInvalidResponse | ModelScripted
            | ModelConfig | ModelContextOverflow | ModelStreamLimit | Keychain | InvalidName
            | Duplicate | InvalidExpression | OutsideWorkspace | InvalidPattern | NothingToUndo
            | UndoConflict | ChangeJournal | SessionActive | HookBlocked => false,
        }
    }

    /// The model (its server, its settings) failed, not the runtime.
    pub fn is_model(self) -> bool {
        use ErrorKind::*;
        matches!(
            self,
            ModelAuth
                | LocalModel
                | ModelNotFound
                | ModelRateLimited
                | ModelServer
                | ModelRequest
                | ModelConnect
                | ModelTimeout
                | ModelStream
                | ModelInvalidResponse
                | ModelScripted
                | ModelConfig
                | ModelContextOverflow
                | ModelStreamLimit
        )
    }
}

impl ErrorKind {
    /// A plain sentence for a person, naming the model server (`host:port`) where it is
    /// known: what the window shows first, with the full error behind a disclosure.
    pub fn plain_sentence(self, server: Option<&str>) -> String {
        use ErrorKind::*;
        let at = |what: &str| match server {
            Some(s) => format!("{what} at {s}"),
            None => what.to_string(),
        };
        match self {
            ModelConnect => format!("Can't reach {}.", at("the model server")),
            ModelTimeout => format!(
                "{} took too long to answer.",
                capital(&at("the model server"))
            ),
            ModelAuth => format!(
                "{} did not accept the API key.",
                capital(&at("the model server"))
            ),
            ModelNotFound => "The model server does not know this model.".into(),
            ModelRateLimited => {
                "The model server is limiting requests; try again in a moment.".into()
            }
            ModelServer => format!(
                "{} had an internal error.",
                capital(&at("the model server"))
            ),
            ModelRequest => "The model server refused the request.".into(),
            ModelStream => "The model's answer broke off.".into(),
            ModelStreamLimit => {
                "The model's answer grew past the size allowed for one turn, so it was stopped."
                    .into()
            }
            ModelInvalidResponse => {
                "The model server sent an answer that could not be read.".into()
            }
            ModelConfig => "The model settings cannot work (check the base URL).".into(),
            ModelContextOverflow => {
                "The conversation no longer fits the model's context window.".into()
            }
            ModelScripted => "The scripted model failed.".into(),
            NoModel => "No model is set up yet.".into(),
            LocalModel => "The model on this computer could not start.".into(),
            StepsExhausted => "The agent used all its steps without finishing.".into(),
            Record | Store => "The run could not be saved.".into(),
            LeaseLost => "Another process took this session over.".into(),
            Keychain => "The keychain could not be used.".into(),
            NothingToUndo => "There is nothing to undo.".into(),
            UndoConflict => "Files were changed since, so they were not put back.".into(),
            ChangeJournal => "The record of the agent's changes could not be used.".into(),
            SessionActive => "The session is still working: stop its task first.".into(),
            DiskFull => "The disk is full: free some space, then continue.".into(),
            HookBlocked => "A hook of this workspace or of yours refused the goal.".into(),
            Io | Listen | Watch => "A file or network operation failed.".into(),
            EmptyGoal | Workspace | AlreadyEnded | NotPending | InvalidArguments
            | ConversationBusy | ConversationIdle | RequestMismatch | NotQueued | NotFound
            | InboxFull | Settings | InvalidConfig | InvalidName | Duplicate
            | InvalidExpression | OutsideWorkspace | InvalidPattern => {
                "The request was not accepted.".into()
            }
        }
    }
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

crate::wire_enum! {
    /// Why a tool call failed; the model reads the message, the journal keeps the kind.
    pub enum ToolErrorKind {
        UnknownTool = "unknown_tool",
        InvalidArguments = "invalid_arguments",
        PathRejected = "path_rejected",
        Denied = "denied",
        Rejected = "rejected",
        Failed = "failed",
        TimedOut = "timed_out",
        Cancelled = "cancelled",
        /// The process stopped while the call ran; it may have partly happened.
        Interrupted = "interrupted",
    }
}

crate::wire_enum! {
    /// Why an MCP server gave no tools to a run (never fatal).
    pub enum McpProblemKind {
        InvalidConfig = "invalid_config",
        InvalidWhitelist = "invalid_whitelist",
        NotConfigured = "not_configured",
        UnknownTool = "unknown_tool",
        Whitelist = "whitelist",
        Spawn = "spawn",
        StartupTimeout = "startup_timeout",
        Initialize = "initialize",
        ListTools = "list_tools",
        Stopped = "stopped",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WireName;

    #[test]
    fn names_round_trip_and_usage_errors_are_never_retried_blindly() {
        for k in ErrorKind::ALL {
            assert_eq!(k.as_str().parse::<ErrorKind>().unwrap(), *k);
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
            if k.is_model() {
                assert!(!k.is_usage(), "{k}");
            }
        }
        assert!(ErrorKind::ModelConnect.is_retryable());
        assert!(!ErrorKind::EmptyGoal.is_retryable());
        assert!(ErrorKind::InboxFull.is_usage());
        assert!("model_exploded".parse::<ErrorKind>().is_err());
    }

    #[test]
    fn a_failure_reads_as_a_plain_sentence_naming_the_server() {
        assert_eq!(
            ErrorKind::ModelConnect.plain_sentence(Some("127.0.0.1:9")),
            "Can't reach the model server at 127.0.0.1:9."
        );
        assert_eq!(
            ErrorKind::ModelTimeout.plain_sentence(None),
            "The model server took too long to answer."
        );
        for k in ErrorKind::ALL {
            assert!(!k.plain_sentence(None).is_empty());
        }
    }
}
