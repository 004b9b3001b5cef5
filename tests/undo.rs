//! Issue 16 end to end: the real `pocketpilot` binary, a real store and workspace in a
//! temp dir, real commands (`mv`, `rm -rf`, `sed -i`, `git`, a build), the scripted model.
//! Every test compares the whole workspace — bytes, modes, symlink targets — before the
//! task and after the undo.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::tree::{self, Snapshot};
use support::{text, Harness};

struct Env(Harness);

impl std::ops::Deref for Env {
    type Target = Harness;
    fn deref(&self) -> &Harness {
        &self.0
    }
}

/// Everything under `root`, `.git` too unless `skip_git`.
fn snapshot(root: &Path, skip_git: bool) -> Snapshot {
    tree::snapshot(root, if skip_git { &[".git"] } else { &[] })
}

impl Env {
    fn new() -> Self {
        Self(Harness::new(&[]))
    }
    /// Runs a task of `calls` (then a final answer) with every risky capability allowed;
    /// returns its id.
    fn task(&self, name: &str, calls: Vec<Value>) -> i64 {
        let mut turns: Vec<Value> = calls
            .into_iter()
            .map(|c| json!({ "tool_calls": [c] }))
            .collect();
        turns.push(json!({ "text": "Done." }));
        let p = self.script(name, Value::Array(turns));
        let ws = self.wss();
        self.ok(&[
            "run",
            "--workspace",
            &ws,
            "--goal",
            name,
            "--provider",
            &p,
            "--allow",
            "fs:write",
            "--allow",
            "fs:delete",
            "--allow",
            "shell:execute",
        ]);
        self.json(&["tasks", "--json"])[0]["id"].as_i64().unwrap()
    }
}

fn sh(cmd: &str) -> Value {
    json!({ "name": "run_command", "arguments": { "command": cmd } })
}

fn write(path: &Path, bytes: &[u8], mode: u32) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A workspace with text, binary and executable files, modes, nested directories and
/// symlinks (one dangling).
fn fill(ws: &Path) {
    write(&ws.join("a.txt"), b"alpha\nbeta\n", 0o640);
    write(
        &ws.join("notes.md"),
        b"# Notes\nfoo here\nand foo there\n",
        0o644,
    );
    write(&ws.join("bin/tool.sh"), b"#!/bin/sh\necho hi\n", 0o755);
    write(
        &ws.join("data.bin"),
        &(0u8..=255).cycle().take(5000).collect::<Vec<_>>(),
        0o600,
    );
    write(&ws.join("tree/one.txt"), b"one\n", 0o644);
    write(&ws.join("tree/sub/two.txt"), b"two\n", 0o444);
    write(&ws.join("tree/sub/deeper/three.txt"), b"three\n", 0o644);
    std::os::unix::fs::symlink("../a.txt", ws.join("tree/link")).unwrap();
    std::os::unix::fs::symlink("nowhere", ws.join("tree/sub/dangling")).unwrap();
    std::fs::set_permissions(ws.join("tree/sub"), std::fs::Permissions::from_mode(0o750)).unwrap();
}

#[test]
fn a_write_an_edit_and_a_tree_delete_are_undone_byte_for_byte() {
    let e = Env::new();
    fill(&e.ws());
    let before = snapshot(&e.ws(), false);
    let task = e.task(
        "files.json",
        vec![
            json!({ "name": "write_file", "arguments": { "path": "a.txt", "content": "rewritten\n" } }),
            json!({ "name": "write_file", "arguments": { "path": "new/deep/file.txt", "content": "new\n" } }),
            json!({ "name": "edit_file", "arguments": { "path": "notes.md", "edits": [{ "old_text": "foo here", "new_text": "bar here" }] } }),
            json!({ "name": "delete_path", "arguments": { "path": "tree", "recursive": true } }),
        ],
    );
    assert!(!e.ws().join("tree").exists(), "the task deleted the tree");
    let list = e.json(&["changes", &task.to_string(), "--json"]);
    assert_eq!(list["undoable"], "yes");
    let files: Vec<&str> = list["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    for p in [
        "a.txt",
        "new/deep/file.txt",
        "notes.md",
        "tree/one.txt",
        "tree/sub/two.txt",
        "tree/link",
        "tree/sub/dangling",
    ] {
        assert!(files.contains(&p), "{p} missing from {files:?}");
    }
    let notes = list["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "notes.md")
        .unwrap();
    assert!(
        notes["diff"]
            .as_str()
            .unwrap()
            .contains("-foo here\n+bar here"),
        "{notes}"
    );

    let dry = e.ok(&["undo", &task.to_string(), "--dry-run"]);
    assert!(dry.contains("would restore a.txt"), "{dry}");
    assert_ne!(
        snapshot(&e.ws(), false),
        before,
        "a dry run touches nothing"
    );

    let out = e.ok(&["undo", &task.to_string()]);
    assert!(out.contains("undo "), "{out}");
    assert_eq!(snapshot(&e.ws(), false), before);
    let again = e.output(&["undo", &task.to_string()]);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again.stderr));
    assert!(text(&again.stderr).contains("already undone"));
}

fn git(ws: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
        .args(args)
        .current_dir(ws)
        .env("HOME", ws.parent().unwrap())
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
}

#[test]
fn commands_mv_rm_sed_git_checkout_and_a_build_are_undone() {
    let e = Env::new();
    let ws = e.ws();
    fill(&ws);
    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-qm", "start"]);
    // Uncommitted work a `git checkout` throws away.
    write(
        &ws.join("a.txt"),
        b"alpha\nbeta\nmy uncommitted line\n",
        0o640,
    );
    // Ignored: dependency and build directories are never scanned nor restored.
    write(&ws.join("target/debug/app"), b"old build", 0o755);
    let before = snapshot(&ws, true);
    let git_before = snapshot(&ws.join(".git"), false);
    let task = e.task(
        "commands.json",
        vec![
            sh("mv notes.md moved.md"),
            sh("rm -rf tree"),
            sh("sed -i 's/^#!.*$/#!\\/bin\\/bash/' bin/tool.sh && chmod 700 bin/tool.sh"),
            sh("git checkout -- a.txt"),
            sh("mkdir -p gen/out && for i in $(seq 1 400); do echo \"obj $i\" > gen/out/o$i.o; done && ln -s out/o1.o gen/first && echo built > target/debug/app"),
        ],
    );
    assert_eq!(std::fs::read(ws.join("a.txt")).unwrap(), b"alpha\nbeta\n");
    assert!(ws.join("gen/out/o400.o").exists() && !ws.join("tree").exists());
    let list = e.json(&["changes", &task.to_string(), "--json"]);
    let files = list["files"].as_array().unwrap();
    let renamed = files.iter().find(|f| f["kind"] == "renamed").unwrap();
    assert_eq!(
        (renamed["from"].as_str(), renamed["path"].as_str()),
        (Some("notes.md"), Some("moved.md"))
    );
    assert!(files
        .iter()
        .all(|f| !f["path"].as_str().unwrap().starts_with("target/")));

    let git_after_task = snapshot(&ws.join(".git"), false);
    e.ok(&["undo", &task.to_string()]);
    let mut after = snapshot(&ws, true);
    // The build dir is ignored: what the command wrote there stays (and is not ours to undo).
    assert_eq!(after.remove("target/debug/app").unwrap().2, b"built\n");
    let mut expected = before.clone();
    expected.remove("target/debug/app");
    assert_eq!(after, expected);
    assert_ne!(
        git_before, git_after_task,
        "the checkout itself touched .git"
    );
    assert_eq!(
        snapshot(&ws.join(".git"), false),
        git_after_task,
        "undo never touches .git"
    );
}

#[test]
fn a_file_the_person_edited_since_is_refused_with_its_three_versions_or_kept() {
    let e = Env::new();
    fill(&e.ws());
    let task = e.task(
        "conflict.json",
        vec![
            json!({ "name": "write_file", "arguments": { "path": "a.txt", "content": "the task's\n" } }),
            json!({ "name": "write_file", "arguments": { "path": "b.txt", "content": "made by the task\n" } }),
        ],
    );
    std::fs::write(e.ws().join("a.txt"), "the person's edit\n").unwrap();
    let out = e.output(&["undo", &task.to_string()]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains("changed since: a.txt"), "{said}");
    assert!(
        said.contains("before the task:")
            && said.contains("the task left:")
            && said.contains("now:"),
        "{said}"
    );
    assert!(said.contains("-the task's\n+the person's edit"), "{said}");
    assert_eq!(
        std::fs::read_to_string(e.ws().join("a.txt")).unwrap(),
        "the person's edit\n"
    );
    assert!(e.ws().join("b.txt").exists(), "a refusal restores nothing");

    let report = e.json(&["undo", &task.to_string(), "--keep-theirs", "--json"]);
    assert_eq!(report["kept"], json!(["a.txt"]));
    assert_eq!(
        std::fs::read_to_string(e.ws().join("a.txt")).unwrap(),
        "the person's edit\n"
    );
    assert!(!e.ws().join("b.txt").exists());
}

#[test]
fn undo_then_redo_then_undo_again_and_the_model_is_told() {
    let e = Env::new();
    fill(&e.ws());
    let before = snapshot(&e.ws(), false);
    let task = e.task(
        "redo.json",
        vec![
            sh("rm -rf tree && echo changed > a.txt && chmod 755 a.txt"),
            json!({ "name": "write_file", "arguments": { "path": "c.txt", "content": "c\n" } }),
        ],
    );
    let done = snapshot(&e.ws(), false);
    let report = e.json(&["undo", &task.to_string(), "--json"]);
    let undo_id = report["id"].as_i64().unwrap();
    assert_eq!(snapshot(&e.ws(), false), before);
    let list = e.json(&["changes", &task.to_string(), "--json"]);
    assert_eq!(list["undoable"], "undone");
    assert_eq!(list["undone_by"], undo_id);

    let session = e.json(&["tasks", "--json"])[0]["session_id"]
        .as_i64()
        .unwrap();
    let shown = e.json(&["session", "show", &session.to_string(), "--json"]);
    let told = shown.to_string();
    assert!(
        told.contains(&format!("The person reverted the changes of task {task}")),
        "{told}"
    );
    assert!(told.contains("c.txt"), "{told}");

    e.ok(&["redo", &undo_id.to_string()]);
    assert_eq!(snapshot(&e.ws(), false), done);
    assert_eq!(
        e.output(&["redo", &undo_id.to_string()]).status.code(),
        Some(2)
    );
    e.ok(&["undo", &task.to_string()]);
    assert_eq!(snapshot(&e.ws(), false), before);
}

#[test]
fn one_call_and_a_session_after_a_task_can_be_undone() {
    let e = Env::new();
    let t1 = e.task(
        "t1.json",
        vec![
            json!({ "name": "write_file", "arguments": { "path": "one.txt", "content": "1\n" } }),
            json!({ "name": "write_file", "arguments": { "path": "two.txt", "content": "2\n" } }),
        ],
    );
    let session = e.json(&["tasks", "--json"])[0]["session_id"]
        .as_i64()
        .unwrap()
        .to_string();
    // The scripted model counts the session's turns: the second script starts where the
    // first ended (two calls and an answer).
    let p = e.script("t2.json", json!([
        { "text": "-" }, { "text": "-" }, { "text": "-" },
        { "tool_calls": [{ "name": "write_file", "arguments": { "path": "three.txt", "content": "3\n" } }] },
        { "text": "ok" }
    ]));
    let ws = e.wss();
    e.ok(&[
        "run",
        "--workspace",
        &ws,
        "--goal",
        "more",
        "--provider",
        &p,
        "--allow",
        "fs:write",
        "--session",
        &session,
    ]);
    assert!(e.ws().join("three.txt").exists());
    let list = e.json(&["changes", &t1.to_string(), "--json"]);
    let call = list["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "two.txt")
        .unwrap()["call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    e.ok(&["undo", &t1.to_string(), "--call", &call]);
    assert!(e.ws().join("one.txt").exists() && !e.ws().join("two.txt").exists());
    let s = e.json(&["changes", "--session", &session, "--json"]);
    assert!(s["files"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["path"] == "one.txt"));
    e.ok(&[
        "undo",
        "--session",
        &session,
        "--after",
        &(t1 - 1).to_string(),
    ]);
    assert!(!e.ws().join("one.txt").exists() && !e.ws().join("three.txt").exists());
}

#[test]
fn a_ten_thousand_file_workspace_lists_and_undoes_only_what_changed() {
    let e = Env::new();
    let ws = e.ws();
    for i in 0..10_000 {
        write(
            &ws.join(format!("d{:02}/f{i}.txt", i % 100)),
            format!("file {i}\n").as_bytes(),
            0o644,
        );
    }
    let before = snapshot(&ws, false);
    let task = e.task(
        "big.json",
        vec![sh("echo x >> d01/f1.txt && rm d02/f2.txt && echo n > d03/new.txt && mv d04/f4.txt d04/g4.txt")],
    );
    let list = e.json(&["changes", &task.to_string(), "--json"]);
    let mut paths: Vec<&str> = list["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    paths.sort();
    assert_eq!(
        paths,
        ["d01/f1.txt", "d02/f2.txt", "d03/new.txt", "d04/g4.txt"]
    );
    e.ok(&["undo", &task.to_string()]);
    assert_eq!(snapshot(&ws, false), before);
}

fn kill9(pid: u32) {
    // SAFETY: SIGKILL to our own child.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGKILL);
    }
}

#[test]
fn killed_in_the_middle_of_a_command_its_changes_are_undone_after_the_restart() {
    let e = Env::new();
    fill(&e.ws());
    let before = snapshot(&e.ws(), false);
    let p = e.script(
        "slow.json",
        json!([
            { "tool_calls": [{ "name": "run_command", "arguments": { "command": "rm -rf tree && echo half > a.txt && mkdir made && echo m > made/m.txt && touch made/started && sleep 60" } }] },
            { "text": "Done." }
        ]),
    );
    let ws = e.wss();
    let mut child = e
        .command(&[
            "run",
            "--workspace",
            &ws,
            "--goal",
            "slow",
            "--provider",
            &p,
            "--allow",
            "shell:execute",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !e.ws().join("made/started").exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the command never started"
        );
        // sleep: the poll interval of the bounded wait for the command to start.
        std::thread::sleep(Duration::from_millis(20));
    }
    kill9(child.id());
    child.wait().unwrap();
    // The command's process tree dies with its supervisor's lifeline.
    // sleep: the command's tree dies when its supervisor's lifeline breaks; that has no event a test can wait on.
    std::thread::sleep(Duration::from_millis(500));
    let task = e.json(&["tasks", "--json"])[0]["id"].as_i64().unwrap();
    let list = e.json(&["changes", &task.to_string(), "--json"]);
    let paths: Vec<&str> = list["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert!(
        paths.contains(&"tree/sub/two.txt") && paths.contains(&"a.txt"),
        "{paths:?}"
    );
    e.ok(&["undo", &task.to_string()]);
    assert_eq!(snapshot(&e.ws(), false), before);
}

#[test]
fn past_the_size_cap_a_task_is_pruned_and_says_so_instead_of_undoing() {
    let e = Env::new();
    let old = e.task(
        "old.json",
        vec![sh("head -c 3145728 /dev/urandom > big.txt")],
    );
    let new = e.task(
        "new.json",
        vec![
            json!({ "name": "write_file", "arguments": { "path": "small.txt", "content": "s\n" } }),
        ],
    );
    let said = e.ok(&["changes", "--prune", "--max-mib", "2"]);
    assert!(said.contains("pruned 1 change set"), "{said}");
    let list = e.json(&["changes", &old.to_string(), "--json"]);
    assert_eq!(list["undoable"], "pruned");
    assert!(e
        .ok(&["changes", &old.to_string()])
        .contains("snapshot pruned"));
    let out = e.output(&["undo", &old.to_string()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("pruned"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        e.ws().join("big.txt").exists(),
        "a pruned task's files stay as they are"
    );
    // The newer task is within the cap: still undoable.
    e.ok(&["undo", &new.to_string()]);
    assert!(!e.ws().join("small.txt").exists());
}

#[test]
fn a_folder_a_command_swapped_for_a_symlink_is_undone_without_writing_through_it() {
    let e = Env::new();
    fill(&e.ws());
    let outside = e.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("victim.txt"), "keep\n").unwrap();
    let before = snapshot(&e.ws(), false);
    // A symlink may point anywhere (only what it reaches is checked by the sandbox).
    let task = e.task(
        "swap.json",
        vec![sh(&format!(
            "rm -rf tree && ln -s '{}' tree && echo SWAPPED",
            outside.display()
        ))],
    );
    assert!(std::fs::symlink_metadata(e.ws().join("tree"))
        .unwrap()
        .is_symlink());
    let out = e.ok(&["undo", &task.to_string()]);
    assert!(out.contains("undo "), "{out}");
    assert_eq!(snapshot(&e.ws(), false), before);
    let outside_now: Vec<_> = std::fs::read_dir(&outside)
        .unwrap()
        .map(|d| d.unwrap().file_name())
        .collect();
    assert_eq!(
        outside_now,
        ["victim.txt"],
        "nothing written through the link"
    );
}

#[test]
fn one_file_of_a_task_is_undone_and_redone_alone_and_the_task_undo_does_the_rest() {
    let e = Env::new();
    fill(&e.ws());
    let before = snapshot(&e.ws(), false);
    let task = e.task(
        "files.json",
        vec![
            // The same file changed by two calls: the file undo takes back both.
            json!({ "name": "write_file", "arguments": { "path": "a.txt", "content": "first\n" } }),
            json!({ "name": "edit_file", "arguments": { "path": "notes.md", "edits": [{ "old_text": "foo here", "new_text": "bar here" }] } }),
            sh("echo second >> a.txt && chmod 755 a.txt && rm data.bin"),
            json!({ "name": "write_file", "arguments": { "path": "new/c.txt", "content": "c\n" } }),
        ],
    );
    let done = snapshot(&e.ws(), false);
    let t = task.to_string();

    let report = e.json(&["undo", &t, "--path", "a.txt", "--json"]);
    let file_undo = report["id"].as_i64().unwrap();
    assert_eq!(report["restored"], json!(["a.txt"]), "{report}");
    // a.txt is back byte for byte (and its mode); every other file is as the task left it.
    let now = snapshot(&e.ws(), false);
    assert_eq!(now["a.txt"], before["a.txt"]);
    let mut expected = done.clone();
    expected.insert("a.txt".into(), before["a.txt"].clone());
    assert_eq!(now, expected);

    // The list marks that file undone, and only it; the task can still be undone.
    let list = e.json(&["changes", &t, "--json"]);
    assert_eq!(list["undoable"], "yes");
    for f in list["files"].as_array().unwrap() {
        let want = if f["path"] == "a.txt" {
            json!(file_undo)
        } else {
            Value::Null
        };
        assert_eq!(f["undone_by"], want, "{f}");
    }
    let again = e.output(&["undo", &t, "--path", "a.txt"]);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again.stderr));
    assert!(text(&again.stderr).contains("already undone"));

    // Redo brings just that file back.
    e.ok(&["redo", &file_undo.to_string()]);
    assert_eq!(snapshot(&e.ws(), false), done);

    // A file the person changed since is refused with its versions, then kept if asked.
    std::fs::write(e.ws().join("notes.md"), "the person's notes\n").unwrap();
    let out = e.output(&["undo", &t, "--path", "notes.md"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains("changed since: notes.md"), "{said}");
    assert!(said.contains("+the person's notes"), "{said}");
    assert_eq!(
        std::fs::read_to_string(e.ws().join("notes.md")).unwrap(),
        "the person's notes\n"
    );
    std::fs::write(e.ws().join("notes.md"), &done["notes.md"].2).unwrap();

    // Undo a.txt again, then the task: the task's undo restores only what is left, and
    // the whole workspace is as before the task.
    let report = e.json(&["undo", &t, "--path", "a.txt", "--json"]);
    let file_undo = report["id"].as_i64().unwrap();
    let report = e.json(&["undo", &t, "--json"]);
    let task_undo = report["id"].as_i64().unwrap();
    let restored = report["restored"].as_array().unwrap();
    assert!(!restored.contains(&json!("a.txt")), "{report}");
    assert!(restored.contains(&json!("notes.md")), "{report}");
    assert!(restored.contains(&json!("data.bin")), "{report}");
    assert_eq!(snapshot(&e.ws(), false), before);
    let list = e.json(&["changes", &t, "--json"]);
    assert_eq!(list["undoable"], "undone");
    for f in list["files"].as_array().unwrap() {
        let by = if f["path"] == "a.txt" {
            file_undo
        } else {
            task_undo
        };
        assert_eq!(f["undone_by"], by, "{f}");
    }

    // Redoing the task's undo leaves a.txt undone; redoing the file's brings it back.
    e.ok(&["redo", &task_undo.to_string()]);
    assert_eq!(snapshot(&e.ws(), false), expected);
    e.ok(&["redo", &file_undo.to_string()]);
    assert_eq!(snapshot(&e.ws(), false), done);

    // The model is told which file was reverted.
    let session = e.json(&["tasks", "--json"])[0]["session_id"]
        .as_i64()
        .unwrap();
    let told = e
        .json(&["session", "show", &session.to_string(), "--json"])
        .to_string();
    assert!(
        told.contains(&format!(
            "The person reverted the changes of a.txt of task {task}"
        )),
        "{told}"
    );
    let missing = e.output(&["undo", &t, "--path", "nope.txt"]);
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing.stderr));
}

#[test]
fn a_task_whose_files_were_all_undone_one_by_one_reads_as_undone() {
    let e = Env::new();
    fill(&e.ws());
    let before = snapshot(&e.ws(), false);
    let task = e.task(
        "two.json",
        vec![
            json!({ "name": "write_file", "arguments": { "path": "a.txt", "content": "A\n" } }),
            json!({ "name": "write_file", "arguments": { "path": "b.txt", "content": "B\n" } }),
        ],
    );
    let t = task.to_string();
    e.ok(&["undo", &t, "--path", "a.txt"]);
    let last = e.json(&["undo", &t, "--path", "b.txt", "--json"])["id"]
        .as_i64()
        .unwrap();
    assert_eq!(snapshot(&e.ws(), false), before);
    let list = e.json(&["changes", &t, "--json"]);
    assert_eq!(list["undoable"], "undone", "{list}");
    assert_eq!(list["undone_by"], last);
    let again = e.output(&["undo", &t]);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again.stderr));
    assert!(text(&again.stderr).contains("already undone"));
    e.ok(&["redo", &last.to_string()]);
    assert_eq!(
        std::fs::read_to_string(e.ws().join("b.txt")).unwrap(),
        "B\n"
    );
    assert_eq!(
        std::fs::read_to_string(e.ws().join("a.txt")).unwrap(),
        "alpha\nbeta\n"
    );
    assert_eq!(e.json(&["changes", &t, "--json"])["undoable"], "yes");
}
