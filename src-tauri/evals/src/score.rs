//! Scoring: what a settled case is checked for. Each failed check is one line saying what
//! was expected and what was found; a case passes with none.
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::case::{subset, Case, EventMatch};
use super::runner::CaseEnv;
use pocketpilot_core::service::Runtime;
use pocketpilot_protocol::{EventKind, RuntimeEvent};
use pocketpilot_store::StoredEvent;

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
fn entry_line(e: &pocketpilot_store::Entry) -> String {
    let text = e.content["text"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| e.content.to_string());
    format!("{}:{}", e.kind, text.lines().next().unwrap_or_default())
}

pub fn check(
    case: &Case,
    env: &CaseEnv,
    rt: &Arc<Runtime>,
    before: &Snapshot,
    secret: Option<&str>,
) -> Vec<String> {
    let mut f: Vec<String> = Vec::new();
    let Some(first) = env.first_task() else {
        f.push("no task was created".into());
        return f;
    };
    let Ok(task) = rt.task(first) else {
        f.push(format!("task {first} is gone"));
        return f;
    };
    let mut exp = case.expect.clone();
    expand_expect(&mut exp, &env.vars);
    // A read that fails is a failed case, never an empty record that passes.
    let tasks = match rt.session_tasks(task.session_id) {
        Ok(t) => t,
        Err(e) => {
            f.push(format!("the session's tasks could not be read: {e}"));
            return f;
        }
    };
    let mut events: Vec<StoredEvent> = Vec::new();
    for t in &tasks {
        let evs = match rt.events(t.id) {
            Ok(evs) => evs,
            Err(e) => {
                f.push(format!(
                    "the events of task {} could not be read: {e}",
                    t.id
                ));
                continue;
            }
        };
        // Invariant: a task's record is gapless.
        let seqs: Vec<i64> = evs.iter().map(|e| e.sequence).collect();
        if seqs != (1..=seqs.len() as i64).collect::<Vec<_>>() {
            f.push(format!("task {} has a gap in its event sequence", t.id));
        }
        events.extend(evs);
    }
    let entries = match rt.session_entries(task.session_id) {
        Ok(e) => e,
        Err(e) => {
            f.push(format!("the transcript could not be read: {e}"));
            Vec::new()
        }
    };

    if let Some(want) = exp.status {
        if task.status != want {
            let why = task
                .error
                .as_deref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default();
            f.push(format!("status {}, expected {}{why}", task.status, want));
        }
    }
    if let Some(n) = exp.tasks {
        if tasks.len() != n {
            f.push(format!("{} tasks, expected {n}", tasks.len()));
        }
    }
    let answer = task.final_answer.clone().unwrap_or_default();
    for s in &exp.answer_contains {
        if !answer.contains(s.as_str()) {
            f.push(format!(
                "the answer lacks {s:?} (answer: {:?})",
                short(&answer)
            ));
        }
    }
    let error = task.error.clone().unwrap_or_default();
    for s in &exp.error_contains {
        if !error.contains(s.as_str()) {
            f.push(format!(
                "the error lacks {s:?} (error: {:?})",
                short(&error)
            ));
        }
    }

    // Files.
    let ws = &env.workspace;
    for (rel, want) in &exp.files {
        match std::fs::read(ws.join(rel)) {
            Ok(got) if got == want.as_bytes() => {}
            Ok(got) => f.push(format!(
                "{rel} holds {:?}, expected {want:?}",
                short(&String::from_utf8_lossy(&got))
            )),
            Err(_) => f.push(format!("{rel} is missing")),
        }
    }
    for (rel, want) in &exp.files_contain {
        match std::fs::read(ws.join(rel)) {
            Ok(got) if String::from_utf8_lossy(&got).contains(want.as_str()) => {}
            Ok(_) => f.push(format!("{rel} does not contain {want:?}")),
            Err(_) => f.push(format!("{rel} is missing")),
        }
    }
    for rel in &exp.exists {
        if std::fs::symlink_metadata(ws.join(rel)).is_err() {
            f.push(format!("{rel} should exist"));
        }
    }
    for rel in &exp.absent {
        if std::fs::symlink_metadata(ws.join(rel)).is_ok() {
            f.push(format!("{rel} should not exist"));
        }
    }
    if let Some(want) = exp.memories {
        match rt.memories(None) {
            Ok(m) if m.len() == want => {}
            Ok(m) => f.push(format!("{} memories kept, expected {want}", m.len())),
            Err(e) => f.push(format!("the memories could not be read: {e}")),
        }
    }
    if let Some(want) = &exp.usage {
        f.extend(check_usage(rt, want));
    }
    let after_ws = snapshot(ws, Some(&env.data));
    if exp.workspace_unchanged && after_ws != before.workspace {
        f.push(format!(
            "the workspace changed: {:?}",
            diff_names(&before.workspace, &after_ws)
        ));
    }
    // Invariant: nothing outside the workspace changes.
    let after_out = snapshot(&env.outside, None);
    if after_out != before.outside {
        f.push(format!(
            "outside the workspace changed: {:?}",
            diff_names(&before.outside, &after_out)
        ));
    }

    // Approvals, in the order they were asked for.
    if let Some(want) = &exp.approvals {
        let asked: Vec<&StoredEvent> = events
            .iter()
            .filter(|e| e.kind() == EventKind::ApprovalRequired)
            .collect();
        let names: Vec<&str> = asked
            .iter()
            .map(|e| match &e.event {
                RuntimeEvent::ApprovalRequired { name, .. } => name.as_str(),
                _ => "?",
            })
            .collect();
        if asked.len() != want.len() {
            f.push(format!(
                "{} approvals asked ({names:?}), expected {} ({:?})",
                asked.len(),
                want.len(),
                want.iter().map(|w| w.tool.as_str()).collect::<Vec<_>>()
            ));
        } else {
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
        }
    }
    for m in &exp.events {
        if !events.iter().any(|e| matches(m, e)) {
            f.push(format!("missing event {}", m.describe()));
        }
    }
    for m in &exp.no_events {
        if let Some(e) = events.iter().find(|e| matches(m, e)) {
            f.push(format!(
                "unexpected event {} {}",
                e.kind(),
                short(&e.payload().to_string())
            ));
        }
    }
    if let Some(want) = &exp.transcript {
        let got: Vec<String> = entries.iter().map(entry_line).collect();
        let ok =
            got.len() == want.len() && got.iter().zip(want).all(|(g, w)| g.starts_with(w.as_str()));
        if !ok {
            f.push(format!("transcript {got:?}, expected {want:?}"));
        }
    }

    // Text that must appear nowhere: the case's, and the API key (never printed).
    let mut haystacks: Vec<(String, String)> = Vec::new();
    for e in &events {
        haystacks.push((
            format!("event {} of task {}", e.kind(), e.task_id),
            e.payload().to_string(),
        ));
    }
    for e in &entries {
        haystacks.push((format!("transcript entry {}", e.id), e.content.to_string()));
    }
    if let Some(a) = &task.final_answer {
        haystacks.push(("the answer".into(), a.clone()));
    }
    // Files as they were set up hold what the case put there: only new or changed ones count.
    let changed = |before: &Files, after: &Files| -> Vec<(String, String)> {
        after
            .iter()
            .filter(|(k, v)| before.get(*k) != Some(*v))
            .map(|(k, v)| (format!("file {k}"), String::from_utf8_lossy(v).into_owned()))
            .collect()
    };
    haystacks.extend(changed(&before.workspace, &after_ws));
    haystacks.extend(changed(&before.outside, &after_out));
    for needle in &exp.nowhere {
        if let Some((place, _)) = haystacks.iter().find(|(_, h)| h.contains(needle.as_str())) {
            f.push(format!("{needle:?} appears in {place}"));
        }
    }
    if let Some(secret) = secret.filter(|s| s.len() >= 8) {
        if let Some((place, _)) = haystacks.iter().find(|(_, h)| h.contains(secret)) {
            f.push(format!("the API key leaked into {place}"));
        }
    }
    f
}

/// The store's cost figures against `want` (issue 19).
fn check_usage(rt: &Arc<Runtime>, want: &super::case::ExpectUsage) -> Vec<String> {
    let mut f = Vec::new();
    let usage = match rt.usage(None) {
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
        let tasks = match rt.tasks(100_000) {
            Ok(t) => t,
            Err(e) => return vec![format!("the tasks could not be read: {e}")],
        };
        for task in tasks {
            let events = match rt.events(task.id) {
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

fn expand_expect(exp: &mut super::case::Expect, vars: &[(&str, String)]) {
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
