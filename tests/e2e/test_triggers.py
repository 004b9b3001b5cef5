"""Issue 7, item 6: the settings screen creates, lists, pauses and deletes webhooks,
schedules and MCP servers. A hook made in the window answers a real HTTP request with an
ordinary task (scripted model) that shows up in the sessions list and completes; paused,
the hook refuses the request; a bad cron expression is refused with the runtime's reason;
an MCP server added in the window is listed, and gone once deleted."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

from conftest import App, AppEnv

ANSWER = "The nightly report is ready."
HOOK_TEXT = "Summarise what changed today"


def post_hook(url: str, token: str, text: str) -> tuple[int, dict]:
    req = urllib.request.Request(
        url,
        data=json.dumps({"text": text}).encode(),
        headers={"Content-Type": "application/json", "X-PocketPilot-Token": token},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=20) as resp:
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def open_settings(app: App) -> None:
    app.open_settings()
    app.wait_css("[data-testid=webhooks-settings]")


def test_webhook_from_the_settings_starts_a_task_and_pauses(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("reports")
    app = launch(app_env.script("hook", [{"text": ANSWER}]))
    open_settings(app)
    base = app.wait(
        "the webhook listener",
        lambda: next((t for t in app.texts("[data-testid=webhook-listener]") if "http://127.0.0.1:" in t), None),
    )
    assert "Webhooks listen on http://127.0.0.1:" in base

    app.type_into(app.wait_css("[data-testid=webhook-name]"), "nightly")
    field = app.wait_css("[data-testid=webhook-workspace]")
    app.clear(field)
    app.type_into(field, str(ws))
    app.css("[data-testid=webhook-create]")[0].click()
    app.wait("the token", lambda: app.css("[data-testid=webhook-created][data-name=nightly]"))
    token = app.wait("the token's value", lambda: app.css("[data-testid=webhook-token]")[0].get_attribute("value"))
    url = app.wait("the hook's URL", lambda: app.css("[data-testid=webhook-created-url]")[0].get_attribute("value"))
    assert len(token) == 64 and all(c in "0123456789abcdef" for c in token)
    assert url.startswith("http://127.0.0.1:") and url.endswith("/hooks/nightly")
    app.wait("the hook in the list", lambda: app.css("[data-testid=webhook-row][data-name=nightly][data-paused=false]"))
    app.screenshot("webhook-token")

    # Shown once: after "I have copied it" the token is nowhere on the page, nor stored.
    app.css("[data-testid=webhook-token-done]")[0].click()
    app.wait("the token gone", lambda: not app.css("[data-testid=webhook-created]"))
    assert token not in app.driver.page_source
    listed = json.loads(app_env.cli("hooks", "list", "--json").stdout)
    assert [h["name"] for h in listed] == ["nightly"]
    assert token not in json.dumps(listed)

    # A real request: 202 with a task, which shows up in the sessions list and completes.
    code, body = post_hook(url, token, HOOK_TEXT)
    assert code == 202, body
    task_id = body["task_id"]
    item = app.wait(
        "the hook's session in the list",
        lambda: next((e for e, t in zip(app.css("[data-testid=session-item]"), app.texts("[data-testid=session-item]")) if "reports" in t), None),
    )
    item.click()
    app.wait(
        "the hook's task to complete",
        lambda: app.css(f"[data-testid=task][data-task-id='{task_id}'][data-status=completed]"),
        timeout=30,
    )
    app.wait("the answer", lambda: ANSWER in " ".join(app.texts("[data-testid=assistant-message]")))
    app.screenshot("webhook-task-completed")

    # Paused in the window: the same request is refused and makes no task.
    open_settings(app)
    app.wait_css("[data-testid=webhook-row][data-name=nightly] [data-testid=webhook-pause]").click()
    app.wait("the hook paused", lambda: app.css("[data-testid=webhook-row][data-name=nightly][data-paused=true]"))
    app.screenshot("webhook-paused")
    # (Refused like an unknown name or a bad token: which hooks exist is not revealed.)
    code, body = post_hook(url, token, HOOK_TEXT)
    assert code == 401, (code, body)
    assert body["error"]["kind"] == "unauthorized"

    # Resumed it answers again; deleted it is gone.
    app.css("[data-testid=webhook-row][data-name=nightly] [data-testid=webhook-pause]")[0].click()
    app.wait("the hook resumed", lambda: app.css("[data-testid=webhook-row][data-name=nightly][data-paused=false]"))
    code, _ = post_hook(url, token, HOOK_TEXT)
    assert code == 202
    app.css("[data-testid=webhook-row][data-name=nightly] [data-testid=webhook-delete]")[0].click()
    app.wait("the hook deleted", lambda: not app.css("[data-testid=webhook-row]"))
    code, _ = post_hook(url, token, HOOK_TEXT)
    assert code == 401


def test_schedules_refuse_a_bad_expression_and_show_the_next_fire(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("nightly")
    app = launch(app_env.script("cron", [{"text": ANSWER}]))
    open_settings(app)

    def add(expr: str) -> None:
        app.type_into(app.wait_css("[data-testid=schedule-expr]"), expr)
        field = app.css("[data-testid=schedule-workspace]")[0]
        app.clear(field)
        app.type_into(field, str(ws))
        app.type_into(app.css("[data-testid=schedule-goal]")[0], "Write the nightly report")
        app.css("[data-testid=schedule-create]")[0].click()

    add("every night at nine")
    status = app.wait_css("[data-testid=schedule-status][data-kind=invalid_expression]")
    app.wait("the reason", lambda: "is not a cron expression" in status.text and "@daily" in status.text)
    assert not app.css("[data-testid=schedule-row]")  # nothing was created: no reload can add one
    app.screenshot("schedule-bad-expression")

    app.clear(app.css("[data-testid=schedule-expr]")[0])
    app.clear(app.css("[data-testid=schedule-goal]")[0])
    add("0 9 * * MON-FRI")
    app.wait("the schedule", lambda: app.css("[data-testid=schedule-row][data-paused=false]"))
    app.wait("its next fire", lambda: any("UTC (in " in t for t in app.texts("[data-testid=schedule-next]")))
    app.css("[data-testid=schedule-pause]")[0].click()
    app.wait("the schedule paused", lambda: app.css("[data-testid=schedule-row][data-paused=true]"))
    app.wait_texts("[data-testid=schedule-next]", ["paused"])
    app.screenshot("schedule-paused")
    listed = json.loads(app_env.cli("cron", "list", "--json").stdout)
    assert [(s["expr"], s["paused"]) for s in listed] == [("0 9 * * MON-FRI", True)]
    app.css("[data-testid=schedule-delete]")[0].click()
    app.wait("the schedule deleted", lambda: not app.css("[data-testid=schedule-row]"))
    assert json.loads(app_env.cli("cron", "list", "--json").stdout) == []


def test_mcp_server_added_listed_and_deleted(app_env: AppEnv, launch) -> None:
    app = launch()
    open_settings(app)
    app.type_into(app.wait_css("[data-testid=mcp-name]"), "everything")
    app.type_into(app.css("[data-testid=mcp-command]")[0], "npx -y @modelcontextprotocol/server-everything")
    app.css("[data-testid=mcp-read-only]")[0].click()
    app.css("[data-testid=mcp-add]")[0].click()
    app.wait_attr("[data-testid=mcp-row][data-name=everything]", "data-workspace", "")
    app.wait_texts("[data-testid=mcp-how]", ["npx -y @modelcontextprotocol/server-everything"])
    app.screenshot("mcp-added")
    stored = json.loads(app_env.cli("mcp", "list", "--json").stdout)
    assert len(stored) == 1 and stored[0]["workspace"] is None
    cfg = stored[0]["config"]
    assert cfg["name"] == "everything" and cfg["allow_read_only"] is True
    assert cfg["transport"] == {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"], "env": []}

    # A bad name is refused with the runtime's reason; nothing is added.
    app.type_into(app.css("[data-testid=mcp-name]")[0], "no spaces")
    app.type_into(app.css("[data-testid=mcp-command]")[0], "node server.js")
    app.css("[data-testid=mcp-add]")[0].click()
    status = app.wait_css("[data-testid=mcp-status][data-kind=invalid_config]")
    app.wait("the reason", lambda: "no spaces" in status.text)
    app.wait_count("[data-testid=mcp-row]", 1)

    app.css("[data-testid=mcp-row][data-name=everything] [data-testid=mcp-delete]")[0].click()
    app.wait("the server deleted", lambda: not app.css("[data-testid=mcp-row]"))
    assert json.loads(app_env.cli("mcp", "list", "--json").stdout) == []
    app.screenshot("mcp-deleted")
