//! The client's file methods (`fs/read_text_file`, `fs/write_text_file`) as the file tools'
//! editor: offered by the client in `initialize`, used when the person allows it
//! (`pocketpilot acp --editor-files off` or `POCKETPILOT_ACP_EDITOR_FILES=off` turns them
//! off). The tools keep their guard and the approvals; only where the text comes from and
//! goes to changes (see `pocketpilot_tools::editor`).
use std::path::Path;
use std::sync::Arc;

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;
use pocketpilot_core::ops;
use pocketpilot_tools::editor::EditorFiles;

use crate::Shared;

/// One session's view of the client's files.
pub struct ClientFiles {
    cx: ConnectionTo<Client>,
    session_id: acp::SessionId,
    reads: bool,
    writes: bool,
}

#[async_trait::async_trait]
impl EditorFiles for ClientFiles {
    fn reads(&self) -> bool {
        self.reads
    }

    fn writes(&self) -> bool {
        self.writes
    }

    async fn read_text(&self, path: &Path) -> Result<String, String> {
        let request = acp::ReadTextFileRequest::new(self.session_id.clone(), path);
        self.cx
            .send_request(request)
            .block_task()
            .await
            .map(|r| r.content)
            .map_err(|e| e.to_string())
    }

    async fn write_text(&self, path: &Path, content: &str) -> Result<(), String> {
        let request = acp::WriteTextFileRequest::new(self.session_id.clone(), path, content);
        self.cx
            .send_request(request)
            .block_task()
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

/// Runs of `session` in this process use the client's file methods, as far as the client
/// offered them and the person allows it.
pub fn attach(shared: &Shared, cx: &ConnectionTo<Client>, session: i64) {
    if !shared.options.editor_files {
        return;
    }
    let offered = shared.client_fs();
    if !offered.read_text_file && !offered.write_text_file {
        return;
    }
    tracing::info!(
        session_id = session,
        reads = offered.read_text_file,
        writes = offered.write_text_file,
        "the editor's file methods are used"
    );
    shared.rt.call(ops::AttachEditor {
        session_id: session,
        editor: Arc::new(ClientFiles {
            cx: cx.clone(),
            session_id: acp::SessionId::new(session.to_string()),
            reads: offered.read_text_file,
            writes: offered.write_text_file,
        }),
    });
}
