//! One `session/prompt`: a run in the session, followed from its events to its end.
use std::collections::HashSet;
use std::path::PathBuf;

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Client, Error};
use pocketpilot_core::api::service::{ApprovalAnswer, NewTask, RuntimeError};
use pocketpilot_core::ops;
use pocketpilot_protocol::task::TaskStatus;
use pocketpilot_protocol::{
    CommandAsk, CommandRuleScope, Effect, ErrorKind, KeepRules, RunSource, RuntimeEvent,
};

use crate::map;
use crate::Shared;

/// Runs `prompt` in `session` and answers when the run ends.
pub async fn prompt(
    shared: &Shared,
    cx: &ConnectionTo<Client>,
    req: acp::PromptRequest,
) -> Result<acp::PromptResponse, Error> {
    let session = crate::agent::session_of(&req.session_id)?;
    let workspace = PathBuf::from(
        shared
            .rt
            .call(ops::GetSession {
                session_id: session,
            })
            .map_err(runtime_error)?
            .workspace,
    );
    let goal = prompt_text(&req.prompt);
    let task = shared
        .rt
        .call(ops::SubmitTask {
            new: NewTask {
                goal,
                workspace: None,
                session_id: Some(session),
                follow_up_of: None,
                trigger: RunSource::Chat,
                provider: shared.options.provider.clone(),
                grants: Vec::new(),
                mcp: None,
            },
        })
        .map_err(runtime_error)?;
    let mut following = Following {
        shared,
        cx,
        session_id: req.session_id.clone(),
        workspace,
        task,
        announced: HashSet::new(),
        asked: HashSet::new(),
        shown_effect: HashSet::new(),
        turn_streamed: false,
    };
    following.follow().await?;
    let done = shared
        .rt
        .call(ops::GetTask { id: task })
        .map_err(runtime_error)?;
    match map::stop_reason(done.status) {
        Some(reason) => Ok(acp::PromptResponse::new(reason)),
        None => Err(Error::internal_error().data(serde_json::json!({
            "task": task,
            "status": done.status,
            "error": done.error,
        }))),
    }
}

/// The prompt's text: its text blocks, and the links and embedded texts it carries.
fn prompt_text(blocks: &[acp::ContentBlock]) -> String {
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            acp::ContentBlock::Text(t) => parts.push(t.text.clone()),
            acp::ContentBlock::ResourceLink(l) => parts.push(format!("@{}", l.uri)),
            acp::ContentBlock::Resource(r) => {
                if let acp::EmbeddedResourceResource::TextResourceContents(t) = &r.resource {
                    parts.push(format!("{}:\n{}", t.uri, t.text));
                }
            }
            // Images and audio are not offered (prompt capabilities say so).
            _ => {}
        }
    }
    parts.join("\n")
}

struct Following<'a> {
    shared: &'a Shared,
    cx: &'a ConnectionTo<Client>,
    session_id: acp::SessionId,
    workspace: PathBuf,
    task: i64,
    /// Calls the client was told of (a `tool_call` was sent).
    announced: HashSet<String>,
    /// Approvals the client was asked about.
    asked: HashSet<i64>,
    /// Calls announced with what they would do (a diff, the command) as their content.
    shown_effect: HashSet<String>,
    /// Text of the current model turn was streamed (else its completion carries it).
    turn_streamed: bool,
}

impl Following<'_> {
    async fn follow(&mut self) -> Result<(), Error> {
        let rt = &self.shared.rt;
        let mut sub = rt
            .call(ops::SubscribeTask {
                task_id: self.task,
                after_sequence: 0,
            })
            .map_err(runtime_error)?;
        while let Some(ev) = sub.next().await {
            let ev = ev.map_err(Error::into_internal_error)?;
            self.on(&ev.event)?;
            if matches!(ev.event, RuntimeEvent::RunPaused { .. })
                && rt
                    .call(ops::GetTask { id: self.task })
                    .map_err(runtime_error)?
                    .status
                    == TaskStatus::Paused
            {
                // Paused for a person (`pocketpilot raise`, or the window): the turn ends.
                return Ok(());
            }
        }
        Ok(())
    }

    fn update(&self, update: acp::SessionUpdate) -> Result<(), Error> {
        self.cx.send_notification(acp::SessionNotification::new(
            self.session_id.clone(),
            update,
        ))
    }

    fn chunk(&self, text: &str) -> Result<(), Error> {
        self.update(acp::SessionUpdate::AgentMessageChunk(
            acp::ContentChunk::new(acp::ContentBlock::from(text.to_owned())),
        ))
    }

    fn on(&mut self, event: &RuntimeEvent) -> Result<(), Error> {
        match event {
            RuntimeEvent::ModelTurnStarted { .. } => self.turn_streamed = false,
            RuntimeEvent::AssistantDelta { text } => {
                self.turn_streamed = true;
                self.chunk(text)?;
            }
            RuntimeEvent::ModelTurnCompleted { text, .. } => {
                // A turn that ended before we subscribed has no deltas.
                if !self.turn_streamed && !text.is_empty() {
                    self.chunk(text)?;
                }
                self.turn_streamed = false;
            }
            RuntimeEvent::ApprovalRequired {
                approval_id: Some(approval_id),
                call_id,
                name,
                arguments,
                capability,
                effect,
                command,
                ..
            } => {
                let fields =
                    self.announce_pending(call_id, name, arguments, capability.as_deref(), effect)?;
                self.ask_if_waiting(*approval_id, call_id, fields, command.as_ref())?;
            }
            RuntimeEvent::ApprovalResolved {
                call_id, approved, ..
            } if !approved => self.fail_call(call_id, "rejected")?,
            RuntimeEvent::ToolCallStarted {
                call_id,
                name,
                arguments,
                capability,
                ..
            } => self.on_call_started(call_id, name, arguments, capability.as_deref())?,
            RuntimeEvent::ToolCallCompleted {
                call_id, output, ..
            } => self.on_call_completed(call_id, output)?,
            RuntimeEvent::ToolCallFailed { call_id, error, .. } => {
                self.fail_call(call_id, error)?
            }
            RuntimeEvent::RunPaused { message, .. } => {
                self.chunk(&format!("\n\n[paused: {message}]"))?;
            }
            _ => {}
        }
        Ok(())
    }

    /// Shows a call awaiting approval with what it would do (a diff, the command), announcing
    /// it first if the client has not seen it; returns those fields for the permission ask.
    fn announce_pending(
        &mut self,
        call_id: &str,
        name: &str,
        arguments: &serde_json::Value,
        capability: Option<&str>,
        effect: &Effect,
    ) -> Result<acp::ToolCallUpdateFields, Error> {
        let fields = acp::ToolCallUpdateFields::new()
            .title(map::title(name, arguments))
            .kind(map::tool_kind(capability))
            .status(acp::ToolCallStatus::Pending)
            .content(map::effect_content(&self.workspace, effect, arguments))
            .raw_input(arguments.clone());
        self.shown_effect.insert(call_id.to_owned());
        if self.announced.insert(call_id.to_owned()) {
            let mut call = acp::ToolCall::new(call_id.to_owned(), map::title(name, arguments));
            call.update(fields.clone());
            self.update(acp::SessionUpdate::ToolCall(call))?;
        }
        Ok(fields)
    }

    /// Asks the client about an approval once, and only while the run still waits on it (an
    /// event replayed after the answer must not ask again).
    fn ask_if_waiting(
        &mut self,
        approval_id: i64,
        call_id: &str,
        fields: acp::ToolCallUpdateFields,
        command: Option<&CommandAsk>,
    ) -> Result<(), Error> {
        let waiting = self
            .shared
            .rt
            .call(ops::GetTask { id: self.task })
            .map_err(runtime_error)?
            .status
            == TaskStatus::WaitingApproval;
        if waiting && self.asked.insert(approval_id) {
            let always = command
                .map(|c| c.suggested.clone())
                .filter(|s| !s.is_empty());
            self.ask(
                approval_id,
                acp::ToolCallUpdate::new(call_id.to_owned(), fields),
                always,
            )?;
        }
        Ok(())
    }

    /// A call announced with its approval only changes status; one not seen yet is announced.
    fn on_call_started(
        &mut self,
        call_id: &str,
        name: &str,
        arguments: &str,
        capability: Option<&str>,
    ) -> Result<(), Error> {
        let args = map::arguments_value(arguments);
        if self.announced.insert(call_id.to_owned()) {
            let call = acp::ToolCall::new(call_id.to_owned(), map::title(name, &args))
                .kind(map::tool_kind(capability))
                .status(acp::ToolCallStatus::InProgress)
                .raw_input(args);
            self.update(acp::SessionUpdate::ToolCall(call))
        } else {
            self.update(acp::SessionUpdate::ToolCallUpdate(
                acp::ToolCallUpdate::new(
                    call_id.to_owned(),
                    acp::ToolCallUpdateFields::new().status(acp::ToolCallStatus::InProgress),
                ),
            ))
        }
    }

    fn on_call_completed(&self, call_id: &str, output: &str) -> Result<(), Error> {
        // A diff sent with the approval stays: only the status changes then.
        let mut fields = acp::ToolCallUpdateFields::new().status(acp::ToolCallStatus::Completed);
        if !self.shown_effect.contains(call_id) {
            fields = fields.content(vec![map::text_content(output)]);
        }
        fields = fields.raw_output(serde_json::Value::String(output.to_owned()));
        self.update(acp::SessionUpdate::ToolCallUpdate(
            acp::ToolCallUpdate::new(call_id.to_owned(), fields),
        ))
    }

    /// Marks a call failed (or rejected), with `why` as its content.
    fn fail_call(&self, call_id: &str, why: &str) -> Result<(), Error> {
        self.update(acp::SessionUpdate::ToolCallUpdate(
            acp::ToolCallUpdate::new(
                call_id.to_owned(),
                acp::ToolCallUpdateFields::new()
                    .status(acp::ToolCallStatus::Failed)
                    .content(vec![map::text_content(why)]),
            ),
        ))
    }

    /// Asks the client in the background: the run's events keep flowing meanwhile, and an
    /// answer from elsewhere (the window) makes the client's later answer a no-op.
    fn ask(
        &self,
        approval_id: i64,
        call: acp::ToolCallUpdate,
        always: Option<Vec<String>>,
    ) -> Result<(), Error> {
        let label = match &always {
            Some(rules) => format!("Always allow `{}` in this workspace", rules.join("`, `")),
            None => "Allow for this session".to_owned(),
        };
        let request = acp::RequestPermissionRequest::new(
            self.session_id.clone(),
            call,
            map::permission_options(&label),
        );
        let cx = self.cx.clone();
        let rt = self.shared.rt.clone();
        self.cx.spawn(async move {
            let answer = match cx.send_request(request).block_task().await {
                Ok(answer) => answer,
                // The client could not answer: the approval stays pending.
                Err(e) => {
                    tracing::info!(approval_id, error = %e, "permission request not answered");
                    return Ok(());
                }
            };
            let acp::RequestPermissionOutcome::Selected(selected) = answer.outcome else {
                // Cancelled by the client: it stays pending, answerable from the window.
                return Ok(());
            };
            let by = "acp".to_owned();
            let approve = ApprovalAnswer {
                approve: true,
                edited_arguments: None,
                session_grant: false,
                note: None,
                by: by.clone(),
            };
            let result = match &*selected.option_id.0 {
                map::ALLOW_ONCE => rt.call(ops::ResolveApproval {
                    approval_id,
                    answer: approve,
                }),
                map::ALLOW_ALWAYS => match always {
                    Some(rules) => rt.call(ops::ResolveApprovalKeeping {
                        approval_id,
                        answer: approve,
                        keep: Some(KeepRules {
                            scope: CommandRuleScope::Workspace,
                            rules,
                        }),
                    }),
                    None => rt.call(ops::ResolveApproval {
                        approval_id,
                        answer: ApprovalAnswer {
                            session_grant: true,
                            ..approve
                        },
                    }),
                },
                _ => rt.call(ops::ResolveApproval {
                    approval_id,
                    answer: ApprovalAnswer {
                        approve: false,
                        edited_arguments: None,
                        session_grant: false,
                        note: Some("rejected in the editor".into()),
                        by,
                    },
                }),
            };
            match result {
                Ok(_) => {}
                // Answered elsewhere first (the window): theirs stands.
                Err(e) if e.kind() == ErrorKind::NotPending => {}
                Err(e) => tracing::warn!(approval_id, error = %e, "permission answer not recorded"),
            }
            Ok(())
        })
    }
}

/// A runtime error as a JSON-RPC error: usage errors are the client's (invalid params).
pub fn runtime_error(e: RuntimeError) -> Error {
    let kind = e.kind();
    let base = if kind.is_usage() {
        Error::invalid_params()
    } else {
        Error::internal_error()
    };
    base.data(serde_json::json!({ "kind": kind, "message": e.to_string() }))
}
