"""Issue 16: under each answer, "N files changed" opens a review panel with the diffs; its
Undo, confirmed with the list of files, puts the workspace back byte for byte, and Redo
brings the task's changes back."""
from __future__ import annotations

import json

from conftest import App, AppEnv


def test_review_panel_undo_and_redo(app_env: AppEnv, launch) -> None:
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

    app: App = launch()
    app.wait("the session", lambda: app.css("[data-testid=session-item]"))
    app.css("[data-testid=session-item]")[0].click()
    line = app.wait("the changes line", lambda: next(iter(app.css("[data-testid=changes-line]")), None))
    app.wait("the count of changed files", lambda: line.text.startswith("3 files changed"))
    line = app.wait_attr("[data-testid=changes-line]", "data-undoable", "yes")
    line.click()

    panel = app.wait_css("[data-testid=review-panel]")
    app.wait_count("[data-testid=change-file]", 3)
    kinds = {f.get_attribute("data-path"): f.get_attribute("data-kind") for f in app.css("[data-testid=change-file]")}
    assert kinds == {"notes.txt": "modified", "gone.txt": "deleted", "made.txt": "added"}
    diff = app.wait(
        "the diff of notes.txt",
        lambda: next(iter(app.texts("[data-testid=change-file][data-path='notes.txt'] [data-testid=change-diff]")), None),
    )
    assert "-old line" in diff and "+new line" in diff, diff
    app.wait("the panel to name the task", lambda: f"Task {task}" in panel.text)
    app.screenshot("review-panel")

    app.css("[data-testid=undo]")[0].click()
    confirm = app.wait_css("[data-testid=undo-confirm]")
    app.wait_equal("the files to undo", lambda: sorted(app.texts("[data-testid=undo-confirm-file]")), ["gone.txt", "made.txt", "notes.txt"])
    assert (ws / "made.txt").exists(), "nothing is undone before the confirmation"
    app.wait("the confirmation shown", confirm.is_displayed)
    app.screenshot("undo-confirmation")
    app.css("[data-testid=confirm-undo]")[0].click()
    app.wait_texts("[data-testid=undo-status]", ["Undid 3 files."])
    assert (ws / "notes.txt").read_text() == "old line\nkept line\n"
    assert (ws / "gone.txt").read_text() == "deleted by the task\n"
    assert not (ws / "made.txt").exists()
    app.wait_count("[data-testid=change-file][data-undone=true]", 3)
    app.screenshot("undone")

    app.css("[data-testid=redo]")[0].click()
    app.wait_texts("[data-testid=undo-status]", ["Redid 3 files."])
    assert (ws / "notes.txt").read_text() == "new line\nkept line\n"
    assert (ws / "made.txt").read_text() == "made\n"
    assert not (ws / "gone.txt").exists()
    app.css("[data-testid=close-review]")[0].click()
    app.wait("the line says it can be undone again",
             lambda: app.css("[data-testid=changes-line][data-undoable=yes]"))


def test_settings_show_the_undo_history_defaults_and_save_them(app_env: AppEnv, launch) -> None:
    app: App = launch()
    app.open_settings()
    section = app.wait_css("[data-testid=undo-history-settings]")
    app.wait_attr("[data-testid=undo-max-mib]", "value", "2048")
    app.wait_attr("[data-testid=undo-max-days]", "value", "30")
    assert "node_modules" in app.css("[data-testid=undo-ignored]")[0].get_attribute("value")
    days = app.css("[data-testid=undo-max-days]")[0]
    app.clear(days)
    app.type_into(days, "7")
    app.css("[data-testid=save-undo-history]")[0].click()
    app.wait("saved", lambda: "Saved." in " ".join(app.texts("[data-testid=undo-history-status]")))
    assert section.is_displayed()
    app.screenshot("undo-history-settings")
    # The CLI reads the same stored settings: a prune now uses 7 days.
    assert "pruned 0 change set(s)" in app_env.cli("changes", "--prune").stdout
