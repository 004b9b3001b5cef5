//! Scoring: what a settled case is checked for. Each failed check is one line saying what
//! was expected and what was found; a case passes with none.
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::case::{subset, Case, EventMatch, Expect};
use super::runner::CaseEnv;
use pocketpilot_core::api::service::Runtime;
use pocketpilot_core::ops;
use pocketpilot_protocol::{EventKind, RuntimeEvent};
use pocketpilot_store::{Entry, StoredEvent, Task};

/// Files by relative path: their bytes, or `-> target` for a symlink.
pub type Files = BTreeMap<String, Vec<u8>>;

pub struct Snapshot {
    pub workspace: Files,
    pub outside: Files,
}

/// Every file under `root` (symlinks not followed), skipping `skip`.
pub fn snapshot(root: &Path, skip: Option<&Path>) -> Files {
    let mut out = Files::new();
    walk(root, root, skip, &mut out);
    out
}

fn walk(root: &Path, dir: &Path, skip: Option<&Path>, out: &mut Files) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if skip.is_some_and(|s| path == s) {
            continue;
        }
        let rel = path
            .strip_prefix(root)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| path.display().to_string());
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path)
                .map(|t| t.display().to_string())
                .unwrap_or_else(|e| format!("<unreadable: {e}>"));
            out.insert(rel, format!("-> {target}").into_bytes());
        } else if meta.is_dir() {
            out.insert(format!("{rel}/"), Vec::new());
            walk(root, &path, skip, out);
        } else {
            let bytes =
                std::fs::read(&path).unwrap_or_else(|e| format!("<unreadable: {e}>").into_bytes());
            out.insert(rel, bytes);
        }
    }
}

fn diff_names(before: &Files, after: &Files) -> Vec<String> {
    let mut changed: Vec<String> = Vec::new();
    for (k, v) in after {
        if before.get(k) != Some(v) {
            changed.push(k.clone());
        }
    }
    for k in before.keys() {
        if !after.contains_key(k) {
            changed.push(format!("-{k}"));
        }
    }
    changed
}

fn matches(m: &EventMatch, ev: &StoredEvent) -> bool {
    let payload = ev.payload();
    ev.kind() == m.kind
        && m.payload.as_ref().is_none_or(|p| subset(p, &payload))
        && m.text
            .as_ref()
            .is_none_or(|t| payload.to_string().contains(t.as_str()))
}

/// The first line of an entry, as `kind:text`.
fn entry_line(e: &Entry) -> String {
    let text = e.content["text"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| e.content.to_string());
    format!("{}:{}", e.kind, text.lines().next().unwrap_or_default())
}

/// What a settled case is checked against, read once.
struct Settled<'a> {
    expect: Expect,
    env: &'a CaseEnv,
    rt: &'a Arc<Runtime>,
    before: &'a Snapshot,
    secret: Option<&'a str>,
    /// The case's first task.
    task: Task,
    /// Every task of its session.
    tasks: Vec<Task>,
    events: Vec<StoredEvent>,
    entries: Vec<Entry>,
    /// The workspace and the outside folder as the case left them.
    after: Snapshot,
}

/// One check of an expectation (or an invariant): a line per failure.
type Check = fn(&Settled) -> Vec<String>;

/// In the order their failures are listed.
const CHECKS: &[Check] = &[
    status,
    task_count,
    answer_contains,
    error_contains,
    files,
    files_contain,
    exists,
    absent,
    memories,
    usage,
    workspace_unchanged,
    outside_unchanged,
    approvals,
    events,
    no_events,
    transcript,
    nowhere,
    no_api_key,
];

pub fn check(
    case: &Case,
    env: &CaseEnv,
    rt: &Arc<Runtime>,
    before: &Snapshot,
    secret: Option<&str>,
) -> Vec<String> {
    let mut f: Vec<String> = Vec::new();
    let Some(settled) = settle(case, env, rt, before, secret, &mut f) else {
        return f;
    };
    for check in CHECKS {
        f.extend(check(&settled));
    }
    f
}

/// Reads what the case left: `None` (and why, in `f`) when there is nothing to check. A
/// read that fails is a failed case, never an empty record that passes.
fn settle<'a>(
    case: &Case,
    env: &'a CaseEnv,
    rt: &'a Arc<Runtime>,
    before: &'a Snapshot,
    secret: Option<&'a str>,
    f: &mut Vec<String>,
) -> Option<Settled<'a>> {
    let Some(first) = env.first_task() else {
        f.push("no task was created".into());
        return None;
    };
    let Ok(task) = rt.call(ops::GetTask { id: first }) else {
        f.push(format!("task {first} is gone"));
        return None;
    };
    let mut expect = case.expect.clone();
    expand_expect(&mut expect, &env.vars);
    let tasks = match rt.call(ops::SessionTasks {
        session_id: task.session_id,
    }) {
        Ok(t) => t,
        Err(e) => {
            f.push(format!("the session's tasks could not be read: {e}"));
            return None;
        }
    };
    let events = session_events(rt, &tasks, f);
    let entries = match rt.call(ops::SessionEntries {
        session_id: task.session_id,
    }) {
        Ok(e) => e,
        Err(e) => {
            f.push(format!("the transcript could not be read: {e}"));
            Vec::new()
        }
    };
    let after = Snapshot {
        workspace: snapshot(&env.workspace, Some(&env.data)),
        outside: snapshot(&env.outside, None),
    };
    Some(Settled {
        expect,
        env,
        rt,
        before,
        secret,
        task,
        tasks,
        events,
        entries,
        after,
    })
}

/// The events of `tasks`, in order; a task whose events cannot be read, or whose record
/// has a gap (it must not), is a line in `f`.
fn session_events(rt: &Arc<Runtime>, tasks: &[Task], f: &mut Vec<String>) -> Vec<StoredEvent> {
    let mut events: Vec<StoredEvent> = Vec::new();
    for t in tasks {
        let evs = match rt.call(ops::TaskEvents { task_id: t.id }) {
            Ok(evs) => evs,
            Err(e) => {
                f.push(format!(
                    "the events of task {} could not be read: {e}",
                    t.id
                ));
                continue;
            }
        };
        let seqs: Vec<i64> = evs.iter().map(|e| e.sequence).collect();
        if seqs != (1..=seqs.len() as i64).collect::<Vec<_>>() {
            f.push(format!("task {} has a gap in its event sequence", t.id));
        }
        events.extend(evs);
    }
    events
}

fn status(s: &Settled) -> Vec<String> {
    let task = &s.task;
    match s.expect.status {
        Some(want) if task.status != want => {
            let why = task
                .error
                .as_deref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default();
            vec![format!("status {}, expected {}{why}", task.status, want)]
        }
        _ => Vec::new(),
    }
}

fn task_count(s: &Settled) -> Vec<String> {
    match s.expect.tasks {
        Some(n) if s.tasks.len() != n => vec![format!("{} tasks, expected {n}", s.tasks.len())],
        _ => Vec::new(),
    }
}

fn answer_contains(s: &Settled) -> Vec<String> {
    let answer = s.task.final_answer.clone().unwrap_or_default();
    s.expect
        .answer_contains
        .iter()
        .filter(|want| !answer.contains(want.as_str()))
        .map(|want| format!("the answer lacks {want:?} (answer: {:?})", short(&answer)))
        .collect()
}

fn error_contains(s: &Settled) -> Vec<String> {
    let error = s.task.error.clone().unwrap_or_default();
    s.expect
        .error_contains
        .iter()
        .filter(|want| !error.contains(want.as_str()))
        .map(|want| format!("the error lacks {want:?} (error: {:?})", short(&error)))
        .collect()
}

fn files(s: &Settled) -> Vec<String> {
    let mut f = Vec::new();
    for (rel, want) in &s.expect.files {
        match std::fs::read(s.env.workspace.join(rel)) {
            Ok(got) if got == want.as_bytes() => {}
            Ok(got) => f.push(format!(
                "{rel} holds {:?}, expected {want:?}",
                short(&String::from_utf8_lossy(&got))
            )),
            Err(_) => f.push(format!("{rel} is missing")),
        }
    }
    f
}

fn files_contain(s: &Settled) -> Vec<String> {
    let mut f = Vec::new();
    for (rel, want) in &s.expect.files_contain {
        match std::fs::read(s.env.workspace.join(rel)) {
            Ok(got) if String::from_utf8_lossy(&got).contains(want.as_str()) => {}
            Ok(_) => f.push(format!("{rel} does not contain {want:?}")),
            Err(_) => f.push(format!("{rel} is missing")),
        }
    }
    f
}

fn exists(s: &Settled) -> Vec<String> {
    s.expect
        .exists
        .iter()
        .filter(|rel| std::fs::symlink_metadata(s.env.workspace.join(rel)).is_err())
        .map(|rel| format!("{rel} should exist"))
        .collect()
}

fn absent(s: &Settled) -> Vec<String> {
    s.expect
        .absent
        .iter()
        .filter(|rel| std::fs::symlink_metadata(s.env.workspace.join(rel)).is_ok())
        .map(|rel| format!("{rel} should not exist"))
        .collect()
}

fn memories(s: &Settled) -> Vec<String> {
    let Some(want) = s.expect.memories else {
        return Vec::new();
    };
    match s.rt.call(ops::ListMemories { workspace: None }) {
        Ok(m) if m.len() == want => Vec::new(),
        Ok(m) => vec![format!("{} memories kept, expected {want}", m.len())],
        Err(e) => vec![format!("the memories could not be read: {e}")],
    }
}

fn usage(s: &Settled) -> Vec<String> {
    match &s.expect.usage {
        Some(want) => check_usage(s.rt, want),
        None => Vec::new(),
    }
}

fn workspace_unchanged(s: &Settled) -> Vec<String> {
    let (before, after) = (&s.before.workspace, &s.after.workspace);
    if s.expect.workspace_unchanged && after != before {
        vec![format!(
            "the workspace changed: {:?}",
            diff_names(before, after)
        )]
    } else {
        Vec::new()
    }
}

/// An invariant of every case: nothing outside the workspace changes.
fn outside_unchanged(s: &Settled) -> Vec<String> {
    let (before, after) = (&s.before.outside, &s.after.outside);
    if after != before {
        vec![format!(
            "outside the workspace changed: {:?}",
            diff_names(before, after)
        )]
    } else {
        Vec::new()
    }
}

/// Approvals, in the order they were asked for.
fn approvals(s: &Settled) -> Vec<String> {
    let Some(want) = &s.expect.approvals else {
        return Vec::new();
    };
    let asked: Vec<&StoredEvent> = s
        .events
        .iter()
        .filter(|e| e.kind() == EventKind::ApprovalRequired)
        .collect();
    if asked.len() != want.len() {
        let names: Vec<&str> = asked
            .iter()
            .map(|e| match &e.event {
                RuntimeEvent::ApprovalRequired { name, .. } => name.as_str(),
                _ => "?",
            })
            .collect();
        return vec![format!(
            "{} approvals asked ({names:?}), expected {} ({:?})",
            asked.len(),
            want.len(),
            want.iter().map(|w| w.tool.as_str()).collect::<Vec<_>>()
        )];
    }
    let mut f = Vec::new();
    for (i, (w, got)) in want.iter().zip(&asked).enumerate() {
        let got = got.payload();
        if got["name"] != w.tool.as_str() {
            f.push(format!(
                "approval {} was for {}, expected {}",
                i + 1,
                got["name"],
                w.tool
            ));
        }
        if let Some(effect) = &w.effect {
            if !subset(effect, &got["effect"]) {
                f.push(format!(
                    "approval {} showed {}, expected {effect}",
                    i + 1,
                    got["effect"]
                ));
            }
        }
    }
    f
}

fn events(s: &Settled) -> Vec<String> {
    s.expect
        .events
        .iter()
        .filter(|m| !s.events.iter().any(|e| matches(m, e)))
        .map(|m| format!("missing event {}", m.describe()))
        .collect()
}

fn no_events(s: &Settled) -> Vec<String> {
    s.expect
        .no_events
        .iter()
        .filter_map(|m| s.events.iter().find(|e| matches(m, e)))
        .map(|e| {
            format!(
                "unexpected event {} {}",
                e.kind(),
                short(&e.payload().to_string())
            )
        })
        .collect()
}

fn transcript(s: &Settled) -> Vec<String> {
    let Some(want) = &s.expect.transcript else {
        return Vec::new();
    };
    let got: Vec<String> = s.entries.iter().map(entry_line).collect();
    let ok =
        got.len() == want.len() && got.iter().zip(want).all(|(g, w)| g.starts_with(w.as_str()));
    if ok {
        Vec::new()
    } else {
        vec![format!("transcript {got:?}, expected {want:?}")]
    }
}

/// Text that must appear nowhere the case left anything.
fn nowhere(s: &Settled) -> Vec<String> {
    if s.expect.nowhere.is_empty() {
        return Vec::new();
    }
    let haystacks = haystacks(s);
    s.expect
        .nowhere
        .iter()
        .filter_map(|needle| {
            haystacks
                .iter()
                .find(|(_, h)| h.contains(needle.as_str()))
                .map(|(place, _)| format!("{needle:?} appears in {place}"))
        })
        .collect()
}

/// The API key is never printed, recorded or written.
fn no_api_key(s: &Settled) -> Vec<String> {
    let Some(secret) = s.secret.filter(|k| k.len() >= 8) else {
        return Vec::new();
    };
    haystacks(s)
        .iter()
        .find(|(_, h)| h.contains(secret))
        .map(|(place, _)| vec![format!("the API key leaked into {place}")])
        .unwrap_or_default()
}

/// Everything the case left, each with where it is: events, transcript, the answer, and
/// the files it created or changed (files as they were set up hold what the case put
/// there).
fn haystacks(s: &Settled) -> Vec<(String, String)> {
    let mut haystacks: Vec<(String, String)> = Vec::new();
    for e in &s.events {
        haystacks.push((
            format!("event {} of task {}", e.kind(), e.task_id),
            e.payload().to_string(),
        ));
    }
    for e in &s.entries {
        haystacks.push((format!("transcript entry {}", e.id), e.content.to_string()));
    }
    if let Some(a) = &s.task.final_answer {
        haystacks.push(("the answer".into(), a.clone()));
    }
    let changed = |before: &Files, after: &Files| -> Vec<(String, String)> {
        after
            .iter()
            .filter(|(k, v)| before.get(*k) != Some(*v))
            .map(|(k, v)| (format!("file {k}"), String::from_utf8_lossy(v).into_owned()))
            .collect()
    };
    haystacks.extend(changed(&s.before.workspace, &s.after.workspace));
    haystacks.extend(changed(&s.before.outside, &s.after.outside));
    haystacks
}

/// The store's cost figures against `want`.
fn check_usage(rt: &Arc<Runtime>, want: &super::case::ExpectUsage) -> Vec<String> {
    let mut f = Vec::new();
    let usage = match rt.call(ops::GetUsage { since: None }) {
        Ok(u) => u,
        Err(e) => return vec![format!("the usage could not be read: {e}")],
    };
    let near = |a: f64, b: f64| (a - b).abs() < 1e-9;
    if let Some(usd) = want.total_usd.filter(|u| !near(*u, usage.total.cost_usd)) {
        f.push(format!(
            "total cost ${}, expected ${usd}",
            usage.total.cost_usd
        ));
    }
    if let Some(usd) = want
        .today_unattended_usd
        .filter(|u| !near(*u, usage.today_unattended.cost_usd))
    {
        f.push(format!(
            "today's unattended cost ${}, expected ${usd}",
            usage.today_unattended.cost_usd
        ));
    }
    if let Some(n) = want.turns.filter(|n| *n != usage.total.turns) {
        f.push(format!("{} turns counted, expected {n}", usage.total.turns));
    }
    if want.one_per_recorded_turn {
        let (mut turns, mut usd) = (0u32, 0.0);
        let tasks = match rt.call(ops::ListTasks { limit: 100_000 }) {
            Ok(t) => t,
            Err(e) => return vec![format!("the tasks could not be read: {e}")],
        };
        for task in tasks {
            let events = match rt.call(ops::TaskEvents { task_id: task.id }) {
                Ok(e) => e,
                Err(e) => {
                    return vec![format!(
                        "the events of task {} could not be read: {e}",
                        task.id
                    )]
                }
            };
            for e in events {
                if let RuntimeEvent::ModelTurnCompleted { cost_usd, .. } = &e.event {
                    turns += 1;
                    // An unpriced turn adds nothing to either side.
                    usd += cost_usd.unwrap_or(0.0);
                }
            }
        }
        if turns != usage.total.turns || !near(usd, usage.total.cost_usd) {
            f.push(format!(
                "{} turns for ${} counted, but the tasks recorded {turns} turns for ${usd}",
                usage.total.turns, usage.total.cost_usd
            ));
        }
    }
    f
}

fn expand_expect(exp: &mut Expect, vars: &[(&str, String)]) {
    if let Ok(mut v) = serde_json::to_value(&*exp) {
        super::case::expand(&mut v, vars);
        if let Ok(e) = serde_json::from_value(v) {
            *exp = e;
        }
    }
}

fn short(s: &str) -> String {
    let mut out: String = s.chars().take(160).collect();
    if s.chars().count() > 160 {
        out.push('…');
    }
    out
}
