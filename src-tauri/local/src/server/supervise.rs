//! The tasks of one run: the supervisor, which waits for each process to be healthy, then
//! for its exit, and restarts it after a crash; and the idle watch, which stops the run
//! once nothing has used it for its idle time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::child::{self, Launch, ServerChild};
use super::{
    describe_exit, log, procfs, ServerState, Shared, CRASH_WINDOW, HEALTH_INTERVAL, LOG_TAIL_LINES,
    MAX_CRASHES, STARTUP_TIMEOUT, STOP_GRACE,
};

impl Shared {
    /// Watches one run: waits for each process to be healthy, then for its exit, and
    /// restarts it after a crash.
    pub(super) async fn supervise(
        self: Arc<Self>,
        cancel: CancellationToken,
        mut launch: Launch,
        first: ServerChild,
    ) {
        let mut next = Some(first);
        while let Some(process) = next.take() {
            let pid = process.pid();
            let pidfd = match process.pidfd().try_clone() {
                Ok(fd) => fd,
                Err(e) => {
                    tracing::warn!("cannot watch the model server: {e}");
                    return;
                }
            };
            if !self.keep(process, pid, &cancel).await {
                return;
            }
            let healthy = tokio::select! {
                () = cancel.cancelled() => return,
                () = child::exited(&pidfd) => None,
                healthy = wait_healthy(launch.port, STARTUP_TIMEOUT) => Some(healthy),
            };
            match healthy {
                Some(true) => {
                    self.state.send_replace(ServerState::Ready {
                        model: launch.model_name.clone(),
                        port: launch.port,
                        pid,
                        rss_bytes: procfs::rss_bytes(pid),
                        context: launch.context,
                    });
                    tokio::select! {
                        () = cancel.cancelled() => return,
                        () = child::exited(&pidfd) => {}
                    }
                }
                Some(false) => {
                    let reason = format!("no healthy answer within {STARTUP_TIMEOUT:?}");
                    let process = {
                        let mut inner = self.lock();
                        if cancel.is_cancelled() {
                            return;
                        }
                        inner.child.take()
                    };
                    if let Some(process) = process {
                        process.terminate(STOP_GRACE).await;
                    }
                    self.give_up(&cancel, &launch, reason);
                    return;
                }
                None => {}
            }
            // The process exited on its own.
            let reason = {
                let mut inner = self.lock();
                if cancel.is_cancelled() {
                    // Stopped on purpose: `stop` reaps it.
                    return;
                }
                let status = inner.child.take().and_then(ServerChild::reap);
                status.map_or_else(|| "ended".to_string(), describe_exit)
            };
            log::note(&launch.log_dir, &format!("the server {reason}"));
            let too_many = self.crashed_too_often(Instant::now());
            if too_many {
                self.give_up(&cancel, &launch, reason);
                return;
            }
            match self.restart(&cancel, &mut launch).await {
                Some(process) => next = Some(process),
                None => return,
            }
        }
    }

    /// Takes `process` as the server's child and records it in the state file; a stop
    /// asked for meanwhile terminates it instead (`false`).
    async fn keep(&self, process: ServerChild, pid: u32, cancel: &CancellationToken) -> bool {
        let mut inner = self.lock();
        if cancel.is_cancelled() {
            drop(inner);
            process.terminate(STOP_GRACE).await;
            return false;
        }
        inner.child = Some(process);
        if let Some(state_file) = inner.run.as_ref().and_then(|r| r.opts.state_file.clone()) {
            if let Some(record) = procfs::OwnerRecord::for_child(pid) {
                if let Err(e) = record.write(&state_file) {
                    tracing::warn!("cannot record the model server: {e}");
                }
            }
        }
        true
    }

    /// Counts a crash at `now`: whether more than [`MAX_CRASHES`] fell within
    /// [`CRASH_WINDOW`].
    fn crashed_too_often(&self, now: Instant) -> bool {
        let mut inner = self.lock();
        inner.crashes.push_back(now);
        while inner
            .crashes
            .front()
            .is_some_and(|t| now.duration_since(*t) > CRASH_WINDOW)
        {
            inner.crashes.pop_front();
        }
        inner.crashes.len() > MAX_CRASHES
    }

    /// Starts the server again after a crash, on another port when its own was taken
    /// meanwhile; `None` once it gave up.
    async fn restart(
        &self,
        cancel: &CancellationToken,
        launch: &mut Launch,
    ) -> Option<ServerChild> {
        self.state.send_replace(ServerState::Starting {
            model: launch.model_name.clone(),
        });
        if !child::port_is_free(launch.port) {
            match child::free_port() {
                Ok(port) => {
                    launch.port = port;
                    if let Some(run) = self.lock().run.as_mut() {
                        run.port = port;
                    }
                }
                Err(e) => {
                    self.give_up(cancel, launch, format!("no free port: {e}"));
                    return None;
                }
            }
        }
        log::note(
            &launch.log_dir,
            &format!("restarting on port {}", launch.port),
        );
        match child::spawn(launch).await {
            Ok(process) => Some(process),
            Err(e) => {
                self.give_up(cancel, launch, e.to_string());
                None
            }
        }
    }

    /// Ends the run as crashed; the next `ensure` starts afresh.
    fn give_up(&self, cancel: &CancellationToken, launch: &Launch, reason: String) {
        let state_file = {
            let mut inner = self.lock();
            if cancel.is_cancelled() {
                return;
            }
            cancel.cancel();
            inner.run.take().and_then(|run| run.opts.state_file)
        };
        if let Some(state_file) = state_file {
            let _ = std::fs::remove_file(state_file);
        }
        log::note(&launch.log_dir, &format!("giving up: {reason}"));
        self.state.send_replace(ServerState::Crashed {
            model: launch.model_name.clone(),
            reason,
            log_tail: log::tail(&launch.log_dir, LOG_TAIL_LINES),
        });
    }

    /// Stops the run once nothing has used it for its idle time. Woken by every guard
    /// taken or dropped; sleeps until the deadline otherwise.
    pub(super) async fn watch_idle(self: Arc<Self>, cancel: CancellationToken) {
        loop {
            let deadline = {
                let inner = self.lock();
                let Some(run) = &inner.run else { return };
                (inner.busy == 0).then(|| inner.last_use + run.opts.idle)
            };
            let woken = self.idle_wake.notified();
            match deadline {
                None => tokio::select! {
                    () = cancel.cancelled() => return,
                    () = woken => {}
                },
                Some(deadline) => tokio::select! {
                    () = cancel.cancelled() => return,
                    () = woken => {}
                    () = tokio::time::sleep_until(deadline.into()) => {
                        if self.stop_if_idle(&cancel).await {
                            return;
                        }
                    }
                },
            }
        }
    }

    async fn stop_if_idle(&self, cancel: &CancellationToken) -> bool {
        let _ops = self.ops.lock().await;
        let idle = {
            let inner = self.lock();
            match &inner.run {
                Some(run) if !cancel.is_cancelled() => {
                    inner.busy == 0 && inner.last_use.elapsed() >= run.opts.idle
                }
                _ => return true,
            }
        };
        if idle {
            tracing::info!("stopping the idle model server");
            self.stop_locked().await;
        }
        idle
    }
}

/// Asks `/health` (public: no key needed) until it answers 200, for at most `timeout`.
async fn wait_healthy(port: u16, timeout: Duration) -> bool {
    let client = match reqwest::Client::builder()
        // Never through a proxy: the server is on this machine.
        .no_proxy()
        .timeout(Duration::from_secs(2))
        .build()
    {
        Ok(client) => client,
        Err(e) => {
            tracing::warn!("cannot build the health check client: {e}");
            return false;
        }
    };
    let url = format!("http://127.0.0.1:{port}/health");
    let deadline = tokio::time::Instant::now() + timeout;
    while tokio::time::Instant::now() < deadline {
        if let Ok(response) = client.get(&url).send().await {
            if response.status() == reqwest::StatusCode::OK {
                return true;
            }
        }
        tokio::time::sleep(HEALTH_INTERVAL).await;
    }
    false
}
