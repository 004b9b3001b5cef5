"""Issue 12: the window is fed by pushed changes, not by polling (ui/src has no polling loop
left; the store's unit tests show it reads nothing without a change). A session the CLI
creates in the same data directory and a webhook the CLI adds both appear in the open
window: core notices another process's commits (`PRAGMA data_version`) and pushes
`refresh` over the change feed."""
from __future__ import annotations

from conftest import App, AppEnv

def test_cli_changes_reach_the_window_without_polling(app_env: AppEnv, launch) -> None:
    script = app_env.script("cli", [{"text": "Done from the terminal."}])
    app = launch()
    # The app has read its (empty) list of sessions: launch waits for that.
    assert not app.css("[data-testid=session-item]")

    # A session created by the CLI appears in the sidebar, pushed.
    app_env.seed("Goal typed in a terminal", script)
    app.wait(
        "the CLI's session in the sidebar",
        lambda: any("Goal typed in a terminal" in t for t in app.texts("[data-testid=session-item]")),
        timeout=15,
    )

    # A webhook added by the CLI appears in the open settings screen.
    app.open_settings()
    app_env.cli("hooks", "add", "from-cli", "--workspace", str(app_env.workspace()))
    app.wait(
        "the CLI's webhook in the list",
        lambda: app.css("[data-testid=webhook-row][data-name=from-cli]"),
        timeout=15,
    )
    app.screenshot("cli-changes-pushed")
