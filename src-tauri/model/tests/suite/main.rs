//! Integration tests of the model crate, built as one binary.
//!
//! - `replay`: recorded server transcripts replayed byte for byte (and split at every byte).
//! - `network`: a raw local server for cuts, stalls, timeouts, cancellation, redaction.
//! - `llmock`: the llmock server (PyPI) as a child process, scripted per test.
//! - `keychain`: a Secret Service round trip (see its header for the session it needs).
//! - `window`: context window discovery against local servers with recorded bodies.
//! - `llama`: the real model server (llama.cpp + SmolLM2, `llama_server`): its window,
//!   its overflow error, its token counts against the estimator.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod keychain;
mod llama;
use pocketpilot_test_support::llama as llama_server;
mod llmock;
mod network;
mod replay;
mod support;
mod window;
