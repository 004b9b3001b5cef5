//! The built-in model (issue 24).
//!
//! Layout:
//! - `gguf`: the facts a GGUF file's header states (architecture, parameters, quantisation,
//!   training context, chat template), read without loading the weights.
//! - `models`: the models the person keeps in `<data>/models/`, one manifest each; import,
//!   resumable pull with checksum and header checks, use, remove.
//! - `machine`: what the machine has to give (memory available, free disk), with test
//!   overrides.
//! - `binary`: where `llama-server` is (next to the app, `POCKETPILOT_LLAMA_SERVER`, where
//!   `scripts/setup.sh` built it).
//! - `server`: the `llama-server` child the runtime owns.
#![deny(clippy::print_stdout, clippy::print_stderr)]
pub mod binary;
pub mod gguf;
pub mod machine;
pub mod models;
pub mod server;
