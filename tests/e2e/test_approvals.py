"""Issue 15, item 1 in the window: a command proposed by the model that carries an ANSI
escape and a bidi override is shown escaped in the approval dialog, which says it holds
hidden characters; no raw control or bidi character reaches the page for that call (the
dialog, its arguments editor, the tool card and its tooltip, the task's timeline)."""
from __future__ import annotations

from conftest import App, AppEnv
from test_chat import assistant_texts, start_session

ESC = "\x1b"
RLO = "\u202e"
# Clears the screen and flips what follows right to left: what a person would read is not
# what runs.
COMMAND = f"echo ok {ESC}[2J{RLO}txt.exe"
SHOWN = "echo ok \\x1b[2J\\u{202e}txt.exe"
REJECTED = "Understood: I will not run it."

# Every raw hidden character in the page's text, attributes and field values, by where it is.
RAW_ON_PAGE = """
const bad = /[\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f\\u200b-\\u200f\\u202a-\\u202e\\u2066-\\u2069]/;
const out = [];
for (const el of document.querySelectorAll('body *')) {
  for (const a of el.attributes) if (bad.test(a.value)) out.push(`${el.tagName}@${a.name}`);
  for (const n of el.childNodes) if (n.nodeType === 3 && bad.test(n.data)) out.push(`${el.tagName} text`);
  if ('value' in el && typeof el.value === 'string' && bad.test(el.value)) out.push(`${el.tagName} value`);
}
return out;
"""


def raw_on_page(app: App) -> list[str]:
    return app.driver.execute_script(RAW_ON_PAGE)


def test_a_command_with_hidden_characters_is_flagged_and_shown_escaped(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("hidden")
    script = app_env.script(
        "hidden",
        [
            {"text": "Running it.", "tool_calls": [{"name": "run_command", "arguments": {"command": COMMAND}}]},
            {"text": REJECTED},
        ],
    )
    app: App = launch(script)
    start_session(app, ws, "List the files")

    dialog = app.wait_css("[data-testid=approval-dialog]")
    notice = app.wait_css("[data-testid=approval-dialog] [data-testid=hidden-characters]")
    app.wait("the notice's words", lambda: "This command contains hidden characters" in notice.text)
    app.wait_texts("[data-testid=effect-command]", [SHOWN])
    assert ESC not in dialog.text and RLO not in dialog.text
    app.wait_css("[data-testid=tool-card][data-tool=run_command]")
    app.wait_texts("[data-testid=tool-subject]", [SHOWN])
    app.wait_attr("[data-testid=tool-card][data-tool=run_command] [data-testid=tool-subject]", "title", SHOWN)
    assert raw_on_page(app) == []
    app.screenshot("hidden-characters")

    # The arguments editor writes them as JSON escapes: editable, and the same value.
    app.css("[data-testid=edit]")[0].click()
    edit = app.wait_css("[data-testid=edit-arguments]")
    value = app.wait("the arguments in the editor", lambda: edit.get_attribute("value"))
    assert "\\u001b[2J\\u202etxt.exe" in value, value
    assert raw_on_page(app) == []
    app.screenshot("hidden-characters-edit")
    app.by_text("[data-testid=approval-dialog] button", "Back").click()

    app.css("[data-testid=reject]")[0].click()
    app.type_into(app.wait_css("[data-testid=reject-reason]"), "it hides what it does")
    app.css("[data-testid=confirm-reject]")[0].click()
    app.wait("the answer after the rejection", lambda: REJECTED in assistant_texts(app))
    app.wait("the task to complete", lambda: app.css("[data-testid=task][data-status=completed]"))
    app.wait_attr("[data-testid=tool-card]", "data-status", "rejected")
    # The card's arguments, opened.
    app.driver.execute_script("document.querySelectorAll('.tool-args').forEach(d => d.open = true)")
    # JSON writes the escape as \u001b; the bidi override is made visible after it.
    assert any("\\u001b[2J\\u{202e}txt.exe" in t for t in app.texts(".tool-args pre")), app.texts(".tool-args pre")
    assert raw_on_page(app) == []

    # The task's timeline, every row opened: escaped too.
    app.wait_css("[data-testid=task-details-link]").click()
    app.wait_loaded("task-details")
    app.wait("the timeline", lambda: app.css("[data-testid=timeline-row]"))
    # Each row opens on a click (rows below the fold too).
    app.driver.execute_script("document.querySelectorAll('[data-testid=timeline-row]').forEach(r => r.click())")
    app.wait("the payloads", lambda: len(app.css("[data-testid=timeline-payload]")) == len(app.css("[data-testid=timeline-row]")))
    payloads = "\n".join(app.texts("[data-testid=timeline-payload]"))
    assert "\\u{202e}txt.exe" in payloads and "\\u001b[2J" in payloads, payloads
    assert raw_on_page(app) == []
    app.driver.execute_script(
        "document.querySelector('[data-testid=timeline-row][data-type=approval_required]').scrollIntoView({block: 'start'})"
    )
    app.screenshot("hidden-characters-timeline")
