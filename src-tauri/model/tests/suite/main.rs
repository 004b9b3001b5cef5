//! Integration tests of the model crate, built as one binary.
//!
//! - `replay`: recorded server transcripts replayed byte for byte (and split at every byte).
//! - `network`: a raw local server for cuts, stalls, timeouts, cancellation, redaction.
//! - `llmock`: the llmock server (PyPI) as a child process, scripted per test.
//! - `keychain`: a Secret Service round trip (see its header for the session it needs).
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod keychain;
mod llmock;
mod network;
mod replay;
mod support;
