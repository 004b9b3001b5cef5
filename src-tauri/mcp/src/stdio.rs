//! The transport of a stdio server: rmcp's line transport over the child's pipes, with one
//! message from the server capped at [`MAX_REPLY_BYTES`].
//!
//! rmcp drops a line over its own limit and keeps reading, so the request it answered
//! waits until the call's timeout. Here the child's stdout is read through
//! [`CappedLines`]: past the cap the read fails, rmcp ends the connection, every call in
//! flight fails at once, and [`ReplyCap::exceeded`] tells the tool why. The server is
//! then stopped like one that crashed (its next calls fail with the same reason).
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use pocketpilot_tools::builtin::run_command::{process_watch, ProcessWatch};
use process_wrap::tokio::{ChildWrapper, CommandWrap};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::Transport;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

/// The largest message a stdio server may send (one JSON-RPC line), in bytes.
pub const MAX_REPLY_BYTES: usize = 16 * 1024 * 1024;

/// How long a closing server gets to exit, before SIGTERM and again before the kill.
const EXIT_GRACE: Duration = Duration::from_secs(3);

/// Whether a server's message went over the cap (shared by the reader and the tools).
#[derive(Debug, Clone, Default)]
pub(crate) struct ReplyCap(Arc<AtomicBool>);

impl ReplyCap {
    pub(crate) fn exceeded(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// An `AsyncRead` that fails once a line grows past `cap` bytes. Complete lines read in
/// the same chunk before the long one are still delivered.
pub(crate) struct CappedLines<R> {
    inner: R,
    cap: usize,
    line: usize,
    flag: ReplyCap,
}

impl<R> CappedLines<R> {
    pub(crate) fn new(inner: R, cap: usize, flag: ReplyCap) -> Self {
        Self {
            inner,
            cap,
            line: 0,
            flag,
        }
    }

    fn too_large(&self) -> io::Error {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "a message from the server is larger than {} bytes",
                self.cap
            ),
        )
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for CappedLines<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.flag.exceeded() {
            return Poll::Ready(Err(this.too_large()));
        }
        let start = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        let mut keep = None;
        for (i, &b) in buf.filled()[start..].iter().enumerate() {
            if b == b'\n' {
                this.line = 0;
                keep = Some(start + i + 1);
            } else {
                this.line += 1;
                if this.line > this.cap {
                    this.flag.0.store(true, Ordering::SeqCst);
                    let kept = keep.unwrap_or(start);
                    buf.set_filled(kept);
                    if kept > start {
                        return Poll::Ready(Ok(()));
                    }
                    return Poll::Ready(Err(this.too_large()));
                }
            }
        }
        Poll::Ready(Ok(()))
    }
}

/// A stdio server: the child (killed on drop) and the capped transport over its pipes.
pub(crate) struct StdioTransport {
    child: ChildGuard,
    transport: AsyncRwTransport<RoleClient, CappedLines<ChildStdout>, ChildStdin>,
    /// The run's record of the server's process (its sandbox supervisor), if watched.
    watched: Option<(Arc<dyn ProcessWatch>, u32)>,
}

impl StdioTransport {
    /// Spawns `cmd` with piped stdin, stdout and stderr; the stderr pipe is returned.
    pub(crate) fn spawn(
        mut cmd: CommandWrap,
        flag: ReplyCap,
    ) -> io::Result<(Self, Option<ChildStderr>)> {
        cmd.command_mut()
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn()?;
        // Recorded under the run's session lease while it is our unreaped child (its pid
        // cannot name another process yet), so a worker taking the session over kills it.
        let watched = match (process_watch(), child.id()) {
            (Some(watch), Some(pid)) => {
                if let Err(e) = watch.started(pid) {
                    drop(ChildGuard(Some(child)));
                    return Err(io::Error::other(format!(
                        "the server's process could not be recorded: {e}"
                    )));
                }
                Some((watch, pid))
            }
            _ => None,
        };
        let stdin = child.inner_mut().stdin().take();
        let stdout = child.inner_mut().stdout().take();
        let stderr = child.inner_mut().stderr().take();
        let guard = ChildGuard(Some(child));
        let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
            return Err(io::Error::other("the server's stdin/stdout are not pipes"));
        };
        let reader = CappedLines::new(stdout, MAX_REPLY_BYTES, flag);
        // rmcp's own limit (drop the line, keep waiting) must never be the one that acts.
        let transport =
            AsyncRwTransport::new(reader, stdin).with_max_line_length(MAX_REPLY_BYTES + 1);
        Ok((
            Self {
                child: guard,
                transport,
                watched,
            },
            stderr,
        ))
    }

    /// The MCP stdio shutdown: close its stdin and wait, then SIGTERM and wait, then kill;
    /// once it has exited, its record is dropped.
    async fn shutdown(&mut self) -> io::Result<()> {
        let result = self.stop().await;
        if self.child.0.is_none() && result.is_ok() {
            if let Some((watch, pid)) = self.watched.take() {
                watch.ended(pid);
            }
        }
        result
    }

    async fn stop(&mut self) -> io::Result<()> {
        let Some(child) = self.child.0.as_mut() else {
            return Ok(());
        };
        self.transport.close().await?;
        if exited(child).await {
            self.child.0 = None;
            return Ok(());
        }
        if let Err(e) = child.signal(libc::SIGTERM) {
            tracing::warn!("SIGTERM to the MCP server: {e}");
        } else if exited(child).await {
            self.child.0 = None;
            return Ok(());
        }
        let result = Box::into_pin(child.kill()).await;
        self.child.0 = None;
        result
    }
}

async fn exited(child: &mut Box<dyn ChildWrapper>) -> bool {
    matches!(
        tokio::time::timeout(EXIT_GRACE, child.wait()).await,
        Ok(Ok(_))
    )
}

impl Transport<RoleClient> for StdioTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.transport.send(item)
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.transport.receive()
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        self.shutdown()
    }
}

/// Kills the child when dropped (from a task: the kill waits for the process).
struct ChildGuard(Option<Box<dyn ChildWrapper>>);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let Some(mut child) = self.0.take() else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move {
                    if let Err(e) = Box::into_pin(child.kill()).await {
                        tracing::warn!("killing the MCP server: {e}");
                    }
                });
            }
            Err(_) => {
                let _ = child.start_kill();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn lines_under_the_cap_pass_and_a_long_one_fails() {
        let flag = ReplyCap::default();
        let data: &[u8] = b"short\nalso short\nthis one is far too long\nnever";
        let mut r = CappedLines::new(data, 10, flag.clone());
        let mut out = Vec::new();
        let err = r.read_to_end(&mut out).await.unwrap_err();
        assert_eq!(out, b"short\nalso short\n");
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(flag.exceeded());
        let mut ok = CappedLines::new(&b"0123456789\n0123456789"[..], 10, ReplyCap::default());
        let mut out = Vec::new();
        ok.read_to_end(&mut out).await.unwrap();
        assert_eq!(out.len(), 21);
    }
}
