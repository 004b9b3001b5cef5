"""The review panel for daily use: undo one file as well as the whole task, the diffs
showing what an undo left, one status line, "Open in editor" through the desktop's default
app, Esc closing it back to the changes line; and "Instructions in effect" opening each
file read-only with "Edit in editor"."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

from conftest import App, AppEnv


def focused(app: App) -> str:
    return app.driver.execute_script("return document.activeElement && document.activeElement.dataset.testid") or ""


def fake_opener(app_env: AppEnv) -> Path:
    """An `xdg-open` first on the app's PATH that writes down what it was asked to open."""
    bin_dir = app_env.root / "bin"
    bin_dir.mkdir()
    log = app_env.root / "opened.txt"
    script = bin_dir / "xdg-open"
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" >> '{log}'\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    app_env.app_env["PATH"] = f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    return log


def opened(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def undone_in_store(app_env: AppEnv, task: int) -> dict[str, int | None]:
    listed = json.loads(app_env.cli("changes", str(task), "--json").stdout)
    return {f["path"]: f["undone_by"] for f in listed["files"]}


def test_one_file_undone_from_the_panel_then_the_rest_with_one_status_line(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("project")
    (ws / "notes.txt").write_text("old line\nkept line\n")
    (ws / "gone.txt").write_text("deleted by the task\n")
    script = app_env.script(
        "edit",
        [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "new line\nkept line\n"}}]},
            {"tool_calls": [{"name": "run_command", "arguments": {"command": "rm gone.txt && echo made > made.txt"}}]},
            {"text": "Updated the notes."},
        ],
    )
    app_env.cli(
        "run", "--workspace", str(ws), "--goal", "Update the notes", "--provider", f"scripted:{script}",
        "--allow", "fs:write", "--allow", "shell:execute",
    )
    task = json.loads(app_env.cli("tasks", "--json").stdout)[0]["id"]
    log = fake_opener(app_env)

    app: App = launch()
    app.wait("the session", lambda: app.css("[data-testid=session-item]"))
    app.css("[data-testid=session-item]")[0].click()
    app.wait_attr("[data-testid=changes-line]", "data-undoable", "yes").click()
    app.wait_css("[data-testid=review-panel]")
    app.wait_count("[data-testid=change-file]", 3)
    app.screenshot("review-panel")

    # Undo made.txt alone: only that file changes on disk.
    app.css("[data-testid=change-file][data-path='made.txt'] [data-testid=undo-file]")[0].click()
    app.wait_texts("[data-testid=undo-status]", ["Undid made.txt."])
    assert not (ws / "made.txt").exists()
    assert (ws / "notes.txt").read_text() == "new line\nkept line\n"
    assert not (ws / "gone.txt").exists()
    undone = undone_in_store(app_env, task)
    assert undone["made.txt"] is not None and undone["notes.txt"] is None and undone["gone.txt"] is None, undone
    # The panel reloaded: the file is marked undone, its diff folded away as what was undone.
    app.wait_attr("[data-testid=change-file][data-path='made.txt']", "data-undone", "true")
    assert app.css("[data-testid=change-file][data-path='made.txt'] [data-testid=file-undone]")
    folded = app.css("[data-testid=change-file][data-path='made.txt'] details")
    assert folded and folded[0].get_attribute("open") is None
    assert not app.css("[data-testid=change-file][data-path='made.txt'] [data-testid=undo-file]")
    assert app.css("[data-testid=change-file][data-path='notes.txt'][data-undone=false] [data-testid=change-diff]")
    assert len(app.css("[data-testid=undo-status]")) == 1
    assert not any("restored" in t for t in app.texts("[data-testid=review-panel] p"))
    app.screenshot("one-file-undone")

    # Open in editor: the desktop's default app gets the file's absolute path.
    app.css("[data-testid=change-file][data-path='notes.txt'] [data-testid=open-file]")[0].click()
    app.wait("the opener called with notes.txt", lambda: str((ws / "notes.txt").resolve()) in opened(log))

    # The task's undo now does the rest; its confirmation lists only what is left.
    app.css("[data-testid=undo]")[0].click()
    app.wait_equal("the files left to undo", lambda: sorted(app.texts("[data-testid=undo-confirm-file]")), ["gone.txt", "notes.txt"])
    app.css("[data-testid=confirm-undo]")[0].click()
    app.wait_texts("[data-testid=undo-status]", ["Undid 2 files."])
    assert (ws / "notes.txt").read_text() == "old line\nkept line\n"
    assert (ws / "gone.txt").read_text() == "deleted by the task\n"
    assert not (ws / "made.txt").exists()
    app.wait_count("[data-testid=change-file][data-undone=true]", 3)
    assert all(v is not None for v in undone_in_store(app_env, task).values())
    app.screenshot("all-undone")

    # Esc closes the panel (focus was on the Undo button, gone since) and focus goes back
    # to the changes line.
    ActionChains(app.driver).send_keys(Keys.ESCAPE).perform()
    app.wait("the panel closed", lambda: not app.css("[data-testid=review-panel]"))
    app.wait("focus on the changes line", lambda: focused(app) == "changes-line")
    app.screenshot("closed-with-esc")


def test_an_instruction_file_opens_read_only_and_in_the_editor(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("site")
    text = "Run the tests with make check.\nKeep answers short.\n"
    (ws / "AGENTS.md").write_text(text)
    script = app_env.script("hello", [{"text": "Hello."}])
    app_env.cli("run", "--workspace", str(ws), "--goal", "Say hello", "--provider", f"scripted:{script}")
    log = fake_opener(app_env)

    app: App = launch()
    app.wait("the session", lambda: app.css("[data-testid=session-item]"))
    app.css("[data-testid=session-item]")[0].click()
    app.open_header("details")
    app.wait_css("[data-testid=open-rules]").click()
    app.wait_loaded("rules-view")
    app.wait_css("[data-testid=instruction-file][data-path='AGENTS.md'] [data-testid=open-instruction]").click()
    app.wait_css("[data-testid=instruction-viewer]")
    app.wait_equal("the file's text", lambda: app.driver.execute_script(
        "const e = document.querySelector('[data-testid=instruction-text]'); return e && e.textContent;"), text)
    app.screenshot("instruction-read-only")

    app.css("[data-testid=edit-instruction]")[0].click()
    app.wait("the opener called with AGENTS.md", lambda: str((ws / "AGENTS.md").resolve()) in opened(log))
    assert (ws / "AGENTS.md").read_text() == text, "viewing never writes"

    ActionChains(app.driver).send_keys(Keys.ESCAPE).perform()
    app.wait("the viewer closed", lambda: not app.css("[data-testid=instruction-viewer]"))
    app.wait("focus back on the file", lambda: focused(app) == "open-instruction")
