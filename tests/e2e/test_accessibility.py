"""Accessibility: axe-core (the npm package, a devDependency of ui/) runs inside the real
webview on the main screens — the welcome of a first run, a session with a finished task and
its transcript, an approval dialog open, the review panel, settings and search — and finds no
violation of impact "serious" or "critical". A failure lists each violation with its nodes."""
from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import App, AppEnv
from test_chat import start_session

ROOT = Path(__file__).resolve().parents[2]


def axe_source() -> str:
    """The axe-core build the UI's package.json pins (ui/node_modules/axe-core), or the one
    POCKETPILOT_AXE names (a checkout whose node_modules predates the dependency)."""
    named = os.environ.get("POCKETPILOT_AXE")
    path = Path(named) if named else ROOT / "ui" / "node_modules" / "axe-core" / "axe.min.js"
    assert path.is_file(), f"axe-core not installed at {path}: run npm --prefix ui install"
    return path.read_text()


def serious_violations(app: App) -> list[dict]:
    if not app.driver.execute_script("return typeof window.axe !== 'undefined'"):
        app.driver.execute_script(axe_source())
    result = app.driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']})"
        ".then(r => done(JSON.stringify(r.violations)), e => done(JSON.stringify({error: String(e)})));"
    )
    found = json.loads(result)
    assert not isinstance(found, dict), f"axe-core failed: {found}"
    return [v for v in found if v.get("impact") in ("serious", "critical")]


def describe(violations: list[dict]) -> str:
    lines = []
    for v in violations:
        lines.append(f"{v['impact']}: {v['id']} — {v['help']}")
        for node in v["nodes"][:8]:
            lines.append(f"    {node['target']}: {node.get('failureSummary', '').splitlines()[-1:]}")
    return "\n".join(lines)


def check(app: App, screen: str) -> None:
    app.settle()
    app.screenshot(screen)
    found = serious_violations(app)
    assert not found, f"serious accessibility violations on {screen}:\n{describe(found)}"


def test_the_first_run_welcome_has_no_serious_violations(app_env: AppEnv, launch) -> None:
    app: App = launch()
    app.wait_css("[data-testid=welcome-view]")
    check(app, "welcome")


def test_main_screens_have_no_serious_violations(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("project")
    (ws / "notes.txt").write_text("old line\n")
    done = app_env.script("edit", [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "new line\n"}}]},
        {"text": "Updated the notes."},
    ])
    app_env.cli(
        "run", "--workspace", str(ws), "--goal", "Update the notes", "--provider", f"scripted:{done}",
        "--allow", "fs:write",
    )
    asks = app_env.script("ask", [
        {"text": "Writing.", "tool_calls": [{"name": "write_file", "arguments": {"path": "more.txt", "content": "x\n"}}]},
        {"text": "Written."},
    ])
    app: App = launch(asks)

    app.wait("the session", lambda: app.css("[data-testid=session-item]"))
    app.css("[data-testid=session-item]")[0].click()
    app.wait("the transcript", lambda: "Updated the notes." in " ".join(app.texts("[data-testid=assistant-message]")))
    check(app, "session-transcript")

    app.wait_attr("[data-testid=changes-line]", "data-undoable", "yes").click()
    app.wait_count("[data-testid=change-file]", 1)
    check(app, "review-panel")

    search = app.wait_css("[data-testid=session-search]")
    app.type_into(search, "notes")
    app.wait_css("[data-testid=search-hit]")
    check(app, "search")
    app.clear(search)

    app.open_settings()
    check(app, "settings")

    start_session(app, ws, "Write more")
    app.wait_css("[data-testid=approval-dialog]")
    check(app, "approval-dialog")
