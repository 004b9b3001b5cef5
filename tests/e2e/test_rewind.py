"""Rewind in the window: under one of the person's earlier messages, "Rewind to here"
(confirmed) puts the files back as they were before it and sets that message and what
followed aside (shown struck through); the message can then be sent again. "Fork from here"
starts a new session in a place the runtime chose: a git worktree in a git workspace."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from conftest import App, AppEnv


def test_rewind_to_an_earlier_message_restores_the_files(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("project")
    (ws / "notes.txt").write_text("v0\n")
    first = app_env.script(
        "first",
        [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "v1\n"}}]},
            {"text": "Wrote v1."},
        ],
    )
    app_env.cli(
        "run", "--workspace", str(ws), "--goal", "Write v1", "--provider", f"scripted:{first}", "--allow", "fs:write",
    )
    session = json.loads(app_env.cli("tasks", "--json").stdout)[0]["session_id"]
    second = app_env.script(
        "second",
        [
            {"text": "-"},
            {"text": "-"},
            {"tool_calls": [{"name": "run_command", "arguments": {"command": "echo v2 > notes.txt && echo made > made.txt"}}]},
            {"text": "Wrote v2."},
        ],
    )
    app_env.cli(
        "run", "--session", str(session), "--goal", "Now v2", "--provider", f"scripted:{second}",
        "--allow", "shell:execute",
    )
    assert (ws / "notes.txt").read_text() == "v2\n"

    app: App = launch()
    app.wait("the session", lambda: app.css("[data-testid=session-item]"))
    app.css("[data-testid=session-item]")[0].click()
    app.wait_count("[data-testid=user-message]", 2)
    actions = app.wait_count("[data-testid=rewind-here]", 2)
    app.screenshot("rewind-offered")
    actions[1].click()
    app.wait_css("[data-testid=rewind-confirm]")
    assert (ws / "made.txt").exists(), "nothing is rewound before the confirmation"
    app.screenshot("rewind-confirmation")
    app.css("[data-testid=rewind-confirm]")[0].click()
    # The session re-reads the store: the message is shown set aside, with what to do next.
    app.wait_css("[data-testid=rewound-note]")
    assert (ws / "notes.txt").read_text() == "v1\n"
    assert not (ws / "made.txt").exists()
    entries = json.loads(app_env.cli("session", "show", str(session), "--json").stdout)["entries"]
    assert [e["content"]["text"] for e in entries if e["kind"] == "user" and e.get("rewound_by")] == ["Now v2"]
    app.wait("the message struck through", lambda: app.css("[data-testid=user-message][data-rewound=true]"))
    app.screenshot("rewound")


def test_edit_and_send_again_then_regenerate_the_last_answer(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("edit")
    first = app_env.script("first", [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "v1\n"}}]},
        {"text": "Wrote v1."},
    ])
    app_env.cli("run", "--workspace", str(ws), "--goal", "Write v1", "--provider", f"scripted:{first}", "--allow", "fs:write")
    session = json.loads(app_env.cli("tasks", "--json").stdout)[0]["session_id"]
    second = app_env.script("second", [
        {"text": "-"},
        {"text": "-"},
        {"tool_calls": [{"name": "run_command", "arguments": {"command": "echo v2 > notes.txt && echo made > made.txt"}}]},
        {"text": "Wrote v2."},
    ])
    app_env.cli("run", "--session", str(session), "--goal", "Now v2", "--provider", f"scripted:{second}", "--allow", "shell:execute")
    # The window's model: after the rewind the conversation holds the first task's two turns.
    app: App = launch(app_env.script("app", [{"text": "-"}, {"text": "-"}, {"text": "Done with v3."}]))
    app.wait("the session", lambda: app.css("[data-testid=session-item]"))
    app.css("[data-testid=session-item]")[0].click()
    # A mark on this page: gone if anything reloads it.
    app.driver.execute_script("window.e2eSamePage = 'edit'")
    app.wait_count("[data-testid=edit-resend]", 2)[1].click()
    confirm = app.wait_css("[data-testid=rewind-confirm]")
    assert confirm.text == "Rewind and edit", confirm.text
    confirm.click()
    # The files went back, and the message waits in the box to be edited.
    app.wait_attr("[data-testid=composer-input]", "value", "Now v2")
    assert (ws / "notes.txt").read_text() == "v1\n" and not (ws / "made.txt").exists()
    assert app.driver.execute_script("return document.activeElement.dataset.testid") == "composer-input"
    app.screenshot("edit-in-the-box")
    box = app.css("[data-testid=composer-input]")[0]
    app.clear(box)
    app.type_into(box, "Now v3")
    app.press_enter(box)
    app.wait("the edited message's answer", lambda: "Done with v3." in app.texts("[data-testid=assistant-message]:not([data-rewound=true])"))

    def users() -> tuple[list[str], list[str]]:
        entries = json.loads(app_env.cli("session", "show", str(session), "--json").stdout)["entries"]
        said = [e for e in entries if e["kind"] == "user"]
        return (
            [e["content"]["text"] for e in said if not e.get("rewound_by")],
            [e["content"]["text"] for e in said if e.get("rewound_by")],
        )

    # The task the window watched live offers going back as soon as it ended, in the same
    # page (never reloaded or reopened): its view gave way to what the store read back.
    app.wait("the task to finish", lambda: len(app.css("[data-testid=task]")) == 3 and app.css("[data-testid=task]")[-1].get_attribute("data-status") == "completed")
    app.wait("Regenerate under the newest task", lambda: app.css("[data-testid=task]:last-of-type [data-testid=regenerate]"))
    app.wait_count("[data-testid=task]:last-of-type [data-testid=edit-resend]", 1)
    app.wait_count("[data-testid=task]:last-of-type [data-testid=rewind-here]", 1)
    assert app.driver.execute_script("return window.e2eSamePage") == "edit", "the page was reloaded"
    assert users() == (["Write v1", "Now v3"], ["Now v2"])
    app.screenshot("offered-after-the-live-run")
    # Regenerate: the last message is set aside and sent again.
    app.css("[data-testid=regenerate]")[0].click()
    app.wait("sent again", lambda: users() == (["Write v1", "Now v3"], ["Now v2", "Now v3"]))
    app.wait("the new answer", lambda: app.texts("[data-testid=assistant-message]:not([data-rewound=true])")[-1:] == ["Done with v3."])
    app.screenshot("regenerated")


def git(cwd: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=cwd, capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, f"git {args}: {out.stderr}"
    return out.stdout


def files(root: Path) -> dict[str, bytes]:
    """Every file under `root` with its bytes (git's and the runtime's own folders aside)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not {".git", ".pocketpilot"} & set(p.relative_to(root).parts)
    }


def test_fork_from_here_in_a_git_workspace_makes_a_worktree(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("repo")
    (ws / "notes.txt").write_text("v0\n")
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "start")
    first = app_env.script("first", [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "v1\n"}}]},
        {"text": "Wrote v1."},
    ])
    app_env.cli("run", "--workspace", str(ws), "--goal", "Write v1", "--provider", f"scripted:{first}", "--allow", "fs:write")
    session = json.loads(app_env.cli("tasks", "--json").stdout)[0]["session_id"]
    second = app_env.script("second", [{"text": "-"}, {"text": "-"}, {"text": "Nothing to do."}])
    app_env.cli("run", "--session", str(session), "--goal", "Now v2", "--provider", f"scripted:{second}")
    before = files(ws)

    app: App = launch()
    app.wait("the session", lambda: app.css("[data-testid=session-item]"))
    app.css("[data-testid=session-item]")[0].click()
    # The window names no place: the runtime sees the git work tree and makes a worktree.
    app.wait_count("[data-testid=fork-here]", 2)[1].click()
    said = app.wait("the fork's words", lambda: next(iter(app.texts("[data-testid=rewind-done]")), None))
    app.screenshot("forked-into-a-worktree")
    found = re.search(r"Forked into a git worktree on branch (pocketpilot/fork-(\d+)) at (\S+) \(session (\d+)\)\.", said)
    assert found, said
    branch, n, where, fork = found.group(1), found.group(2), Path(found.group(3)), int(found.group(4))
    assert n == str(fork) and where == ws.resolve().with_name(f"repo-fork-{fork}"), said

    # The original repository has the worktree, on its new branch; the new session works in it.
    listed = git(ws, "worktree", "list", "--porcelain").split("\n\n")
    assert any(f"worktree {where}" in w and f"branch refs/heads/{branch}" in w for w in listed), listed
    assert git(where, "rev-parse", "--abbrev-ref", "HEAD").strip() == branch
    shown = json.loads(app_env.cli("session", "show", str(fork), "--json").stdout)
    assert shown["session"]["workspace"] == str(where)
    assert [e["content"]["text"] for e in shown["entries"] if e["kind"] == "user"] == ["Write v1"]
    # The files as they were at the fork (the first task's uncommitted change carried over),
    # and the original's untouched.
    assert (where / "notes.txt").read_text() == "v1\n"
    assert files(ws) == before

    # "Open it": the new session, in its worktree.
    app.css("[data-testid=rewind-done] a")[0].click()
    app.wait_attr("[data-testid=session-view]", "data-session-id", str(fork))
    app.wait("the worktree in the header", lambda: app.open_header("details") and str(where) in app.texts("[data-testid=head-path]"))
    app.screenshot("the-fork-opened")
