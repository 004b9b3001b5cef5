//! A full disk through the real binary, with the data directory on a small tmpfs of its
//! own (these tests mount one: they run as root): a streaming run with tool calls pauses
//! when the disk fills under it, keeps every event it committed, and continues once space
//! is freed; `models pull` and `backup now` refuse up front when the room is not there.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;

use std::ffi::CString;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};
use support::{code, text, Harness};

const EXIT_PAUSED: i32 = 9;

/// A tmpfs of `size` mounted on a fresh folder; unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700")])
            .arg("tmpfs")
            .arg(dir.path())
            .output()
            .expect("run mount");
        assert!(
            out.status.success(),
            "these tests need to mount a tmpfs (run them as root): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Self { dir }
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// The binary with its data directory on a tmpfs and its workspace elsewhere.
struct Env {
    h: Harness,
    data: Tmpfs,
}

impl std::ops::Deref for Env {
    type Target = Harness;
    fn deref(&self) -> &Harness {
        &self.h
    }
}

impl Env {
    fn new(size: &str) -> Self {
        let data = Tmpfs::mount(size);
        Self {
            h: Harness::with_data(data.path().to_owned()),
            data,
        }
    }
    fn filler(&self) -> PathBuf {
        self.data.path().join("filler")
    }
    /// Takes every free byte of the data directory's disk.
    fn fill(&self) {
        let mut f = std::fs::File::create(self.filler()).unwrap();
        for chunk in [1usize << 20, 4096, 1] {
            let buf = vec![7u8; chunk];
            loop {
                match f.write_all(&buf) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::StorageFull => break,
                    Err(e) => panic!("filling the disk: {e}"),
                }
            }
        }
        let _ = f.sync_all();
    }
    /// Takes all but `free` bytes of the disk.
    fn leave_free(&self, free: u64) {
        self.fill();
        let len = std::fs::metadata(self.filler()).unwrap().len();
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(self.filler())
            .unwrap();
        f.set_len(len.saturating_sub(free)).unwrap();
    }
}

fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path that lives for the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// `(sequence, type)` of each event.
fn kinds(events: &Value) -> Vec<(i64, String)> {
    events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["sequence"].as_i64().unwrap(),
                e["type"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_run_pauses_on_a_full_disk_keeps_what_it_committed_and_continues_once_freed() {
    // Every byte taken while a command runs: the write of its result fails (SQLITE_FULL),
    // and the run pauses on that failure.
    let e = Env::new("64m");
    let paused = pause_and_continue(&e, Env::fill);
    assert!(paused.iter().any(|(_, k)| k == "tool_call_started"));
}

#[test]
fn a_run_short_of_space_pauses_before_its_next_request_with_the_call_it_ran_kept() {
    // A few MB left, under the floor: the command's result is still written, and the run
    // pauses before it asks the model again.
    let e = Env::new("64m");
    let paused = pause_and_continue(&e, |e| e.leave_free(6 << 20));
    let completed = paused
        .iter()
        .position(|(_, k)| k == "tool_call_completed")
        .expect("the call's result was written");
    assert_eq!(
        paused[completed + 1..]
            .iter()
            .map(|(_, k)| k.as_str())
            .collect::<Vec<_>>(),
        ["run_paused"],
        "nothing new started once the disk was short"
    );
}

/// A streaming run with tool calls whose data disk is filled by `fill` while its first
/// command runs: it pauses for space with every committed event kept, refuses to continue
/// while the disk is full, and completes once the space is freed. The events at the pause.
fn pause_and_continue(e: &Env, fill: impl Fn(&Env)) -> Vec<(i64, String)> {
    // The first call waits on a pipe the test opens once the disk is full: the disk fills
    // while the run is in the middle of its tools.
    mkfifo(&e.ws().join("gate"));
    let provider = e.script("script.json", json!([
        { "tool_calls": [{ "name": "run_command", "arguments": { "command": "read line < gate; echo got $line" } }], "chunk_size": 3 },
        { "tool_calls": [{ "name": "write_file", "arguments": { "path": "after.txt", "content": "written after the disk was freed" } }] },
        { "text": "All done.", "chunk_size": 2 }
    ]));
    let ws = e.ws().display().to_string();
    let mut child = e
        .command(&[
            "run",
            "--workspace",
            &ws,
            "--goal",
            "work while the disk fills",
            "--provider",
            &provider,
            "--json",
            "--allow",
            "shell:execute",
            "--allow",
            "fs:write",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = Vec::new();
    for line in lines.by_ref() {
        let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
        let started = v["type"] == "tool_call_started";
        printed.push(v);
        if started {
            break;
        }
    }
    assert!(
        printed.iter().any(|v| v["type"] == "tool_call_started"),
        "the run ended before its first tool call: {printed:?}"
    );
    fill(e);
    // Opened for reading too, so that opening never waits for the command; held open until
    // the run ends, so that what is written stays there for it to read.
    let mut gate = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(e.ws().join("gate"))
        .unwrap();
    gate.write_all(b"go\n").unwrap();
    printed.extend(lines.map(|l| serde_json::from_str::<Value>(&l.unwrap()).unwrap()));
    let out = child.wait_with_output().unwrap();
    drop(gate);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(EXIT_PAUSED), "{stderr}");
    assert!(stderr.contains("the disk is full:"), "{stderr}");
    assert!(stderr.contains("MB free"), "{stderr}");

    // Read while the disk is still full: the task is paused for space, and every event the
    // run printed (each printed only once committed; the streamed text is never stored) is
    // in the store.
    let committed: Vec<Value> = printed
        .into_iter()
        .filter(|v| !matches!(v["type"].as_str(), Some("assistant_delta" | "stream_reset")))
        .collect();
    let task_id = e.json(&["tasks", "--json"])[0]["id"]
        .as_i64()
        .unwrap()
        .to_string();
    let shown = e.json(&["show", &task_id, "--json"]);
    assert_eq!(shown["task"]["status"], "paused", "{shown}");
    assert_eq!(shown["task"]["pause"]["reason"], "disk_full", "{shown}");
    let stored = kinds(&shown["events"]);
    let seen = kinds(&Value::Array(committed));
    for ev in &seen {
        assert!(stored.contains(ev), "{ev:?} was committed, then lost");
    }
    assert_eq!(stored.last().unwrap().1, "run_paused");
    assert!(stored
        .iter()
        .any(|(_, k)| k == "model_turn_completed" || k == "tool_call_started"));

    // Still full: continuing is refused, and says why.
    let refused = e.output(&["raise", &task_id]);
    assert_ne!(code(&refused), 0);
    assert!(
        text(&refused.stderr).contains("the disk was full, and it still is"),
        "{}",
        text(&refused.stderr)
    );
    assert_eq!(
        e.json(&["show", &task_id, "--json"])["task"]["status"],
        "paused"
    );

    // Space back: the same run continues from its context and completes.
    std::fs::remove_file(e.filler()).unwrap();
    let resumed = e.output(&["raise", &task_id]);
    assert_eq!(code(&resumed), 0, "{}", text(&resumed.stderr));
    let done = e.json(&["show", &task_id, "--json"]);
    assert_eq!(done["task"]["status"], "completed", "{done}");
    assert_eq!(done["task"]["final_answer"], "All done.");
    let after = kinds(&done["events"]);
    assert_eq!(
        &after[..stored.len()],
        &stored[..],
        "earlier events changed"
    );
    assert!(after.iter().any(|(_, k)| k == "run_continued"));
    assert_eq!(
        std::fs::read_to_string(e.ws().join("after.txt")).unwrap(),
        "written after the disk was freed"
    );
    stored
}

/// Serves one model file's headers: its length, and (never reached here) nothing more.
fn announce_model(bytes: u64) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut reader = BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Length: {bytes}\r\nConnection: close\r\n\r\n"
            );
        }
    });
    format!("http://127.0.0.1:{port}/big-model.gguf")
}

#[test]
fn a_model_pull_refuses_up_front_when_the_disk_lacks_room() {
    let e = Env::new("32m");
    let url = announce_model(200 << 20);
    let out = e.output(&["models", "pull", &url]);
    assert_ne!(code(&out), 0);
    let err = text(&out.stderr);
    assert!(err.contains("of disk space"), "{err}");
    assert!(err.contains("is free"), "{err}");
    // Nothing was written towards it.
    let models = e.data.path().join("models");
    let written: u64 = std::fs::read_dir(&models)
        .map(|d| {
            d.flatten()
                .filter_map(|f| f.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0);
    assert_eq!(written, 0, "bytes were written into {}", models.display());
}

#[test]
fn a_backup_refuses_up_front_when_the_disk_lacks_room_and_runs_once_there_is() {
    let e = Env::new("96m");
    let provider = e.script("script.json", json!([{ "text": "Kept." }]));
    let ws = e.ws().display().to_string();
    let out = e.output(&[
        "run",
        "--workspace",
        &ws,
        "--goal",
        "a task worth keeping",
        "--provider",
        &provider,
    ]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    e.leave_free(8 << 20);
    let refused = e.output(&["backup", "now"]);
    assert_ne!(code(&refused), 0);
    let err = text(&refused.stderr);
    assert!(err.contains("not enough free space"), "{err}");
    assert!(err.contains("MB free"), "{err}");
    let backups = e.data.path().join("backups");
    let names: Vec<_> = std::fs::read_dir(&backups)
        .map(|d| d.flatten().map(|f| f.file_name()).collect())
        .unwrap_or_default();
    assert!(names.is_empty(), "a partial copy was left: {names:?}");
    // The store itself is untouched by the refusal.
    let id = e.json(&["tasks", "--json"])[0]["id"].to_string();
    let shown = e.json(&["show", &id, "--json"]);
    assert_eq!(shown["task"]["final_answer"], "Kept.", "{shown}");

    std::fs::remove_file(e.filler()).unwrap();
    let made = e.output(&["backup", "now"]);
    assert_eq!(code(&made), 0, "{}", text(&made.stderr));
    assert_eq!(std::fs::read_dir(&backups).unwrap().count(), 1);
}
