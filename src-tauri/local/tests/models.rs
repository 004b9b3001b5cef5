//! The models the person keeps: GGUF headers, import, pull over real HTTP (resume, checks,
//! refusals), use, remove.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pocketpilot_local::gguf::{self, GgufError};
use pocketpilot_local::machine::MachineFacts;
use pocketpilot_local::models::{
    human_bytes, memory_needed, ModelError, ModelSource, ModelStore, PullProgress,
};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

const GIB: u64 = 1024 * 1024 * 1024;

// ---------------------------------------------------------------------------------------
// A GGUF v3 file written by hand: the documented layout, a few keys, one tiny F32 tensor.

enum Value<'a> {
    U32(u32),
    Str(&'a str),
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u64).to_le_bytes());
    out.extend(s.as_bytes());
}

fn gguf_file(kvs: &[(&str, Value)], padding: usize) -> Vec<u8> {
    let mut out = b"GGUF".to_vec();
    out.extend(3u32.to_le_bytes());
    out.extend(1u64.to_le_bytes()); // tensors
    out.extend((kvs.len() as u64).to_le_bytes());
    for (key, value) in kvs {
        put_str(&mut out, key);
        match value {
            Value::U32(v) => {
                out.extend(4u32.to_le_bytes());
                out.extend(v.to_le_bytes());
            }
            Value::Str(s) => {
                out.extend(8u32.to_le_bytes());
                put_str(&mut out, s);
            }
        }
    }
    // One F32 tensor of 4 x 2.
    put_str(&mut out, "token_embd.weight");
    out.extend(2u32.to_le_bytes());
    out.extend(4u64.to_le_bytes());
    out.extend(2u64.to_le_bytes());
    out.extend(0u32.to_le_bytes()); // F32
    out.extend(0u64.to_le_bytes()); // offset in the data section
    while !out.len().is_multiple_of(32) {
        out.push(0);
    }
    for i in 0..8 {
        out.extend((i as f32).to_le_bytes());
    }
    // Bytes past the tensor data stand in for a larger model's weights.
    out.extend(std::iter::repeat_n(0xA5u8, padding));
    out
}

const TEMPLATE: &str = "{% if tools %}{{ tools | tojson }}{% endif %}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}";

fn tiny_gguf(padding: usize) -> Vec<u8> {
    gguf_file(
        &[
            ("general.architecture", Value::Str("llama")),
            ("general.name", Value::Str("Tiny Test")),
            ("general.file_type", Value::U32(3)),
            ("llama.context_length", Value::U32(2048)),
            ("llama.block_count", Value::U32(2)),
            ("llama.embedding_length", Value::U32(64)),
            ("llama.attention.head_count", Value::U32(8)),
            ("llama.attention.head_count_kv", Value::U32(2)),
            ("tokenizer.chat_template", Value::Str(TEMPLATE)),
        ],
        padding,
    )
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A store that sees plenty of memory and disk unless a test says otherwise.
fn roomy(data: &Path) -> ModelStore {
    ModelStore::with_machine(
        data,
        MachineFacts {
            memory_available: Some(64 * GIB),
            disk_free: Some(1024 * GIB),
        },
    )
}

fn entries(dir: &Path) -> Vec<String> {
    match std::fs::read_dir(dir) {
        Ok(rd) => {
            let mut names: Vec<String> = rd
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        }
        Err(_) => Vec::new(),
    }
}

fn no_progress() -> impl Fn(PullProgress) + Send + Sync {
    |_| {}
}

// ---------------------------------------------------------------------------------------
// A real HTTP/1.1 server on 127.0.0.1: HEAD, GET, `Range: bytes=N-`, and connections cut
// (or left hanging) after a number of body bytes.

#[derive(Clone, Copy, PartialEq)]
enum Interrupt {
    None,
    /// Close the first GET's connection after this many body bytes.
    CutAfter(usize),
    /// Send this many body bytes of the first GET, then keep the connection open, silent.
    StallAfter(usize),
}

struct Served {
    /// (method, Range header) of every request, in order.
    requests: Mutex<Vec<(String, Option<String>)>>,
    body_bytes: AtomicU64,
    gets: AtomicUsize,
}

struct Server {
    url: String,
    served: Arc<Served>,
}

async fn serve(body: Vec<u8>, interrupt: Interrupt, file_name: &str) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let served = Arc::new(Served {
        requests: Mutex::new(Vec::new()),
        body_bytes: AtomicU64::new(0),
        gets: AtomicUsize::new(0),
    });
    let body = Arc::new(body);
    let state = served.clone();
    tokio::spawn(async move {
        loop {
            let Ok((socket, _)) = listener.accept().await else {
                return;
            };
            let body = body.clone();
            let state = state.clone();
            tokio::spawn(async move {
                let _ = answer(socket, &body, interrupt, &state).await;
            });
        }
    });
    Server {
        url: format!("http://{addr}/models/{file_name}"),
        served,
    }
}

async fn answer(
    mut socket: tokio::net::TcpStream,
    body: &[u8],
    interrupt: Interrupt,
    served: &Served,
) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if socket.read(&mut byte).await? == 0 {
            return Ok(());
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let method = head.split(' ').next().unwrap_or_default().to_owned();
    let range = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case("range").then(|| v.trim().to_owned())
    });
    served
        .requests
        .lock()
        .unwrap()
        .push((method.clone(), range.clone()));
    let len = body.len();
    if method == "HEAD" {
        let reply = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {len}\r\nAccept-Ranges: bytes\r\nConnection: close\r\n\r\n"
        );
        socket.write_all(reply.as_bytes()).await?;
        return Ok(());
    }
    let first_get = served.gets.fetch_add(1, Ordering::SeqCst) == 0;
    let start = range
        .as_deref()
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.strip_suffix('-'))
        .and_then(|s| s.parse::<usize>().ok());
    let (status, from) = match start {
        Some(s) if s < len => (
            format!(
                "206 Partial Content\r\nContent-Range: bytes {s}-{}/{len}",
                len - 1
            ),
            s,
        ),
        _ => ("200 OK".to_owned(), 0),
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        len - from
    );
    socket.write_all(reply.as_bytes()).await?;
    let rest = &body[from..];
    let (send, then) = match interrupt {
        Interrupt::CutAfter(n) if first_get => (&rest[..n.min(rest.len())], Interrupt::CutAfter(n)),
        Interrupt::StallAfter(n) if first_get => {
            (&rest[..n.min(rest.len())], Interrupt::StallAfter(n))
        }
        _ => (rest, Interrupt::None),
    };
    for chunk in send.chunks(16 * 1024) {
        socket.write_all(chunk).await?;
        served
            .body_bytes
            .fetch_add(chunk.len() as u64, Ordering::SeqCst);
    }
    socket.flush().await?;
    if let Interrupt::StallAfter(_) = then {
        // Hold the connection open until the client goes away.
        let mut sink = [0u8; 64];
        while socket.read(&mut sink).await? > 0 {}
    }
    Ok(())
}

impl Server {
    fn requests(&self) -> Vec<(String, Option<String>)> {
        self.served.requests.lock().unwrap().clone()
    }
    fn body_bytes(&self) -> u64 {
        self.served.body_bytes.load(Ordering::SeqCst)
    }
}

// ---------------------------------------------------------------------------------------
// Headers.

#[test]
fn a_written_header_gives_its_facts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.gguf");
    std::fs::write(&path, tiny_gguf(0)).unwrap();
    let facts = gguf::read_facts(&path).unwrap();
    assert_eq!(facts.architecture, "llama");
    assert_eq!(facts.name.as_deref(), Some("Tiny Test"));
    assert_eq!(facts.quantization.as_deref(), Some("Q4_1"));
    assert_eq!(facts.training_context, Some(2048));
    // No general.parameter_count: the one 4 x 2 tensor's elements.
    assert_eq!(facts.parameters, Some(8));
    assert_eq!(facts.head_count_kv, Some(2));
    assert!(facts.chat_template && facts.template_mentions_tools && facts.chatml);
    // 2 * 2 layers * (64 * 2 / 8) * 2 bytes.
    assert_eq!(facts.kv_bytes_per_token(), Some(2 * 2 * 16 * 2));
    assert!(gguf::has_magic(b"GGUF\x03\0\0\0"));
    assert!(!gguf::has_magic(b"GGU"));
}

#[test]
fn not_gguf_and_truncated_headers_are_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.gguf");
    std::fs::write(&text, b"just some text, not a model").unwrap();
    assert!(matches!(
        gguf::read_facts(&text),
        Err(GgufError::NotGguf { .. })
    ));
    let empty = dir.path().join("empty.gguf");
    std::fs::write(&empty, b"").unwrap();
    assert!(matches!(
        gguf::read_facts(&empty),
        Err(GgufError::NotGguf { .. })
    ));
    let whole = tiny_gguf(0);
    let cut = dir.path().join("cut.gguf");
    std::fs::write(&cut, &whole[..whole.len() / 3]).unwrap();
    let err = gguf::read_facts(&cut).unwrap_err();
    assert!(matches!(err, GgufError::Malformed(_)), "{err:?}");
}

fn peak_rss_kib() -> i64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    assert_eq!(rc, 0);
    // SAFETY: initialised by the successful call above.
    unsafe { usage.assume_init() }.ru_maxrss
}

#[test]
fn hostile_headers_fail_without_allocating_what_they_claim() {
    let dir = tempfile::tempdir().unwrap();
    let header = |tensors: u64, kvs: u64, rest: &[u8]| {
        let mut out = b"GGUF".to_vec();
        out.extend(3u32.to_le_bytes());
        out.extend(tensors.to_le_bytes());
        out.extend(kvs.to_le_bytes());
        out.extend(rest);
        out
    };
    // A key claiming 2^62 bytes.
    let mut long_key = Vec::new();
    long_key.extend((1u64 << 62).to_le_bytes());
    long_key.extend(b"general.architecture");
    // An array of 2^40 u64 values.
    let mut huge_array = Vec::new();
    put_str(&mut huge_array, "tokenizer.ggml.scores");
    huge_array.extend(9u32.to_le_bytes()); // array
    huge_array.extend(10u32.to_le_bytes()); // of u64
    huge_array.extend((1u64 << 40).to_le_bytes());
    huge_array.extend([0u8; 64]);
    // A string value claiming 2^50 bytes.
    let mut long_value = Vec::new();
    put_str(&mut long_value, "general.architecture");
    long_value.extend(8u32.to_le_bytes());
    long_value.extend((1u64 << 50).to_le_bytes());
    long_value.extend(b"llama");
    let cases = [
        ("counts", header(u64::MAX, u64::MAX, &[])),
        ("tensor count", header(1 << 40, 0, &[])),
        ("key length", header(0, 1, &long_key)),
        ("array length", header(0, 1, &huge_array)),
        ("string length", header(0, 1, &long_value)),
    ];
    let before = peak_rss_kib();
    for (what, bytes) in cases {
        let path = dir.path().join("hostile.gguf");
        std::fs::write(&path, &bytes).unwrap();
        let err = gguf::read_facts(&path).unwrap_err();
        assert!(matches!(err, GgufError::Malformed(_)), "{what}: {err:?}");
    }
    // A reader that believed any of these would have aborted, or grown by gigabytes; the
    // bound leaves room for the other tests of this binary running alongside.
    let grown_mib = (peak_rss_kib() - before) / 1024;
    assert!(grown_mib < 256, "peak memory grew by {grown_mib} MiB");
}

fn smollm2() -> Option<PathBuf> {
    let peers = std::env::var_os("POCKETPILOT_PEERS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/pocketpilot-peers"))
        })?;
    let path = peers.join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    path.is_file().then_some(path)
}

#[test]
fn the_real_smollm2_header() {
    let Some(path) = smollm2() else {
        eprintln!(
            "\n*** SKIPPED the_real_smollm2_header: SmolLM2-135M-Instruct.Q4_1.gguf is not in \
             $POCKETPILOT_PEERS/models (default ~/.cache/pocketpilot-peers/models) ***\n"
        );
        return;
    };
    let facts = gguf::read_facts(&path).unwrap();
    assert_eq!(facts.architecture, "llama");
    assert_eq!(facts.quantization.as_deref(), Some("Q4_1"));
    assert_eq!(facts.training_context, Some(8192));
    let params = facts.parameters.unwrap();
    assert!((100_000_000..200_000_000).contains(&params), "{params}");
    assert!(facts.chat_template && facts.chatml);
    assert!(facts.kv_bytes_per_token().unwrap() > 0);

    // And it imports (a hard link within one filesystem, else a copy).
    let data = tempfile::tempdir().unwrap();
    let store = roomy(data.path());
    let m = store.import(&path, None).unwrap();
    assert_eq!(m.name, "smollm2-135m-instruct.q4_1");
    assert_eq!(m.size, std::fs::metadata(&path).unwrap().len());
    assert_eq!(m.facts, facts);
}

// ---------------------------------------------------------------------------------------
// Import, list, use, chosen, remove.

#[test]
fn import_list_use_chosen_remove() {
    let src = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let store = roomy(data.path());
    assert!(store.list().unwrap().is_empty());
    assert_eq!(store.chosen().unwrap(), None);

    let bytes = tiny_gguf(1000);
    let b_path = src.path().join("Beta-Model.Q4_1.gguf");
    std::fs::write(&b_path, &bytes).unwrap();
    let beta = store.import(&b_path, None).unwrap();
    assert_eq!(beta.name, "beta-model.q4_1");
    assert_eq!(beta.size, bytes.len() as u64);
    assert_eq!(beta.sha256, sha256_hex(&bytes));
    assert!(matches!(beta.source, ModelSource::Imported { .. }));
    assert!(beta.file.is_absolute() && beta.file.starts_with(store.dir()));
    // Same filesystem: a hard link, not a second copy.
    assert_eq!(
        std::fs::metadata(&b_path).unwrap().ino(),
        std::fs::metadata(&beta.file).unwrap().ino()
    );
    let dir_mode = std::fs::metadata(store.dir()).unwrap().mode() & 0o777;
    assert_eq!(dir_mode, 0o700);
    // The only model is the one in use.
    assert_eq!(store.chosen().unwrap().unwrap().name, beta.name);

    let a_path = src.path().join("alpha.gguf");
    std::fs::write(&a_path, tiny_gguf(10)).unwrap();
    let alpha = store.import(&a_path, Some("alpha")).unwrap();
    assert!(matches!(
        store.import(&a_path, Some("alpha")),
        Err(ModelError::Exists(n)) if n == "alpha"
    ));
    assert!(matches!(
        store.import(&a_path, Some("Bad Name")),
        Err(ModelError::InvalidName(_))
    ));

    // Neither a download in progress nor a broken manifest is a model.
    std::fs::write(store.dir().join("half.gguf.part"), &bytes[..100]).unwrap();
    std::fs::write(store.dir().join("broken.json"), b"{ not json").unwrap();
    let names: Vec<String> = store.list().unwrap().into_iter().map(|m| m.name).collect();
    assert_eq!(names, ["alpha", "beta-model.q4_1"]);
    assert!(matches!(store.get("broken"), Err(ModelError::NotFound(_))));

    // No `default`: the first by name.
    assert_eq!(store.chosen().unwrap().unwrap(), alpha);
    store.use_model(&beta.name).unwrap();
    assert_eq!(store.chosen().unwrap().unwrap(), beta);
    assert!(matches!(
        store.use_model("missing"),
        Err(ModelError::NotFound(_))
    ));

    store.remove(&beta.name).unwrap();
    assert!(!beta.file.exists());
    assert!(b_path.exists(), "the person's own file stays");
    assert!(!store.dir().join("default").exists());
    assert_eq!(store.chosen().unwrap().unwrap(), alpha);
    assert!(matches!(
        store.remove(&beta.name),
        Err(ModelError::NotFound(_))
    ));
}

#[test]
fn import_copies_across_filesystems() {
    // /dev/shm is a tmpfs on Linux; when the temporary folder is on another filesystem, the
    // hard link fails and the file is copied.
    let shm = Path::new("/dev/shm");
    let data = tempfile::tempdir().unwrap();
    let Ok(src) = tempfile::tempdir_in(shm) else {
        eprintln!("\n*** SKIPPED import_copies_across_filesystems: no /dev/shm ***\n");
        return;
    };
    if std::fs::metadata(src.path()).unwrap().dev() == std::fs::metadata(data.path()).unwrap().dev()
    {
        eprintln!("\n*** SKIPPED import_copies_across_filesystems: one filesystem only ***\n");
        return;
    }
    let bytes = tiny_gguf(5000);
    let path = src.path().join("copied.gguf");
    std::fs::write(&path, &bytes).unwrap();

    let cramped = ModelStore::with_machine(
        data.path(),
        MachineFacts {
            memory_available: Some(64 * GIB),
            disk_free: Some(100),
        },
    );
    let err = cramped.import(&path, None).unwrap_err();
    assert!(
        matches!(err, ModelError::NoDiskSpace { needed, free: 100 } if needed == bytes.len() as u64)
    );
    assert!(
        entries(cramped.dir()).is_empty(),
        "{:?}",
        entries(cramped.dir())
    );

    let store = roomy(data.path());
    let m = store.import(&path, None).unwrap();
    assert_ne!(
        std::fs::metadata(&path).unwrap().ino(),
        std::fs::metadata(&m.file).unwrap().ino()
    );
    assert_eq!(std::fs::read(&m.file).unwrap(), bytes);
    assert_eq!(m.sha256, sha256_hex(&bytes));
    assert_eq!(std::fs::metadata(&m.file).unwrap().mode() & 0o777, 0o600);
    assert_eq!(entries(store.dir()), ["copied.gguf", "copied.json"]);
}

#[test]
fn a_non_gguf_file_is_not_imported() {
    let src = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let store = roomy(data.path());
    let path = src.path().join("photo.gguf");
    std::fs::write(&path, b"\x89PNG\r\n\x1a\n not a model").unwrap();
    assert!(matches!(
        store.import(&path, None),
        Err(ModelError::NotGguf { .. })
    ));
    assert!(entries(store.dir()).is_empty());
}

#[test]
fn a_model_too_large_for_memory_is_not_imported() {
    let src = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let available = 100 * 1024 * 1024;
    let store = ModelStore::with_machine(
        data.path(),
        MachineFacts {
            memory_available: Some(available),
            disk_free: Some(1024 * GIB),
        },
    );
    let bytes = tiny_gguf(4096);
    let path = src.path().join("big.gguf");
    std::fs::write(&path, &bytes).unwrap();
    let err = store.import(&path, None).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ModelError::TooLarge { .. }), "{err:?}");
    assert!(
        text.contains(&human_bytes(memory_needed(bytes.len() as u64)))
            && text.contains(&human_bytes(available)),
        "{text}"
    );
    assert!(entries(store.dir()).is_empty());
}

#[test]
fn a_bundled_model_stays_where_it_is() {
    let app = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let store = roomy(data.path());
    let path = app.path().join("default-model.gguf");
    std::fs::write(&path, tiny_gguf(64)).unwrap();
    let first = store.register_bundled(&path, "builtin").unwrap();
    assert_eq!(first.file, path);
    assert!(matches!(first.source, ModelSource::Bundled { .. }));
    let again = store.register_bundled(&path, "builtin").unwrap();
    assert_eq!(again, first);
    assert_eq!(entries(store.dir()), ["builtin.json"]);
    store.use_model("builtin").unwrap();
    store.remove("builtin").unwrap();
    assert!(path.exists(), "a bundled file is never deleted");
    assert!(store.list().unwrap().is_empty());
    assert_eq!(store.chosen().unwrap(), None);
}

// ---------------------------------------------------------------------------------------
// Pull.

#[tokio::test]
async fn a_cut_download_resumes_with_range() {
    let body = tiny_gguf(200_000);
    let cut = 70_000;
    let server = serve(body.clone(), Interrupt::CutAfter(cut), "Tiny-Q4_1.gguf").await;
    let data = tempfile::tempdir().unwrap();
    let store = roomy(data.path());
    let seen = Mutex::new(Vec::new());
    let progress = |p: PullProgress| seen.lock().unwrap().push(p);
    let m = store
        .pull(
            &server.url,
            Some(&sha256_hex(&body)),
            None,
            &progress,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(m.name, "tiny-q4_1");
    assert_eq!(m.sha256, sha256_hex(&body));
    assert_eq!(m.size, body.len() as u64);
    assert_eq!(std::fs::read(&m.file).unwrap(), body);
    assert!(matches!(&m.source, ModelSource::Pulled { url } if *url == server.url));
    assert_eq!(std::fs::metadata(&m.file).unwrap().mode() & 0o777, 0o600);
    let resumed = format!("bytes={cut}-");
    assert!(
        server
            .requests()
            .iter()
            .any(|(method, range)| method == "GET" && range.as_deref() == Some(resumed.as_str())),
        "{:?}",
        server.requests()
    );
    // The body was sent once in all: the resumed request did not start over.
    assert_eq!(server.body_bytes(), body.len() as u64);
    let last = *seen.lock().unwrap().last().unwrap();
    assert_eq!((last.done, last.total), (m.size, Some(m.size)));
    assert_eq!(entries(store.dir()), ["tiny-q4_1.gguf", "tiny-q4_1.json"]);
    assert_eq!(store.list().unwrap(), vec![m]);
}

#[tokio::test]
async fn a_cancelled_pull_keeps_its_part_and_a_later_pull_resumes_it() {
    let body = tiny_gguf(300_000);
    let stall = 100_000;
    let server = serve(body.clone(), Interrupt::StallAfter(stall), "stalls.gguf").await;
    let data = tempfile::tempdir().unwrap();
    let store = roomy(data.path());
    let cancel = CancellationToken::new();
    let on_progress = {
        let cancel = cancel.clone();
        move |p: PullProgress| {
            if p.done > 0 {
                cancel.cancel();
            }
        }
    };
    let err = store
        .pull(&server.url, None, None, &on_progress, cancel)
        .await
        .unwrap_err();
    assert!(matches!(err, ModelError::Cancelled), "{err:?}");
    let part = store.dir().join("stalls.gguf.part");
    let kept = std::fs::metadata(&part).unwrap().len();
    assert!(kept > 0 && kept <= stall as u64, "{kept}");
    assert_eq!(std::fs::metadata(&part).unwrap().mode() & 0o777, 0o600);
    assert!(store.list().unwrap().is_empty());
    assert_eq!(store.chosen().unwrap(), None);

    let m = store
        .pull(
            &server.url,
            Some(&sha256_hex(&body)),
            None,
            &no_progress(),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(std::fs::read(&m.file).unwrap(), body);
    let resumed = format!("bytes={kept}-");
    assert!(
        server
            .requests()
            .iter()
            .any(|(_, range)| range.as_deref() == Some(resumed.as_str())),
        "{:?}",
        server.requests()
    );
    assert!(!part.exists());
}

#[tokio::test]
async fn a_wrong_sha256_is_refused_and_nothing_is_left() {
    let body = tiny_gguf(10_000);
    let server = serve(body.clone(), Interrupt::None, "model.gguf").await;
    let data = tempfile::tempdir().unwrap();
    let store = roomy(data.path());
    let wrong = "0".repeat(64);
    let err = store
        .pull(
            &server.url,
            Some(&wrong),
            None,
            &no_progress(),
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    match &err {
        ModelError::Checksum { expected, actual } => {
            assert_eq!(expected, &wrong);
            assert_eq!(actual, &sha256_hex(&body));
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains(&wrong) && err.to_string().contains(&sha256_hex(&body)));
    assert!(
        entries(store.dir()).is_empty(),
        "{:?}",
        entries(store.dir())
    );
    assert!(matches!(
        store
            .pull(
                &server.url,
                Some("abc"),
                None,
                &no_progress(),
                CancellationToken::new()
            )
            .await,
        Err(ModelError::InvalidSha256(_))
    ));
}

#[tokio::test]
async fn a_non_gguf_download_is_refused_and_nothing_is_left() {
    let server = serve(
        b"<html>404 but served as 200</html>".repeat(100),
        Interrupt::None,
        "page.gguf",
    )
    .await;
    let data = tempfile::tempdir().unwrap();
    let store = roomy(data.path());
    let err = store
        .pull(
            &server.url,
            None,
            None,
            &no_progress(),
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ModelError::NotGguf { path } if *path == server.url),
        "{err:?}"
    );
    assert!(
        entries(store.dir()).is_empty(),
        "{:?}",
        entries(store.dir())
    );
}

#[tokio::test]
async fn not_enough_disk_is_refused_before_a_byte_is_downloaded() {
    let body = tiny_gguf(50_000);
    let server = serve(body.clone(), Interrupt::None, "roomy.gguf").await;
    let data = tempfile::tempdir().unwrap();
    let free = 20_000;
    let store = ModelStore::with_machine(
        data.path(),
        MachineFacts {
            memory_available: Some(64 * GIB),
            disk_free: Some(free),
        },
    );
    let err = store
        .pull(
            &server.url,
            None,
            None,
            &no_progress(),
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, ModelError::NoDiskSpace { needed, free: f } if needed == body.len() as u64 && f == free),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains(&human_bytes(body.len() as u64)) && text.contains(&human_bytes(free)),
        "{text}"
    );
    assert_eq!(server.body_bytes(), 0);
    assert!(store.list().unwrap().is_empty());
    assert!(!store.dir().join("roomy.gguf.part").exists());
}

#[tokio::test]
async fn a_model_too_large_for_memory_is_not_pulled() {
    let body = tiny_gguf(50_000);
    let server = serve(body.clone(), Interrupt::None, "heavy.gguf").await;
    let data = tempfile::tempdir().unwrap();
    let available = 200 * 1024 * 1024;
    let store = ModelStore::with_machine(
        data.path(),
        MachineFacts {
            memory_available: Some(available),
            disk_free: Some(1024 * GIB),
        },
    );
    let err = store
        .pull(
            &server.url,
            None,
            None,
            &no_progress(),
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ModelError::TooLarge { .. }), "{err:?}");
    assert!(
        text.contains(&human_bytes(memory_needed(body.len() as u64)))
            && text.contains(&human_bytes(available)),
        "{text}"
    );
    assert_eq!(server.body_bytes(), 0, "refused from the announced size");
    assert!(store.list().unwrap().is_empty());
}

#[tokio::test]
async fn a_name_in_use_is_not_pulled_over() {
    let body = tiny_gguf(1000);
    let server = serve(body.clone(), Interrupt::None, "same.gguf").await;
    let data = tempfile::tempdir().unwrap();
    let store = roomy(data.path());
    store
        .pull(
            &server.url,
            None,
            None,
            &no_progress(),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    let err = store
        .pull(
            &server.url,
            None,
            None,
            &no_progress(),
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, ModelError::Exists(ref n) if n == "same"),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_second_pull_of_the_same_name_is_refused_while_the_first_runs() {
    let body = tiny_gguf(300_000);
    let server = serve(body.clone(), Interrupt::StallAfter(50_000), "shared.gguf").await;
    let data = tempfile::tempdir().unwrap();
    let started = Arc::new(tokio::sync::Notify::new());
    let cancel = CancellationToken::new();
    // Another store on the same folder, as a second process would have.
    let first = {
        let (url, dir, started, cancel) = (
            server.url.clone(),
            data.path().to_owned(),
            started.clone(),
            cancel.clone(),
        );
        tokio::spawn(async move {
            let on_progress = move |_: PullProgress| started.notify_one();
            roomy(&dir)
                .pull(&url, None, None, &on_progress, cancel)
                .await
        })
    };
    started.notified().await;
    let store = roomy(data.path());
    let err = store
        .pull(
            &server.url,
            None,
            None,
            &no_progress(),
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, ModelError::Busy(ref n) if n == "shared"),
        "{err:?}"
    );
    cancel.cancel();
    assert!(matches!(first.await.unwrap(), Err(ModelError::Cancelled)));
    // The lock went with the first pull: this one resumes and finishes.
    let m = store
        .pull(
            &server.url,
            Some(&sha256_hex(&body)),
            None,
            &no_progress(),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(std::fs::read(&m.file).unwrap(), body);
}
