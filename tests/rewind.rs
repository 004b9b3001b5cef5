//! Rewind and fork end to end: the real `pocketpilot` binary, a real store and workspace
//! in a temp dir, real commands (`mv`, `sed -i`, a C build), the scripted model (which
//! records what it was sent). Files are compared whole — bytes, modes, symlink targets.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
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

/// The workspace's content: the runtime's own folder and git's are not.
fn snapshot(root: &Path) -> Snapshot {
    tree::snapshot(root, &[".git", ".pocketpilot"])
}

impl Env {
    fn new() -> Self {
        Self(Harness::new(&[]))
    }
    /// Runs one task in `session` (a new one in `workspace` when `None`) whose turns are
    /// `turns`; the scripted model picks its turn by the assistant messages already in
    /// the conversation, so `skip` placeholders stand for the turns before. Returns the
    /// session.
    fn task(
        &self,
        session: Option<i64>,
        workspace: &Path,
        goal: &str,
        skip: usize,
        calls: Vec<Value>,
        log: Option<&Path>,
    ) -> i64 {
        let mut turns: Vec<Value> = (0..skip).map(|_| json!({ "text": "-" })).collect();
        turns.extend(calls.into_iter().map(|c| json!({ "tool_calls": [c] })));
        turns.push(json!({ "text": "Done." }));
        let mut script = json!({ "turns": turns });
        if let Some(l) = log {
            script["requests_log"] = json!(l.display().to_string());
        }
        let p = self.script(&format!("{goal}.json"), script);
        let ws = workspace.display().to_string();
        let sid = session.map(|s| s.to_string());
        let mut args = vec!["run", "--goal", goal, "--provider", &p];
        match &sid {
            Some(s) => args.extend(["--session", s.as_str()]),
            None => args.extend(["--workspace", ws.as_str()]),
        }
        for cap in ["fs:write", "fs:delete", "shell:execute"] {
            args.extend(["--allow", cap]);
        }
        self.ok(&args);
        self.json(&["tasks", "--json"])[0]["session_id"]
            .as_i64()
            .unwrap()
    }
    fn entries(&self, session: i64) -> Vec<Value> {
        self.json(&["session", "show", &session.to_string(), "--json"])["entries"]
            .as_array()
            .unwrap()
            .clone()
    }
    /// The entry of the person's message `goal`.
    fn message(&self, session: i64, goal: &str) -> i64 {
        self.entries(session)
            .iter()
            .find(|e| e["kind"] == "user" && e["content"]["text"] == goal)
            .unwrap()["id"]
            .as_i64()
            .unwrap()
    }
}

fn sh(cmd: &str) -> Value {
    json!({ "name": "run_command", "arguments": { "command": cmd } })
}

fn write_call(path: &str, content: &str) -> Value {
    json!({ "name": "write_file", "arguments": { "path": path, "content": content } })
}

fn write(path: &Path, bytes: &[u8], mode: u32) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A workspace with text, binary and executable files, modes, a nested tree and symlinks.
fn fill(ws: &Path) {
    write(&ws.join("a.txt"), b"alpha\nbeta\n", 0o640);
    write(
        &ws.join("notes.md"),
        b"# Notes\nfoo here\nfoo there\n",
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
    write(
        &ws.join("main.c"),
        b"#include <stdio.h>\nint main(void) { puts(\"v1\"); return 0; }\n",
        0o644,
    );
    std::os::unix::fs::symlink("../a.txt", ws.join("tree/link")).unwrap();
    std::os::unix::fs::symlink("nowhere", ws.join("tree/dangling")).unwrap();
}

/// Three tasks; the session is rewound to the second one's message.
#[test]
fn a_rewind_over_three_tasks_restores_every_file_and_the_model_sees_only_what_was_kept() {
    let e = Env::new();
    let ws = e.ws();
    fill(&ws);
    let s = e.task(
        None,
        &ws,
        "first",
        0,
        vec![write_call("kept.txt", "made before the point\n")],
        None,
    );
    let before = snapshot(&ws);
    // Task 2: a write, an edit, a delete, `mv`, `sed -i`, a mode and a symlink.
    e.task(
        Some(s),
        &ws,
        "second",
        2,
        vec![
            write_call("new/deep/file.txt", "new\n"),
            json!({ "name": "edit_file", "arguments": { "path": "a.txt", "edits": [{ "old_text": "beta", "new_text": "BETA" }] } }),
            json!({ "name": "delete_path", "arguments": { "path": "tree/sub", "recursive": true } }),
            sh("mv notes.md moved.md && sed -i 's/foo/bar/g' moved.md && chmod 700 bin/tool.sh && ln -sfn moved.md tree/link && rm tree/dangling"),
        ],
        None,
    );
    // Task 3: a build (a C program and a script producing an output).
    e.task(
        Some(s),
        &ws,
        "third",
        7,
        vec![
            sh("sed -i 's/v1/v2/' main.c && mkdir -p out && TMPDIR=$PWD cc -o out/app main.c && ./out/app > out/said.txt && printf '#!/bin/sh\\necho built\\n' > build.sh && chmod +x build.sh && ./build.sh >> out/said.txt && rm data.bin"),
        ],
        None,
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("out/said.txt")).unwrap(),
        "v2\nbuilt\n"
    );
    assert_ne!(snapshot(&ws), before);
    let second = e.message(s, "second");

    // A dry run touches nothing and says what it would do.
    let dry = e.json(&[
        "rewind",
        &s.to_string(),
        "--to",
        &second.to_string(),
        "--dry-run",
        "--json",
    ]);
    assert_eq!(dry["files"]["dry_run"], true);
    assert!(dry["files"]["id"].is_null());
    assert!(ws.join("out/app").exists());

    let report = e.json(&[
        "rewind",
        &s.to_string(),
        "--to",
        &second.to_string(),
        "--json",
    ]);
    let rewind_id = report["files"]["id"].as_i64().unwrap();
    assert_eq!(
        snapshot(&ws),
        before,
        "files byte for byte as before the message"
    );

    // Nothing is lost: every entry is still there, the later ones marked.
    let entries = e.entries(s);
    let set_aside: Vec<i64> = report["set_aside"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert!(set_aside.contains(&second));
    for en in &entries {
        let id = en["id"].as_i64().unwrap();
        assert_eq!(
            en["rewound_by"].as_i64(),
            set_aside.contains(&id).then_some(rewind_id),
            "{en}"
        );
    }
    assert!(entries.iter().any(|en| en["content"]["text"] == "third"));
    // The export keeps them too, marked.
    let export = e.json(&["export", &s.to_string(), "--format", "json"]);
    let third = export["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["text"] == "third")
        .unwrap();
    assert_eq!(third["rewound_by"].as_i64(), Some(rewind_id));
    let md = e.ok(&["export", &s.to_string()]);
    assert!(
        md.contains(&format!("set aside by rewind {rewind_id}")),
        "{md}"
    );

    // The person sends the message again, edited: the model's request holds the kept
    // entries and the note, nothing set aside.
    let log = e.path("requests.jsonl");
    e.task(Some(s), &ws, "second, edited", 2, vec![], Some(&log));
    let sent = std::fs::read_to_string(&log).unwrap();
    let request: Value = serde_json::from_str(sent.lines().next().unwrap()).unwrap();
    let messages = request["messages"].as_array().unwrap();
    let said: Vec<String> = messages
        .iter()
        .map(|m| m["content"].as_str().unwrap_or("").to_owned())
        .collect();
    assert!(said.iter().any(|t| t == "first"), "{said:?}");
    assert!(said.iter().any(|t| t == "second, edited"), "{said:?}");
    for gone in ["second", "third"] {
        assert!(!said.iter().any(|t| t == gone), "{gone} was sent: {said:?}");
    }
    assert!(!sent.contains("cc -o out/app"), "a rewound call was sent");
    let note = messages
        .iter()
        .find(|m| m["role"] == "system" && m["content"].as_str().unwrap().contains("rewound"))
        .expect("the rewind's note");
    let note = note["content"].as_str().unwrap();
    for f in ["a.txt", "moved.md", "notes.md", "out/app", "data.bin"] {
        assert!(note.contains(f), "{f} not in the note: {note}");
    }
}

#[test]
fn redo_takes_a_rewind_back_conversation_and_files() {
    let e = Env::new();
    let ws = e.ws();
    fill(&ws);
    let s = e.task(
        None,
        &ws,
        "first",
        0,
        vec![write_call("one.txt", "1\n")],
        None,
    );
    e.task(
        Some(s),
        &ws,
        "second",
        2,
        vec![sh("rm -rf tree && echo changed > a.txt && chmod 755 a.txt")],
        None,
    );
    let done = snapshot(&ws);
    let second = e.message(s, "second");
    let report = e.json(&[
        "rewind",
        &s.to_string(),
        "--to",
        &second.to_string(),
        "--json",
    ]);
    let id = report["files"]["id"].as_i64().unwrap().to_string();
    assert!(ws.join("tree/link").exists());
    // A second rewind to the same message is refused: it is already set aside.
    let again = e.output(&["rewind", &s.to_string(), "--to", &second.to_string()]);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again.stderr));

    e.ok(&["redo", &id]);
    assert_eq!(snapshot(&ws), done);
    let entries = e.entries(s);
    let shown: Vec<&Value> = entries
        .iter()
        .filter(|en| en["rewound_by"].is_null())
        .collect();
    assert!(shown.iter().any(|en| en["content"]["text"] == "second"));
    assert!(
        !shown.iter().any(|en| en["content"]["text"]
            .as_str()
            .unwrap_or("")
            .contains("rewound the conversation")),
        "the rewind's note no longer speaks once it is taken back"
    );
}

#[test]
fn a_file_the_person_changed_since_refuses_the_rewind_with_three_versions_or_is_kept() {
    let e = Env::new();
    let ws = e.ws();
    fill(&ws);
    let s = e.task(
        None,
        &ws,
        "first",
        0,
        vec![write_call("one.txt", "1\n")],
        None,
    );
    e.task(
        Some(s),
        &ws,
        "second",
        2,
        vec![
            write_call("a.txt", "the agent's\n"),
            write_call("b.txt", "made by the agent\n"),
        ],
        None,
    );
    std::fs::write(ws.join("a.txt"), "the person's edit\n").unwrap();
    let second = e.message(s, "second").to_string();
    let out = e.output(&["rewind", &s.to_string(), "--to", &second]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains("changed since: a.txt"), "{said}");
    assert!(
        said.contains("before the task:")
            && said.contains("the task left:")
            && said.contains("now:"),
        "{said}"
    );
    assert!(said.contains("-the agent's\n+the person's edit"), "{said}");
    assert!(ws.join("b.txt").exists(), "a refusal restores nothing");
    assert!(
        e.entries(s).iter().all(|en| en["rewound_by"].is_null()),
        "a refusal sets nothing aside"
    );

    let r = e.json(&[
        "rewind",
        &s.to_string(),
        "--to",
        &second,
        "--keep-theirs",
        "--json",
    ]);
    assert_eq!(r["files"]["kept"], json!(["a.txt"]));
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "the person's edit\n"
    );
    assert!(!ws.join("b.txt").exists());
    assert!(ws.join("one.txt").exists());
}

#[test]
fn a_rewind_is_refused_for_what_is_not_a_message_of_the_person() {
    let e = Env::new();
    let s = e.task(
        None,
        &e.ws(),
        "first",
        0,
        vec![write_call("one.txt", "1\n")],
        None,
    );
    let answer = e
        .entries(s)
        .iter()
        .find(|en| en["kind"] == "assistant")
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    let out = e.output(&["rewind", &s.to_string(), "--to", &answer.to_string()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("not one of the person's messages"));
    assert!(e.ws().join("one.txt").exists());
}

/// Kill -9 while the rewind writes its files back: the next start completes it.
#[test]
fn killed_in_the_middle_of_a_rewind_it_is_completed_at_the_next_start() {
    let e = Env::new();
    let ws = e.ws();
    // Enough files that writing them back (each synced) takes a while.
    const N: usize = 3000;
    for i in 0..N {
        write(
            &ws.join(format!("many/f{i:04}.txt")),
            format!("original {i}\n").repeat(200).as_bytes(),
            0o644,
        );
    }
    let s = e.task(
        None,
        &ws,
        "first",
        0,
        vec![write_call("one.txt", "1\n")],
        None,
    );
    let before = snapshot(&ws);
    e.task(
        Some(s),
        &ws,
        "second",
        2,
        vec![sh(
            "for f in many/*.txt; do echo changed > $f; done && rm one.txt",
        )],
        None,
    );
    let second = e.message(s, "second").to_string();
    let mut child = e
        .command(&["rewind", &s.to_string(), "--to", &second])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Restores go in path order: the first file back means the journal entry is committed
    // and the rest is under way.
    let first = ws.join("many/f0000.txt");
    let t0 = Instant::now();
    while std::fs::read(&first).unwrap_or_default() == b"changed\n" {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "the rewind never started writing"
        );
        // sleep: the poll interval of the bounded wait for the first restored file.
        std::thread::sleep(Duration::from_millis(2));
    }
    // SAFETY: SIGKILL to our own child.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGKILL);
    }
    child.wait().unwrap();
    let last = std::fs::read(ws.join(format!("many/f{:04}.txt", N - 1))).unwrap();
    assert_eq!(
        last, b"changed\n",
        "the kill landed after the rewind had finished its files: nothing was cut off"
    );
    // The next start (any command) completes it: the files, the conversation, the note.
    let entries = e.entries(s);
    assert_eq!(snapshot(&ws), before);
    let notes = entries
        .iter()
        .filter(|en| {
            en["content"]["text"]
                .as_str()
                .unwrap_or("")
                .contains("rewound the conversation")
        })
        .count();
    assert_eq!(notes, 1);
    let second: i64 = second.parse().unwrap();
    assert!(entries
        .iter()
        .filter(|en| en["id"].as_i64().unwrap() >= second)
        .filter(|en| !en["content"]["text"]
            .as_str()
            .unwrap_or("")
            .contains("rewound the conversation"))
        .all(|en| en["rewound_by"].is_i64()));
    // And it is a finished undo: redo brings the changes back.
    let id = entries
        .iter()
        .find_map(|en| en["rewound_by"].as_i64())
        .unwrap();
    e.ok(&["redo", &id.to_string()]);
    assert_eq!(std::fs::read(&first).unwrap(), b"changed\n");
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn a_fork_into_a_worktree_works_apart_and_both_sessions_continue() {
    let e = Env::new();
    let ws = e.ws();
    fill(&ws);
    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-qm", "start"]);
    // Uncommitted work goes with the fork.
    write(&ws.join("a.txt"), b"alpha\nbeta\nuncommitted\n", 0o640);
    let s = e.task(
        None,
        &ws,
        "first",
        0,
        vec![write_call("one.txt", "1\n")],
        None,
    );
    e.task(
        Some(s),
        &ws,
        "second",
        2,
        vec![write_call("two.txt", "2\n")],
        None,
    );
    let second = e.message(s, "second");
    let fork = e.json(&[
        "session",
        "fork",
        &s.to_string(),
        "--at",
        &second.to_string(),
        "--worktree",
        "--json",
    ]);
    let f = fork["session_id"].as_i64().unwrap();
    let fws = PathBuf::from(fork["workspace"].as_str().unwrap());
    let branch = fork["branch"].as_str().unwrap();
    assert_ne!(fws, ws);
    assert!(git(&ws, &["branch", "--list", branch]).contains(branch));
    assert_eq!(
        std::fs::read(fws.join("a.txt")).unwrap(),
        b"alpha\nbeta\nuncommitted\n"
    );
    // The fork's transcript: the first task, not the message it was forked at.
    let texts: Vec<String> = e
        .entries(f)
        .iter()
        .map(|en| en["content"]["text"].as_str().unwrap_or("").to_owned())
        .collect();
    assert!(texts.iter().any(|t| t == "first") && !texts.iter().any(|t| t == "second"));

    let original = snapshot(&ws);
    e.task(
        Some(f),
        &fws,
        "other way",
        2,
        vec![
            sh("echo fork > fork.txt && sed -i 's/alpha/ALPHA/' a.txt"),
            write_call("written.txt", "w\n"),
        ],
        None,
    );
    assert_eq!(
        snapshot(&ws),
        original,
        "the original's files are untouched"
    );
    assert!(fws.join("fork.txt").exists() && fws.join("written.txt").exists());
    assert!(std::fs::read_to_string(fws.join("a.txt"))
        .unwrap()
        .starts_with("ALPHA"));
    // The original continues in its own folder.
    e.task(
        Some(s),
        &ws,
        "go on",
        4,
        vec![write_call("three.txt", "3\n")],
        None,
    );
    assert!(ws.join("three.txt").exists() && !fws.join("three.txt").exists());
}

#[test]
fn a_fork_outside_git_is_a_copy_and_same_shares_the_folder() {
    let e = Env::new();
    let ws = e.ws();
    fill(&ws);
    let s = e.task(
        None,
        &ws,
        "first",
        0,
        vec![write_call("one.txt", "1\n")],
        None,
    );
    let first = e.message(s, "first").to_string();
    let refused = e.output(&[
        "session",
        "fork",
        &s.to_string(),
        "--at",
        &first,
        "--worktree",
    ]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    let fork = e.json(&["session", "fork", &s.to_string(), "--at", &first, "--json"]);
    assert_eq!(fork["place"], "copy");
    let fws = PathBuf::from(fork["workspace"].as_str().unwrap());
    assert_eq!(
        snapshot(&fws),
        snapshot(&ws),
        "the copy is whole, modes and symlinks included"
    );
    let f = fork["session_id"].as_i64().unwrap();
    e.task(
        Some(f),
        &fws,
        "in the copy",
        0,
        vec![write_call("c.txt", "c\n")],
        None,
    );
    assert!(fws.join("c.txt").exists() && !ws.join("c.txt").exists());

    let same = e.json(&[
        "session",
        "fork",
        &s.to_string(),
        "--at",
        &first,
        "--same",
        "--json",
    ]);
    assert_eq!(
        same["workspace"].as_str().unwrap(),
        ws.display().to_string()
    );
}

/// `path` with its symlinks resolved (as git names a worktree).
fn real(path: &Path) -> PathBuf {
    path.canonicalize().unwrap()
}

/// The new session's id in what `session fork` printed: `session N: a fork of …`.
fn new_session(said: &str) -> i64 {
    said.strip_prefix("session ")
        .and_then(|r| r.split(':').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no session id in {said:?}"))
}

/// The workspace the store gives session `s`.
fn workspace_of(e: &Env, s: i64) -> PathBuf {
    let show = e.json(&["session", "show", &s.to_string(), "--json"]);
    PathBuf::from(show["session"]["workspace"].as_str().unwrap())
}

/// Without `--worktree`, `--copy` or `--same` the runtime chooses, as it does for the
/// window (which never names a place): a workspace inside a git work tree gets a worktree
/// on a new branch, registered with the original repository; a plain folder a copy.
#[test]
fn a_fork_without_a_flag_is_a_worktree_in_a_git_work_tree_and_a_copy_elsewhere() {
    let e = Env::new();
    let ws = e.ws();
    fill(&ws);
    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-qm", "start"]);
    let s = e.task(
        None,
        &ws,
        "first",
        0,
        vec![write_call("one.txt", "1\n")],
        None,
    );
    e.task(Some(s), &ws, "second", 2, vec![], None);
    let second = e.message(s, "second").to_string();
    let original = snapshot(&ws);

    let fork = e.json(&["session", "fork", &s.to_string(), "--at", &second, "--json"]);
    assert_eq!(fork["place"], "worktree", "{fork}");
    let f = fork["session_id"].as_i64().unwrap();
    let branch = format!("pocketpilot/fork-{f}");
    assert_eq!(fork["branch"], branch.as_str());
    let fws = PathBuf::from(fork["workspace"].as_str().unwrap());
    assert_eq!(fws, real(&e.path(&format!("ws-fork-{f}"))));
    assert_eq!(workspace_of(&e, f), fws, "the new session works there");
    // The original repository knows the worktree and its branch.
    let list = git(&ws, &["worktree", "list", "--porcelain"]);
    let entry = list
        .split("\n\n")
        .find(|w| w.lines().next() == Some(&format!("worktree {}", fws.display())))
        .unwrap_or_else(|| panic!("no worktree {} in:\n{list}", fws.display()));
    assert!(
        entry
            .lines()
            .any(|l| l == format!("branch refs/heads/{branch}")),
        "{entry}"
    );
    assert_eq!(
        git(&fws, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        branch
    );
    // The worktree holds the workspace as it was: what was committed and what the first
    // task wrote since (a change to a tracked file would come along; an untracked file,
    // as one.txt is, does not).
    assert_eq!(std::fs::read(fws.join("a.txt")).unwrap(), b"alpha\nbeta\n");
    assert!(!fws.join("one.txt").exists());
    assert_eq!(
        snapshot(&ws),
        original,
        "the original's files are untouched"
    );

    // A workspace below the repository's top: the worktree is of the whole repository,
    // the new session works in the same folder inside it, and the CLI says so.
    let sub = ws.join("tree");
    let t = e.task(None, &sub, "in tree", 0, vec![], None);
    let at = e.message(t, "in tree").to_string();
    let said = e.ok(&["session", "fork", &t.to_string(), "--at", &at]);
    let g = new_session(&said);
    let gws = real(&e.path(&format!("ws-fork-{g}"))).join("tree");
    assert!(
        said.contains(&format!(
            "in a git worktree on branch pocketpilot/fork-{g} at {}",
            gws.display()
        )),
        "{said}"
    );
    assert_eq!(workspace_of(&e, g), gws);
    assert_eq!(std::fs::read(gws.join("one.txt")).unwrap(), b"one\n");

    // A plain folder: a copy, whole.
    let plain = e.path("plain");
    fill(&plain);
    let p = e.task(None, &plain, "plain", 0, vec![], None);
    let at = e.message(p, "plain").to_string();
    let said = e.ok(&["session", "fork", &p.to_string(), "--at", &at]);
    let c = new_session(&said);
    let copy = workspace_of(&e, c);
    assert_eq!(real(&copy), real(&e.path(&format!("plain-fork-{c}"))));
    assert!(
        said.contains(&format!("in a copy at {}", copy.display())),
        "{said}"
    );
    assert_eq!(snapshot(&copy), snapshot(&plain));
}
