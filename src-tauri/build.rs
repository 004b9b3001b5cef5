// The app manifest lists the window's commands so that capabilities/default.json decides
// which of them the webview may call: without it every command would be allowed. The list
// is `shell/command_list.rs`, the same one `shell/bindings.rs` registers.
macro_rules! window_commands {
    ($($module:ident::$command:ident),* $(,)?) => {
        const COMMANDS: &[&str] = &[$(stringify!($command)),*];
    };
}
include!("shell/command_list.rs");

#[path = "build_commit.rs"]
mod build_commit;

fn main() {
    build_commit::emit();
    // tauri-build names the files it watches, which turns off cargo's "any file changed".
    println!("cargo:rerun-if-changed=src-tauri/shell/command_list.rs");
    tauri_build::try_build(
        tauri_build::Attributes::new()
            .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS)),
    )
    .unwrap_or_else(|e| panic!("tauri build step failed: {e}"));
}
