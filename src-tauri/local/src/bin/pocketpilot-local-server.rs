//! Runs the built-in model's server in the foreground, supervised exactly as the app does
//! it, until stdin closes or Ctrl-C: for trying a model by hand, and for checking that the
//! server never outlives its owner.
//!
//! Usage: `pocketpilot-local-server --model FILE [--name NAME] [--context N]
//!         [--template FILE] [--threads N] [--binary FILE] [--log-dir DIR]
//!         [--state-file FILE]`
//!
//! Prints one JSON line once the server is ready: its pid, port, base URL, key and model.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use pocketpilot_local::binary;
use pocketpilot_local::server::{LocalServer, ServerOptions};
use tokio::io::AsyncReadExt;

struct Args {
    model: Option<PathBuf>,
    name: String,
    context: u32,
    template: Option<PathBuf>,
    threads: Option<u32>,
    binary: Option<PathBuf>,
    log_dir: PathBuf,
    state_file: Option<PathBuf>,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        model: None,
        name: "local".to_string(),
        context: 4096,
        template: None,
        threads: None,
        binary: None,
        log_dir: std::env::temp_dir().join("pocketpilot-local-server"),
        state_file: None,
    };
    let mut it = std::env::args_os().skip(1);
    while let Some(flag) = it.next() {
        let flag = flag.to_string_lossy().into_owned();
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let text = || value.to_string_lossy().into_owned();
        match flag.as_str() {
            "--model" => args.model = Some(PathBuf::from(&value)),
            "--name" => args.name = text(),
            "--context" => args.context = text().parse().map_err(|e| format!("--context: {e}"))?,
            "--template" => args.template = Some(PathBuf::from(&value)),
            "--threads" => {
                args.threads = Some(text().parse().map_err(|e| format!("--threads: {e}"))?);
            }
            "--binary" => args.binary = Some(PathBuf::from(&value)),
            "--log-dir" => args.log_dir = PathBuf::from(&value),
            "--state-file" => args.state_file = Some(PathBuf::from(&value)),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    Ok(args)
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse() {
        Ok(args) => args,
        Err(why) => {
            eprintln!("pocketpilot-local-server: {why}");
            return ExitCode::from(2);
        }
    };
    let Some(model_path) = args.model else {
        eprintln!("pocketpilot-local-server: --model FILE is required");
        return ExitCode::from(2);
    };
    let Some(binary) = args.binary.or_else(|| binary::find().map(|b| b.path)) else {
        eprintln!(
            "pocketpilot-local-server: no llama-server found (run scripts/setup-model-server.sh)"
        );
        return ExitCode::FAILURE;
    };
    let opts = ServerOptions {
        binary,
        model_path,
        model_name: args.name,
        context: args.context,
        template: args.template,
        threads: args.threads,
        log_dir: args.log_dir,
        // Runs until told to stop.
        idle: Duration::from_secs(u64::from(u32::MAX)),
        state_file: args.state_file,
    };
    let server = LocalServer::global();
    let _busy = server.busy();
    let endpoint = match server.ensure(&opts).await {
        Ok(endpoint) => endpoint,
        Err(e) => {
            eprintln!("pocketpilot-local-server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let line = serde_json::json!({
        "pid": server.pid(),
        "port": endpoint.port,
        "base_url": endpoint.base_url,
        "api_key": endpoint.api_key,
        "model": endpoint.model,
    });
    println!("{line}");
    let mut stdin = tokio::io::stdin();
    let mut sink = [0u8; 256];
    let stdin_closed = async { while matches!(stdin.read(&mut sink).await, Ok(n) if n > 0) {} };
    tokio::select! {
        () = stdin_closed => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    server.stop().await;
    ExitCode::SUCCESS
}
