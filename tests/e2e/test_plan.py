"""Plan mode in the window: a plan the agent proposed (`pocketpilot run --plan`) is a card
with its steps, the files and the commands it lists, and Approve / Edit / Reject; approved,
the run carries it out and the card's checklist ticks as the agent marks steps done. The
composer's "Plan first" toggle is the session's setting, which the CLI reads back."""
from __future__ import annotations

import json

from conftest import App, AppEnv


def test_a_plan_approved_in_the_window_runs_and_ticks(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("site")
    (ws / "README.md").write_text("The site.\n")
    script = app_env.script(
        "plan",
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
            {
                "tool_calls": [
                    {
                        "name": "submit_plan",
                        "arguments": {
                            "steps": ["Write notes.txt", "Write done.txt"],
                            "files": ["notes.txt", "done.txt"],
                            "commands": [],
                        },
                    }
                ]
            },
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "notes.txt", "content": "notes\n"}},
                    {"name": "plan_step_done", "arguments": {"step": 1}},
                ]
            },
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "done.txt", "content": "done\n"}},
                    {"name": "plan_step_done", "arguments": {"step": 2}},
                ]
            },
            {"text": "Both files are written."},
        ],
    )
    left = app_env.cli(
        "run", "--plan", "--workspace", str(ws), "--goal", "Write the notes", "--provider", f"scripted:{script}",
        check=False,
    )
    assert left.returncode == 3, left.stderr
    planner = json.loads(app_env.cli("tasks", "--json").stdout)[0]

    app: App = launch()
    app.wait_css("[data-testid=session-item]")
    app.by_text("[data-testid=session-item]", "Write the notes").click()
    app.wait_loaded("session-view")
    card = "[data-testid=plan-card]"
    app.wait_attr(card, "data-status", "proposed")
    app.wait_texts("[data-testid=plan-step]", ["Write notes.txt", "Write done.txt"])
    app.wait("the files it lists", lambda: "notes.txt" in " ".join(app.texts("[data-testid=plan-files]")))
    assert not (ws / "notes.txt").exists()
    app.screenshot("plan-proposed")

    app.wait_css("[data-testid=plan-approve]").click()
    app.wait_attr(card, "data-status", "approved")
    app.wait_equal(
        "both steps ticked",
        lambda: [e.get_attribute("data-done") for e in app.css("[data-testid=plan-step]")],
        ["true", "true"],
    )
    app.wait("the run to complete", lambda: app.css("[data-testid=task][data-status=completed]"))
    app.wait("the heading's count", lambda: "2 of 2 steps done" in " ".join(app.texts("[data-testid=plan-heading]")))
    app.screenshot("plan-done")
    assert (ws / "notes.txt").read_text() == "notes\n"
    assert (ws / "done.txt").read_text() == "done\n"
    # No approval was asked: the plan's files were its grant.
    assert json.loads(app_env.cli("approvals", "--json").stdout) == []
    plan = json.loads(app_env.cli("plan", "show", str(planner["id"]), "--json").stdout)
    assert plan["status"] == "approved" and plan["done"] == [1, 2]

    # The composer's toggle is the session's setting.
    session = str(planner["session_id"])
    assert app_env.cli("plan", "mode", session).stdout.strip() == "off"
    app.wait_css("[data-testid=plan-mode]").click()
    app.wait("the setting stored", lambda: app_env.cli("plan", "mode", session).stdout.strip() == "on")
