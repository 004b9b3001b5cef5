//! The connection: one handler per ACP method, each a few lines over the runtime.
use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error, Stdio};
use pocketpilot_core::api::service::Runtime;
use pocketpilot_core::ops;
use pocketpilot_protocol::task::TaskStatus;

use crate::turn::runtime_error;
use crate::{AcpError, Options, Shared};

/// Serves ACP on stdin/stdout until the client closes it.
pub async fn serve(rt: Arc<Runtime>, options: Options) -> Result<(), AcpError> {
    let shared = Shared {
        rt,
        options,
        client_fs: Arc::default(),
    };
    let (s0, s1, s2, s3, s4, s5) = (
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared,
    );
    Agent
        .v1()
        .name("pocketpilot")
        .on_receive_request(
            async move |init: acp::InitializeRequest,
                        responder: Responder<acp::InitializeResponse>,
                        _cx| { responder.respond(initialize(&s0, &init)) },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: acp::NewSessionRequest,
                        responder: Responder<acp::NewSessionResponse>,
                        cx: ConnectionTo<Client>| {
                responder.respond_with_result(new_session(&s1, &cx, &req))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: acp::LoadSessionRequest,
                        responder: Responder<acp::LoadSessionResponse>,
                        cx: ConnectionTo<Client>| {
                responder.respond_with_result(load_session(&s2, &cx, &req))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: acp::PromptRequest,
                        responder: Responder<acp::PromptResponse>,
                        cx: ConnectionTo<Client>| {
                // The run outlives this handler: the dispatch loop must stay free for
                // `session/cancel` and permission answers.
                cx.spawn(answer_prompt(s3.clone(), cx.clone(), req, responder))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |note: acp::CancelNotification, _cx: ConnectionTo<Client>| {
                cancel(&s4, &note);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |_req: acp::AuthenticateRequest,
                        responder: Responder<acp::AuthenticateResponse>,
                        _cx| {
                // No login: the model provider is set up in PocketPilot itself.
                let _ = &s5;
                responder.respond(acp::AuthenticateResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_to(Stdio::new())
        .await
        .map_err(|e| AcpError::Connection(e.to_string()))
}

/// Runs a prompt to its end and answers it; an answer the client can no longer take is
/// only logged, since the run itself is recorded either way.
async fn answer_prompt(
    shared: Shared,
    conn: ConnectionTo<Client>,
    req: acp::PromptRequest,
    responder: Responder<acp::PromptResponse>,
) -> Result<(), Error> {
    let answer = crate::turn::prompt(&shared, &conn, req).await;
    if let Err(e) = responder.respond_with_result(answer) {
        tracing::info!(error = %e, "the prompt's answer was not delivered");
    }
    Ok(())
}

fn initialize(shared: &Shared, init: &acp::InitializeRequest) -> acp::InitializeResponse {
    *shared.client_fs.lock().unwrap_or_else(|p| p.into_inner()) =
        init.client_capabilities.fs.clone();
    // We speak v1; a client asking for a newer one gets v1 back and decides.
    let version = std::cmp::min(init.protocol_version, ProtocolVersion::V1);
    acp::InitializeResponse::new(version)
        .agent_capabilities(acp::AgentCapabilities::new().load_session(true))
        .agent_info(
            acp::Implementation::new("pocketpilot", env!("CARGO_PKG_VERSION")).title("PocketPilot"),
        )
}

/// The PocketPilot session an ACP session id names (its decimal id).
pub fn session_of(id: &acp::SessionId) -> Result<i64, Error> {
    id.0.parse::<i64>().map_err(|_| {
        Error::invalid_params()
            .data(serde_json::json!({ "message": format!("no session `{}`", id.0) }))
    })
}

fn new_session(
    shared: &Shared,
    cx: &ConnectionTo<Client>,
    req: &acp::NewSessionRequest,
) -> Result<acp::NewSessionResponse, Error> {
    let title = format!(
        "Editor session in {}",
        req.cwd.file_name().map_or_else(
            || req.cwd.display().to_string(),
            |n| n.to_string_lossy().into_owned()
        )
    );
    let session = shared
        .rt
        .call(ops::OpenSession {
            workspace: req.cwd.to_path_buf(),
            title: title.to_string(),
        })
        .map_err(runtime_error)?;
    tracing::info!(session_id = session.id, "ACP session opened");
    crate::files::attach(shared, cx, session.id);
    Ok(acp::NewSessionResponse::new(session.id.to_string()))
}

/// Replays the session's turns to the client, then resumes a run left interrupted.
fn load_session(
    shared: &Shared,
    cx: &ConnectionTo<Client>,
    req: &acp::LoadSessionRequest,
) -> Result<acp::LoadSessionResponse, Error> {
    let session = session_of(&req.session_id)?;
    shared
        .rt
        .call(ops::GetSession {
            session_id: session,
        })
        .map_err(runtime_error)?;
    crate::files::attach(shared, cx, session);
    let tasks = shared
        .rt
        .call(ops::SessionTasks {
            session_id: session,
        })
        .map_err(runtime_error)?;
    let send = |update: acp::SessionUpdate| {
        cx.send_notification(acp::SessionNotification::new(
            req.session_id.clone(),
            update,
        ))
    };
    for task in &tasks {
        send(acp::SessionUpdate::UserMessageChunk(
            acp::ContentChunk::new(acp::ContentBlock::from(task.goal.clone())),
        ))?;
        if let Some(answer) = task.final_answer.as_deref().filter(|a| !a.is_empty()) {
            send(acp::SessionUpdate::AgentMessageChunk(
                acp::ContentChunk::new(acp::ContentBlock::from(answer.to_owned())),
            ))?;
        }
    }
    // A run whose agent was killed: nobody works it now; this process takes it up (the
    // session lease makes sure only one does).
    if let Some(open) = tasks
        .iter()
        .find(|t| matches!(t.status, TaskStatus::Running | TaskStatus::Queued))
    {
        shared.rt.call(ops::StartTask { task_id: open.id });
    }
    Ok(acp::LoadSessionResponse::new())
}

fn cancel(shared: &Shared, note: &acp::CancelNotification) {
    let Ok(session) = session_of(&note.session_id) else {
        return;
    };
    let open = shared.rt.call(ops::OpenTaskOfSession {
        session_id: session,
    });
    match open {
        Ok(Some(task)) => {
            if let Err(e) = shared.rt.call(ops::CancelTask { task_id: task.id }) {
                tracing::info!(task_id = task.id, error = %e, "cancel refused");
            }
        }
        Ok(None) => {}
        Err(e) => tracing::warn!(error = %e, "cancel: cannot read the session"),
    }
}
