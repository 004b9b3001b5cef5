//! Helpers shared by the test binaries: the reference servers' paths, a fake server.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(dead_code)]
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pocketpilot_mcp::{ConnectOptions, McpServerConfig, McpSession, McpWhitelist};
use pocketpilot_tools::{Tool, ToolContext};
use tokio_util::sync::CancellationToken;

pub fn servers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp-servers/node_modules/.bin")
}

/// A reference server's binary; a missing install fails the test with what to do.
pub fn bin(name: &str) -> String {
    let path = servers_dir().join(name);
    assert!(
        path.exists(),
        "{} is missing: run `tests/setup-mcp.sh` (npm install of the MCP reference servers) first",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

pub fn everything(name: &str) -> McpServerConfig {
    McpServerConfig::stdio(name, bin("mcp-server-everything"), vec!["stdio".into()])
}

pub fn filesystem(name: &str, dir: &Path) -> McpServerConfig {
    McpServerConfig::stdio(
        name,
        bin("mcp-server-filesystem"),
        vec![dir.to_string_lossy().into_owned()],
    )
}

pub const FAKE_SERVER: &str = r#"
const readline = require('readline');
const mode = process.argv[2] || 'normal';
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
process.stderr.write(`fake server (${mode}) starting, token is ${process.env.MY_TOKEN || 'none'}\n`);
const tools = [
  { name: 'wait', description: 'Never answers.', inputSchema: { type: 'object' } },
  { name: 'die', description: 'Crashes the server.', inputSchema: { type: 'object' } },
  { name: 'env', description: 'Returns MY_TOKEN.', inputSchema: { type: 'object' },
    annotations: { readOnlyHint: true } },
  { name: 'fail', description: 'An isError result.', inputSchema: { type: 'object' } },
  { name: 'structured', description: 'Structured content only.', inputSchema: { type: 'object' } },
  { name: 'big', description: 'A text of `size` bytes.', inputSchema: { type: 'object' } },
];
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  let msg;
  try { msg = JSON.parse(line); } catch { return; }
  const reply = (result) => send({ jsonrpc: '2.0', id: msg.id, result });
  if (msg.method === 'initialize') {
    if (mode === 'silent') return;
    reply({ protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} },
            serverInfo: { name: 'fake', version: '0.0.0' } });
  } else if (msg.method === 'notifications/initialized') {
    if (mode === 'exit-after-init') { process.stderr.write('bye after init\n'); process.exit(2); }
  } else if (msg.method === 'tools/list') {
    reply({ tools });
  } else if (msg.method === 'tools/call') {
    const name = msg.params.name;
    if (name === 'die') {
      process.stderr.write('fatal: the fake server crashed on purpose\n');
      process.exit(3);
    } else if (name === 'env') {
      reply({ content: [{ type: 'text', text: `token=${process.env.MY_TOKEN || ''}` }] });
    } else if (name === 'fail') {
      reply({ content: [{ type: 'text', text: 'the thing went wrong' }], isError: true });
    } else if (name === 'big') {
      reply({ content: [{ type: 'text', text: 'x'.repeat(msg.params.arguments.size) }] });
    } else if (name === 'structured') {
      reply({ content: [], structuredContent: { answer: 42 } });
    }
    // 'wait': never answers
  } else if (msg.id !== undefined && msg.method) {
    send({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } });
  }
});
"#;

/// Writes the fake server into `dir`; a config that runs it in `mode`.
pub fn fake(dir: &Path, name: &str, mode: &str) -> McpServerConfig {
    let script = dir.join("fake-mcp-server.js");
    if !script.exists() {
        std::fs::write(&script, FAKE_SERVER).unwrap();
    }
    McpServerConfig::stdio(
        name,
        "node",
        vec![script.to_string_lossy().into_owned(), mode.into()],
    )
}

pub fn whitelist(entries: &[&str]) -> McpWhitelist {
    McpWhitelist::parse(entries).unwrap()
}

pub fn opts(entries: &[&str]) -> ConnectOptions {
    ConnectOptions {
        whitelist: whitelist(entries),
        ..ConnectOptions::default()
    }
}

pub fn ctx(workspace: &Path) -> ToolContext {
    ToolContext::new(
        std::fs::canonicalize(workspace).unwrap(),
        Vec::new(),
        CancellationToken::new(),
    )
}

pub fn tool(session: &McpSession, name: &str) -> Arc<dyn Tool> {
    session
        .tools
        .iter()
        .find(|t| t.name() == name)
        .cloned()
        .unwrap_or_else(|| panic!("no tool {name} in {session:?}"))
}

/// A workspace `outer/ws` with `a.txt`, and `outer/secret.txt` beside it.
pub fn workspace() -> (tempfile::TempDir, PathBuf) {
    let outer = tempfile::tempdir().unwrap();
    let ws = outer.path().join("ws");
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::write(ws.join("a.txt"), "hello from the workspace\n").unwrap();
    std::fs::write(outer.path().join("secret.txt"), "outside secret\n").unwrap();
    (outer, ws)
}
