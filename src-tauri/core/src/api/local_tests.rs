//! The window's model calls against real files, a real store and a real HTTP server on
//! 127.0.0.1 (a download held midway, cancelled, then resumed to the end).
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::mpsc;

use super::*;

/// A GGUF v3 header with no tensors, padded to `size` bytes.
fn gguf(size: usize) -> Vec<u8> {
    fn text(out: &mut Vec<u8>, s: &str) {
        out.extend((s.len() as u64).to_le_bytes());
        out.extend(s.as_bytes());
    }
    let mut out = b"GGUF".to_vec();
    out.extend(3u32.to_le_bytes());
    out.extend(0u64.to_le_bytes());
    out.extend(4u64.to_le_bytes());
    text(&mut out, "general.architecture");
    out.extend(8u32.to_le_bytes());
    text(&mut out, "llama");
    text(&mut out, "general.name");
    out.extend(8u32.to_le_bytes());
    text(&mut out, "Tiny Test");
    text(&mut out, "general.parameter_count");
    out.extend(10u32.to_le_bytes());
    out.extend(134_515_008u64.to_le_bytes());
    text(&mut out, "llama.context_length");
    out.extend(4u32.to_le_bytes());
    out.extend(4096u32.to_le_bytes());
    out.resize(size, 0);
    out
}

#[test]
fn the_form_saves_and_refuses_figures_out_of_range() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_in_dir(dir.path()).unwrap();
    let stored = form(&store).unwrap();
    assert_eq!(
        stored,
        LocalModelForm {
            enabled: true,
            idle_minutes: 10,
            max_context: 8192
        }
    );
    let changed = LocalModelForm {
        enabled: false,
        idle_minutes: 3,
        max_context: 4096,
    };
    save_form(&store, &changed).unwrap();
    assert_eq!(form(&store).unwrap(), changed);

    let idle = save_form(
        &store,
        &LocalModelForm {
            idle_minutes: 0,
            ..changed.clone()
        },
    )
    .unwrap_err();
    assert_eq!(idle.kind(), ErrorKind::InvalidArguments);
    assert_eq!(
        idle.to_string(),
        "the idle stop must be between 1 and 1440 minutes"
    );
    let context = save_form(
        &store,
        &LocalModelForm {
            max_context: 512,
            ..changed.clone()
        },
    )
    .unwrap_err();
    assert_eq!(context.kind(), ErrorKind::InvalidArguments);
    // Nothing of a refused form is saved.
    assert_eq!(form(&store).unwrap(), changed);
}

#[test]
fn an_imported_model_is_listed_with_its_facts_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("Tiny-Test.gguf");
    std::fs::write(&file, gguf(3 << 20)).unwrap();
    let data = dir.path().join("data");

    let added = import(&data, &file).unwrap();
    // Chosen explicitly, so the list does not depend on a default model on this machine.
    use_model(&data, &added.name).unwrap();
    let rows = list(&data).unwrap();
    assert_eq!(
        rows,
        vec![ModelRow {
            name: "tiny-test".into(),
            display_name: "Tiny Test".into(),
            size_mib: 3,
            parameters: Some("135M".into()),
            quantization: None,
            training_context: Some(4096),
            in_use: true,
            source: ModelOrigin::Imported,
        }]
    );

    remove(&data, "tiny-test").unwrap();
    let gone = remove(&data, "tiny-test").unwrap_err();
    assert_eq!(gone.kind(), ErrorKind::NotFound);
}

#[test]
fn a_file_that_is_not_gguf_is_refused_with_a_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes.gguf");
    std::fs::write(&file, "notes, not a model\n").unwrap();
    let err = import(&dir.path().join("data"), &file).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);
    assert_eq!(
        err.to_string(),
        format!("{} is not a GGUF model file", file.display())
    );
}

/// Serves `body` once per connection: all of it, or from a `Range` start. A connection
/// whose answer would pass `hold_at` sends up to there and then waits for `release`.
fn serve(body: Vec<u8>, hold_at: usize, release: mpsc::Receiver<()>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/tiny-test.gguf", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut release = Some(release);
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut method, mut start) = (String::new(), 0usize);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if method.is_empty() {
                    method = line.split(' ').next().unwrap_or_default().to_owned();
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("range: bytes=") {
                    start = v.trim().trim_end_matches('-').parse().unwrap();
                }
            }
            let head = if start > 0 {
                format!(
                    "HTTP/1.1 206 Partial Content\r\nContent-Length: {}\r\nContent-Range: bytes {start}-{}/{}\r\nConnection: close\r\n\r\n",
                    body.len() - start,
                    body.len() - 1,
                    body.len()
                )
            } else {
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                )
            };
            let _ = stream.write_all(head.as_bytes());
            if method != "GET" {
                continue;
            }
            if start < hold_at {
                if let Some(release) = release.take() {
                    let _ = stream.write_all(&body[start..hold_at]);
                    let _ = stream.flush();
                    // Held until the test has cancelled the download.
                    let _ = release.recv();
                    continue;
                }
            }
            let _ = stream.write_all(&body[start..]);
        }
    });
    url
}

#[tokio::test]
async fn a_cancelled_download_leaves_no_model_and_resumes_later() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let body = gguf(2 << 20);
    let (release_tx, release_rx) = mpsc::channel();
    let url = serve(body.clone(), 1 << 20, release_rx);

    let (seen_tx, mut seen_rx) = tokio::sync::mpsc::unbounded_channel();
    let pulling = {
        let (data, url) = (data.clone(), url.clone());
        tokio::spawn(async move {
            pull(&data, &url, None, None, move |p| {
                let _ = seen_tx.send(p);
            })
            .await
        })
    };
    let first = seen_rx.recv().await.unwrap();
    assert!(first.done_mib > 0.0 && first.done_mib <= 1.0, "{first:?}");
    assert_eq!(first.total_mib, Some(2.0));
    // A second download of the same URL is refused while this one runs.
    let twice = pull(&data, &url, None, None, |_| {}).await.unwrap_err();
    assert_eq!(twice.kind(), ErrorKind::Duplicate);

    assert!(cancel_pull(&url));
    assert_eq!(pulling.await.unwrap().unwrap(), None);
    release_tx.send(()).unwrap();
    assert!(!cancel_pull(&url), "a finished download is forgotten");
    assert!(ModelStore::new(&data).list().unwrap().is_empty());

    // Again: it resumes from the part and ends as a model.
    let (seen_tx, mut seen_rx) = tokio::sync::mpsc::unbounded_channel();
    let row = pull(&data, &url, None, None, move |p| {
        let _ = seen_tx.send(p);
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(row.name, "tiny-test");
    assert_eq!(row.source, ModelOrigin::Pulled);
    let mut last = None;
    while let Ok(p) = seen_rx.try_recv() {
        last = Some(p);
    }
    assert_eq!(last.map(|p| p.done_mib), Some(2.0));
    let kept = ModelStore::new(&data).get("tiny-test").unwrap();
    assert_eq!(std::fs::read(&kept.file).unwrap(), body);
}
