//! `ModelStore::pull`: a resumable download into `<name>.gguf.part`, checked before it
//! becomes a model.
//!
//! The size is checked against the free disk (and the memory) from a HEAD before a byte
//! is fetched. A part left by a cut connection or a cancel is resumed with `Range`; the
//! hash covers the part already on disk, so a resumed download is verified whole. A cut
//! connection is retried with backoff while each attempt makes progress.
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures::StreamExt;
use reqwest::header::{HeaderMap, CONTENT_LENGTH, CONTENT_RANGE, RANGE};
use reqwest::StatusCode;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncSeekExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::{
    check_fits_memory, name_from_file, now_unix, validate_name, Manifest, ModelError, ModelSource,
    ModelStore, KEEP_FREE,
};
use crate::gguf;

/// Failed attempts in a row (none of them adding a byte) before a download gives up.
const MAX_ATTEMPTS: u32 = 5;
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(8);
/// Progress is reported at most this often (and once at the end).
const REPORT_EVERY: Duration = Duration::from_millis(200);

/// How far a download is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PullProgress {
    /// Bytes on disk, a resumed part's included.
    pub done: u64,
    pub total: Option<u64>,
    /// Over this pull (a resumed part's bytes are not counted as fetched).
    pub bytes_per_sec: f64,
    pub eta_secs: Option<f64>,
}

/// Bytes gathered before one write to the part.
const WRITE_BUFFER: usize = 4 << 20;

/// What one attempt ended with, when it did not finish.
enum Stop {
    /// Worth another attempt from where the part ends.
    Retry(String),
    Fatal(ModelError),
}

impl From<std::io::Error> for Stop {
    fn from(e: std::io::Error) -> Self {
        Stop::Fatal(e.into())
    }
}

/// The part on disk and the hash of its bytes so far.
struct Part {
    /// Buffered: tokio writes a file on its blocking pool, one hop per write, and the
    /// body arrives in chunks of a few KiB.
    file: tokio::io::BufWriter<tokio::fs::File>,
    hasher: Sha256,
    done: u64,
    total: Option<u64>,
}

impl Part {
    async fn restart(&mut self) -> std::io::Result<()> {
        self.file.flush().await?;
        self.file.get_mut().set_len(0).await?;
        self.file.seek(std::io::SeekFrom::Start(0)).await?;
        self.hasher = Sha256::new();
        self.done = 0;
        Ok(())
    }
}

struct Meter<'a> {
    progress: &'a (dyn Fn(PullProgress) + Send + Sync),
    started: Instant,
    start_done: u64,
    last: Option<Instant>,
}

impl Meter<'_> {
    fn report(&mut self, done: u64, total: Option<u64>, force: bool) {
        let now = Instant::now();
        if !force
            && self
                .last
                .is_some_and(|l| now.duration_since(l) < REPORT_EVERY)
        {
            return;
        }
        self.last = Some(now);
        let secs = now.duration_since(self.started).as_secs_f64();
        #[allow(clippy::cast_precision_loss)] // a rate for display
        let fetched = done.saturating_sub(self.start_done) as f64;
        let bytes_per_sec = if secs > 0.0 { fetched / secs } else { 0.0 };
        #[allow(clippy::cast_precision_loss)]
        let eta_secs = total
            .filter(|_| bytes_per_sec > 0.0)
            .map(|t| t.saturating_sub(done) as f64 / bytes_per_sec);
        (self.progress)(PullProgress {
            done,
            total,
            bytes_per_sec,
            eta_secs,
        });
    }
}

impl ModelStore {
    /// Downloads the model at `url` (resuming a part left by an earlier pull), checks it
    /// (`sha256` when given, GGUF header, memory) and adds it. Cancelling keeps the part for
    /// a later pull; any failed check removes it.
    pub async fn pull(
        &self,
        url: &str,
        sha256: Option<&str>,
        name: Option<&str>,
        progress: &(dyn Fn(PullProgress) + Send + Sync),
        cancel: CancellationToken,
    ) -> Result<Manifest, ModelError> {
        let parsed =
            reqwest::Url::parse(url).map_err(|e| ModelError::Http(format!("{url}: {e}")))?;
        let expected = expected_sha256(sha256)?;
        let name = match name {
            Some(n) => {
                validate_name(n)?;
                n.to_owned()
            }
            None => name_from_file(
                parsed
                    .path_segments()
                    .and_then(|mut s| s.next_back())
                    .unwrap_or_default(),
            )?,
        };
        if self.taken(&name) {
            return Err(ModelError::Exists(name));
        }
        self.ensure_dir()?;
        let part_path = self.part_path(&name);
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| ModelError::Http(e.to_string()))?;

        let on_disk = match tokio::fs::metadata(&part_path).await {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(e.into()),
        };
        let total = head_length(&client, url).await;
        if let Some(total) = total {
            self.check_room(total, on_disk.min(total))?;
        }
        let mut part = self.open_part(&part_path, &name, total, on_disk).await?;
        let mut meter = Meter {
            progress,
            started: Instant::now(),
            start_done: part.done,
            last: None,
        };
        self.fetch(&client, (url, &name), &mut part, &mut meter, &cancel)
            .await?;
        part.file.flush().await?;
        part.file.get_ref().sync_all().await?;
        meter.report(part.done, part.total, true);
        let size = part.done;
        let actual = hex::encode(part.hasher.finalize());
        let _lock = part.file;

        self.install(&part_path, (name, url), expected.as_deref(), actual, size)
            .await
    }

    /// Checks the whole part (hash, GGUF header, memory) and makes it model `name`, with
    /// its manifest; a part that fails a check is removed. The part's lock is held by the
    /// caller until this returns.
    async fn install(
        &self,
        part_path: &Path,
        (name, url): (String, &str),
        expected: Option<&str>,
        actual: String,
        size: u64,
    ) -> Result<Manifest, ModelError> {
        let checked = self
            .check_download(part_path, url, expected, &actual, size)
            .await;
        let facts = match checked {
            Ok(f) => f,
            Err(e) => {
                let _ = tokio::fs::remove_file(part_path).await;
                return Err(e);
            }
        };
        if self.taken(&name) {
            return Err(ModelError::Exists(name));
        }
        let target = self.gguf_path(&name);
        tokio::fs::rename(part_path, &target).await?;
        let manifest = Manifest {
            name,
            file: target.clone(),
            size,
            sha256: actual,
            source: ModelSource::Pulled {
                url: url.to_owned(),
            },
            facts,
            added_unix: now_unix(),
        };
        if let Err(e) = self.write_manifest(&manifest) {
            let _ = tokio::fs::remove_file(&target).await;
            return Err(e);
        }
        Ok(manifest)
    }

    /// The part of model `name`, opened and locked, its bytes on disk hashed to go on
    /// from (or cleared when they cannot be the start of a file of `total` bytes).
    async fn open_part(
        &self,
        part_path: &Path,
        name: &str,
        total: Option<u64>,
        on_disk: u64,
    ) -> Result<Part, ModelError> {
        let file = tokio::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(part_path)
            .await?;
        // Held until the model is in place: a second pull of the same name is refused
        // rather than writing into the same part, and once the lock is ours, a model
        // finished meanwhile under that name is seen.
        lock_exclusive(&file).map_err(|e| match e.kind() {
            std::io::ErrorKind::WouldBlock => ModelError::Busy(name.to_owned()),
            _ => ModelError::Io(e),
        })?;
        if self.taken(name) {
            return Err(ModelError::Exists(name.to_owned()));
        }
        let mut part = Part {
            file: tokio::io::BufWriter::with_capacity(WRITE_BUFFER, file),
            hasher: Sha256::new(),
            done: 0,
            total,
        };
        if on_disk > 0 && total.is_none_or(|t| on_disk <= t) {
            let (hasher, done) = rehash(part_path.to_path_buf()).await?;
            part.hasher = hasher;
            part.done = done;
            part.file.seek(std::io::SeekFrom::End(0)).await?;
        } else {
            part.restart().await?;
        }
        Ok(part)
    }

    /// Attempts until the body of `url` is whole in the part, backing off after a cut
    /// connection; gives up after [`MAX_ATTEMPTS`] in a row that add nothing.
    async fn fetch(
        &self,
        client: &reqwest::Client,
        (url, name): (&str, &str),
        part: &mut Part,
        meter: &mut Meter<'_>,
        cancel: &CancellationToken,
    ) -> Result<(), ModelError> {
        let mut failures = 0u32;
        loop {
            let before = part.done;
            match self.attempt(client, url, part, meter, cancel).await {
                Ok(()) => return Ok(()),
                Err(Stop::Fatal(e)) => {
                    part.file.flush().await?;
                    return Err(e);
                }
                Err(Stop::Retry(why)) => {
                    part.file.flush().await?;
                    failures = if part.done > before { 1 } else { failures + 1 };
                    if failures >= MAX_ATTEMPTS {
                        return Err(ModelError::Http(format!(
                            "{why} ({failures} attempts in a row); pulling again resumes it"
                        )));
                    }
                    let wait = FIRST_BACKOFF
                        .saturating_mul(1 << (failures - 1).min(8))
                        .min(MAX_BACKOFF);
                    tracing::info!("download of {name} interrupted ({why}); resuming in {wait:?}");
                    tokio::select! {
                        _ = cancel.cancelled() => return Err(ModelError::Cancelled),
                        _ = tokio::time::sleep(wait) => {}
                    }
                }
            }
        }
    }

    /// Refuses a download of `total` bytes (`on_disk` of them already there) that the disk
    /// or the memory cannot hold.
    fn check_room(&self, total: u64, on_disk: u64) -> Result<(), ModelError> {
        let needed = total - on_disk;
        let free = self.machine.disk_free(&self.dir)?;
        if needed.saturating_add(KEEP_FREE) > free {
            return Err(ModelError::NoDiskSpace { needed, free });
        }
        check_fits_memory(total, self.machine.memory_available())
    }

    /// One GET from where the part ends, written to the part until the body ends.
    async fn attempt(
        &self,
        client: &reqwest::Client,
        url: &str,
        part: &mut Part,
        meter: &mut Meter<'_>,
        cancel: &CancellationToken,
    ) -> Result<(), Stop> {
        if part.total.is_some_and(|t| part.done == t) && part.done > 0 {
            return Ok(());
        }
        let mut request = client.get(url);
        if part.done > 0 {
            request = request.header(RANGE, format!("bytes={}-", part.done));
        }
        let response = tokio::select! {
            _ = cancel.cancelled() => return Err(Stop::Fatal(ModelError::Cancelled)),
            r = request.send() => r,
        };
        let response = match response {
            Ok(r) => r,
            Err(e) => return Err(Stop::Retry(error_chain(&e))),
        };
        take_response(part, &response, url).await?;
        if let Some(total) = part.total {
            self.check_room(total, part.done).map_err(Stop::Fatal)?;
        }
        let mut body = response.bytes_stream();
        loop {
            let next = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(Stop::Fatal(ModelError::Cancelled)),
                n = body.next() => n,
            };
            match next {
                None => break,
                Some(Ok(bytes)) => {
                    part.file.write_all(&bytes).await?;
                    part.hasher.update(&bytes);
                    part.done += bytes.len() as u64;
                    meter.report(part.done, part.total, false);
                }
                Some(Err(e)) => return Err(Stop::Retry(error_chain(&e))),
            }
        }
        match part.total {
            Some(t) if part.done < t => Err(Stop::Retry(format!(
                "the connection closed after {} of {t} bytes",
                part.done
            ))),
            Some(t) if part.done > t => {
                part.restart().await?;
                Err(Stop::Fatal(ModelError::Http(format!(
                    "{url} sent more than the {t} bytes it announced"
                ))))
            }
            _ => Ok(()),
        }
    }

    async fn check_download(
        &self,
        part: &Path,
        url: &str,
        expected: Option<&str>,
        actual: &str,
        size: u64,
    ) -> Result<gguf::GgufFacts, ModelError> {
        if let Some(expected) = expected {
            if expected != actual {
                return Err(ModelError::Checksum {
                    expected: expected.to_owned(),
                    actual: actual.to_owned(),
                });
            }
        }
        let path = part.to_path_buf();
        let facts = tokio::task::spawn_blocking(move || gguf::read_facts(&path))
            .await
            .map_err(|e| ModelError::Io(std::io::Error::other(e)))?
            .map_err(|e| match e {
                gguf::GgufError::NotGguf { .. } => ModelError::NotGguf {
                    path: url.to_owned(),
                },
                other => other.into(),
            })?;
        check_fits_memory(size, self.machine.memory_available())?;
        Ok(facts)
    }
}

fn lock_exclusive(file: &tokio::fs::File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a file descriptor the File owns and keeps open for the call.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The Content-Length a HEAD announces; `None` when the server does not say (the GET's
/// headers are checked instead).
async fn head_length(client: &reqwest::Client, url: &str) -> Option<u64> {
    match client.head(url).send().await {
        Ok(r) if r.status().is_success() => header_length(r.headers()),
        Ok(r) => {
            tracing::debug!("HEAD {url}: {}", r.status());
            None
        }
        Err(e) => {
            tracing::debug!("HEAD {url}: {e}");
            None
        }
    }
}

/// Read from the header itself: for a HEAD, reqwest's `content_length()` is the (empty)
/// body's.
fn header_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// `bytes START-END/TOTAL` → (START, TOTAL).
fn content_range(headers: &HeaderMap) -> (Option<u64>, Option<u64>) {
    let Some(value) = headers.get(CONTENT_RANGE).and_then(|v| v.to_str().ok()) else {
        return (None, None);
    };
    let Some(spec) = value.trim().strip_prefix("bytes ") else {
        return (None, None);
    };
    let (range, total) = spec.split_once('/').unwrap_or((spec, "*"));
    let start = range
        .split_once('-')
        .and_then(|(s, _)| s.trim().parse().ok());
    (start, total.trim().parse().ok())
}

/// The hash state and length of the part already on disk.
async fn rehash(path: PathBuf) -> Result<(Sha256, u64), ModelError> {
    tokio::task::spawn_blocking(move || -> std::io::Result<(Sha256, u64)> {
        let mut f = std::fs::File::open(&path)?;
        let mut hasher = Sha256::new();
        let n = std::io::copy(&mut f, &mut hasher)?;
        Ok((hasher, n))
    })
    .await
    .map_err(|e| ModelError::Io(std::io::Error::other(e)))?
    .map_err(ModelError::Io)
}

/// reqwest's message with its causes: "error sending request" alone says little.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Whether `response` carries the bytes the part wants next: a part the server cannot
/// continue is started over, and the total learnt when the HEAD did not give it.
async fn take_response(
    part: &mut Part,
    response: &reqwest::Response,
    url: &str,
) -> Result<(), Stop> {
    match response.status() {
        StatusCode::PARTIAL_CONTENT => {
            let (start, total) = content_range(response.headers());
            let asked = part.done;
            if start != Some(asked) {
                // Not the bytes asked for: start over rather than splice.
                part.restart().await?;
                let at = start.map_or_else(|| "no stated byte".to_owned(), |s| format!("byte {s}"));
                return Err(Stop::Retry(format!(
                    "the server resumed at {at}, not at byte {asked}"
                )));
            }
            if part.total.is_none() {
                part.total = total;
            }
        }
        StatusCode::OK => {
            // A server that ignores Range sends the whole file again.
            if part.done > 0 {
                part.restart().await?;
            }
            if part.total.is_none() {
                part.total = header_length(response.headers());
            }
        }
        StatusCode::RANGE_NOT_SATISFIABLE => {
            part.restart().await?;
            return Err(Stop::Retry("the server could not resume the part".into()));
        }
        s if s.is_server_error() => {
            return Err(Stop::Retry(format!("{url} answered {s}")));
        }
        s => {
            return Err(Stop::Fatal(ModelError::Http(format!("{url} answered {s}"))));
        }
    }
    Ok(())
}

/// The expected hash, lower case; refused unless it is 64 hex digits.
fn expected_sha256(sha256: Option<&str>) -> Result<Option<String>, ModelError> {
    let expected = sha256.map(|s| s.trim().to_ascii_lowercase());
    if let Some(e) = &expected {
        if e.len() != 64 || !e.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(ModelError::InvalidSha256(e.clone()));
        }
    }
    Ok(expected)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn content_range_parts() {
        let mut h = HeaderMap::new();
        h.insert(CONTENT_RANGE, HeaderValue::from_static("bytes 100-199/200"));
        assert_eq!(content_range(&h), (Some(100), Some(200)));
        h.insert(CONTENT_RANGE, HeaderValue::from_static("bytes 5-9/*"));
        assert_eq!(content_range(&h), (Some(5), None));
    }
}
