"""Issue 20: the window as people expect it. Each test drives the real window and leaves
screenshots under the test output (E2E_OUTPUT)."""
from __future__ import annotations

import json
from pathlib import Path

from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

from conftest import App, AppEnv

LONG = "a1b2c3d4" * 40  # 320 characters without a break: a hash, a path, a URL
LONG_LINE = "let x = " + "0123456789" * 30 + ";"


def start_session(app: App, workspace: Path, goal: str) -> None:
    app.go("#/new")
    field = app.wait_css("[data-testid=workspace-input]")
    app.clear(field)
    app.type_into(field, str(workspace))
    box = app.wait_css("[data-testid=composer-input]")
    app.type_into(box, goal)
    app.press_enter(box)
    app.wait("the session view", lambda: app.css("[data-testid=session-view]"))


def key(app: App, keys: str, *, ctrl: bool = False, shift: bool = False) -> None:
    """A key press on the focused element. Without a window manager WebKitWebDriver may
    refuse real key input; then the same keydown is dispatched to the focused element."""
    try:
        chain = ActionChains(app.driver)
        if ctrl:
            chain.key_down(Keys.CONTROL)
        if shift:
            chain.key_down(Keys.SHIFT)
        chain.send_keys(keys)
        if shift:
            chain.key_up(Keys.SHIFT)
        if ctrl:
            chain.key_up(Keys.CONTROL)
        chain.perform()
    except WebDriverException:
        name = {Keys.TAB: "Tab", Keys.ESCAPE: "Escape", Keys.ENTER: "Enter"}[keys]
        app.driver.execute_script(
            "const el = document.activeElement || document.body;"
            "el.dispatchEvent(new KeyboardEvent('keydown', { key: arguments[0], ctrlKey: arguments[1],"
            " shiftKey: arguments[2], bubbles: true, cancelable: true }));",
            name,
            ctrl,
            shift,
        )


def active_testid(app: App) -> str | None:
    return app.driver.execute_script("const a = document.activeElement; return a ? a.getAttribute('data-testid') : null;")


def focus_in_dialog(app: App) -> bool:
    return app.driver.execute_script(
        "const d = document.querySelector('[data-testid=approval-dialog]');"
        "return !!d && d.contains(document.activeElement);"
    )


def test_a_long_unbroken_string_wraps_and_code_scrolls_inside(app_env: AppEnv, launch) -> None:
    answer = f"The hash is {LONG}.\n\n```rust\n{LONG_LINE}\n```\n"
    script = app_env.script("long", [{"text": answer, "chunk_size": 40}])
    app = launch(script)
    start_session(app, app_env.workspace("long"), f"Check {LONG}")
    app.wait("the answer", lambda: app.css("[data-testid=task][data-status=completed] [data-testid=assistant-message] pre"))
    app.settle()
    sizes = app.driver.execute_script(
        "const s = document.querySelector('.session-view .scroll');"
        "const u = document.querySelector('[data-testid=user-message]');"
        "const a = document.querySelector('[data-testid=assistant-message]');"
        "const pre = a.querySelector('pre');"
        "return { scrollW: s.scrollWidth, clientW: s.clientWidth, userRight: u.getBoundingClientRect().right,"
        " answerRight: a.getBoundingClientRect().right, viewRight: s.getBoundingClientRect().right,"
        " preScroll: pre.scrollWidth, preClient: pre.clientWidth, preOverflow: getComputedStyle(pre).overflowX };"
    )
    # The transcript does not scroll sideways; both bubbles stay inside it.
    assert sizes["scrollW"] <= sizes["clientW"] + 1, sizes
    assert sizes["userRight"] <= sizes["viewRight"] + 1, sizes
    assert sizes["answerRight"] <= sizes["viewRight"] + 1, sizes
    # The code block keeps its line and scrolls inside itself.
    assert sizes["preScroll"] > sizes["preClient"], sizes
    assert sizes["preOverflow"] == "auto", sizes
    # Its header names the language and has a copy button.
    app.wait_texts("[data-testid=assistant-message] .code-lang", ["rust"])
    app.wait_css("[data-testid=assistant-message] [data-testid=code-copy]").click()
    app.wait_texts("[data-testid=code-copy]", ["Copied"])
    app.screenshot("long-unbroken-string")


STREAMED = (
    "Here is **the plan**, formatted:\n\n"
    "- first *item*\n- second item\n\n"
    "```python\nprint('hello')\n```\n\n"
    "Now a long tail that keeps streaming while we look at the window. " * 6
)


def test_markdown_is_formatted_while_it_streams(app_env: AppEnv, launch) -> None:
    script = app_env.script("md", [{"text": STREAMED, "chunk_size": 3, "chunk_delay_ms": 40}])
    app = launch(script)
    start_session(app, app_env.workspace("md"), "Show me a plan")

    def formatted_mid_stream():
        return app.driver.execute_script(
            "const b = document.querySelector('[data-testid=streaming-message]');"
            "if (!b) return null;"
            "const ok = b.querySelector('strong') && b.querySelectorAll('li').length === 2"
            " && b.querySelector('pre code') && b.querySelector('em');"
            "return ok ? b.textContent : null;"
        )

    text = app.wait("formatted markdown in the streaming bubble", formatted_mid_stream, timeout=30)
    # Still streaming: the bubble is there and the answer is not complete yet.
    assert app.css("[data-testid=streaming-message]")
    assert not app.css("[data-testid=task][data-status=completed]")
    assert "**" not in text and "```" not in text, text
    assert "the plan" in text
    app.screenshot("streaming-markdown-mid-way")
    # The stable blocks are drawn once: the list node survives further frames (the tail
    # grows by more than a few chunks meanwhile, or the answer ends).
    app.driver.execute_script("window.__list = document.querySelector('[data-testid=streaming-message] ul');")
    grown = len(text) + 30
    app.wait(
        "the tail to stream on",
        lambda: app.driver.execute_script(
            "const b = document.querySelector('[data-testid=streaming-message]');"
            "return !b || b.textContent.length >= arguments[0];",
            grown,
        ),
    )
    still = app.driver.execute_script(
        "const b = document.querySelector('[data-testid=streaming-message]');"
        "return !b || b.querySelector('ul') === window.__list;"
    )
    assert still, "the finished list was re-rendered while the tail streamed"
    app.wait("the answer", lambda: app.css("[data-testid=task][data-status=completed]"), timeout=60)
    app.wait_css("[data-testid=assistant-message] strong")
    app.screenshot("streaming-markdown-done")


def test_an_unreachable_model_reads_plainly_with_retry_and_settings(app_env: AppEnv, launch) -> None:
    app_env.cli("provider", "set", "--base-url", "http://127.0.0.1:9/v1", "--model", "m")
    app = launch()
    start_session(app, app_env.workspace("err"), "Say hello")
    app.wait("the failure", lambda: app.css("[data-testid=task][data-status=failed] [data-testid=failure-sentence]"), timeout=90)
    app.wait_texts("[data-testid=failure-sentence]", ["Can't reach the model server at 127.0.0.1:9."])
    app.wait_attr("[data-testid=notice]", "data-error-kind", "model_connect")
    # The details are behind a disclosure, closed.
    app.wait_attr("[data-testid=failure-detail]", "open", None)
    app.wait("the failure's detail", lambda: any("127.0.0.1:9" in t for t in app.texts("[data-testid=failure-detail] pre")))
    app.screenshot("error-with-retry")

    app.css("[data-testid=retry]")[0].click()
    app.wait("a second, retried run", lambda: len(app.css("[data-testid=task]")) == 2, timeout=30)
    app.wait("it fails the same way", lambda: len(app.css("[data-testid=task][data-status=failed]")) == 2, timeout=90)
    app.wait_texts("[data-testid=user-message]", ["Say hello", "Say hello"])

    app.css("[data-testid=open-settings]")[0].click()
    app.wait_loaded("settings-view")
    app.wait_css("[data-testid=test-connection]").click()

    status = app.wait(
        "the connection test to answer",
        lambda: next((t for t in app.texts("[data-testid=provider-status]") if t), None),
        timeout=90,
    )
    assert not str(status).lower().startswith("invalid arguments"), status
    assert str(status).startswith("Can't reach the model server at 127.0.0.1:9."), status
    app.wait("the connection test's detail", lambda: any("127.0.0.1:9" in t for t in app.texts("[data-testid=provider-status-detail] pre")))
    app.screenshot("test-connection-error")


def test_sending_is_refused_while_no_model_is_set(app_env: AppEnv, launch) -> None:
    app = launch()  # nothing configured
    # The welcome first; the person goes on to a new session without choosing a model.
    app.wait_css("[data-testid=welcome-view] [data-testid=choose-openai-compatible]").click()
    app.wait("the settings (first run)", lambda: app.css("[data-testid=first-run]"))
    app.go("#/new")
    app.wait("the reason in place", lambda: app.css("[data-testid=composer-blocked]"))
    app.wait("the reason", lambda: any("No model is set up" in t for t in app.texts("[data-testid=composer-blocked]")))
    box = app.wait_css("[data-testid=composer-input]")
    app.clear(app.wait_css("[data-testid=workspace-input]"))
    app.type_into(app.css("[data-testid=workspace-input]")[0], str(app_env.workspace("none")))
    app.type_into(box, "Do something")
    app.wait("Send to be disabled", lambda: app.css("[data-testid=send]")[0].get_attribute("disabled") is not None)
    app.press_enter(box)
    # Nothing may happen: no session, here or in the store, for as long as a send takes.
    app.holds(
        "no goal sent with no model",
        lambda: app.css("[data-testid=new-session-view]") and not app.css("[data-testid=session-item]"),
        seconds=1.5,
    )
    assert json.loads(app_env.cli("sessions", "--json").stdout) == [], "a session was created with no model"
    app.screenshot("no-model-refused")


def test_the_approval_dialog_from_the_keyboard(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("keys")
    # Another approval is already waiting (a CLI run without a terminal leaves it pending).
    other = app_env.script(
        "other", [{"tool_calls": [{"name": "run_command", "arguments": {"command": "echo other"}}]}, {"text": "ok"}]
    )
    app_env.cli("run", "--workspace", str(ws), "--goal", "Run echo", "--provider", f"scripted:{other}", check=False)
    script = app_env.script(
        "write",
        [
            {"text": "Writing.", "tool_calls": [{"name": "write_file", "arguments": {"path": "k.txt", "content": "hi\n"}}]},
            {"text": "Done."},
        ],
    )
    app = launch(script)
    start_session(app, ws, "Write k.txt")
    app.wait("the approval dialog", lambda: app.css("[data-testid=approval-dialog]"))
    app.wait("focus inside the dialog", lambda: focus_in_dialog(app))
    # The safe choice first: Reject… (it only asks for a reason).
    app.wait_equal("focus on Reject…", lambda: active_testid(app), "reject")
    # The reason line never shows backticks; the capability is under Details, as code.
    reason = app.wait("the reason", lambda: next(iter(app.texts("[data-testid=approval-reason]")), None))
    assert "`" not in reason, reason
    capability = app.driver.execute_script(
        "return document.querySelector('[data-testid=approval-details] code[data-testid=approval-capability]').textContent"
    )
    assert capability == "fs:write", capability
    scope = app.wait("the session scope", lambda: next(iter(app.texts("[data-testid=approve-session-scope]")), None))
    assert "every fs:write" in scope and "in this session" in scope, scope
    app.wait_texts("[data-testid=approve-session-scope] code", ["fs:write"])
    # The other waiting approval is named (the list of approvals arrives on its own).
    app.wait("the other approval named", lambda: any("run_command" in t for t in app.texts("[data-testid=approvals-waiting]")))
    app.screenshot("approval-keyboard-open")

    # Tab cycles inside the dialog: as many presses as it has stops come back to the start.
    stops = app.driver.execute_script(
        "const d = document.querySelector('[data-testid=approval-dialog]');"
        "return [...d.querySelectorAll('button:not([disabled]), textarea, input, summary, a[href]')]"
        ".filter(e => e.offsetParent !== null).length;"
    )
    seen = []
    for _ in range(stops):
        key(app, Keys.TAB)
        assert focus_in_dialog(app), "Tab left the dialog"
        seen.append(active_testid(app))
    assert seen[-1] == "reject", seen
    key(app, Keys.TAB, shift=True)
    assert focus_in_dialog(app)

    # Esc closes it without deciding: the call still waits, nothing is written.
    key(app, Keys.ESCAPE)
    app.wait("the dialog to close", lambda: not app.css("[data-testid=approval-dialog]"))
    app.wait_css("[data-testid=tool-card][data-status=waiting_approval]")
    app.wait_css("[data-testid=approval-waiting]")
    assert not (ws / "k.txt").exists()
    app.screenshot("approval-keyboard-closed")

    # Reopened, Ctrl+Enter approves.
    app.css("[data-testid=reopen-approval]")[0].click()
    app.wait("the dialog again", lambda: focus_in_dialog(app))
    key(app, Keys.ENTER, ctrl=True)
    app.wait("the write", lambda: (ws / "k.txt").exists(), timeout=20)
    app.wait("the answer", lambda: app.css("[data-testid=task][data-status=completed]"), timeout=30)
    assert (ws / "k.txt").read_text() == "hi\n"
    # The write's card names its file and shows the diff.
    app.wait_texts("[data-testid=tool-subject]", ["k.txt"])
    app.wait("the card's diff", lambda: any("+hi" in t for t in app.texts("[data-testid=tool-diff]")))
    app.screenshot("approval-keyboard-approved")


def test_work_in_progress_is_visible(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("busy")
    app_env.cli("policy", "allow", "shell:execute", "--workspace", str(ws), check=False)
    script = app_env.script(
        "busy",
        [
            {"delay_ms": 2500, "text": "Running it.", "tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 4"}}]},
            {"text": "Slept."},
        ],
    )
    app = launch(script)
    start_session(app, ws, "Sleep a little")
    app.wait("thinking before the first token", lambda: app.css("[data-testid=thinking]"), timeout=10)
    app.wait("the sidebar marks the session busy", lambda: app.css("[data-testid=session-item][data-activity=busy] [data-testid=session-activity]"))
    app.screenshot("thinking")
    if app.css("[data-testid=approval-dialog]"):
        app.css("[data-testid=approve]")[0].click()
    app.wait("the running tool", lambda: app.css("[data-testid=tool-card][data-status=running] [data-testid=tool-spinner]"), timeout=20)
    app.wait("thinking to end", lambda: not app.css("[data-testid=thinking]"))
    app.wait_texts("[data-testid=tool-subject]", ["sleep 4"])
    first = app.wait("the elapsed time", lambda: next(iter(app.texts("[data-testid=tool-elapsed]")), None))
    # The command runs 4 s: its elapsed time ticks at least once meanwhile.
    app.wait("the elapsed time to tick", lambda: next(iter(app.texts("[data-testid=tool-elapsed]")), first) != first, timeout=5)
    app.wait("step 1 in the run meter", lambda: app.open_header("details") and next(iter(app.texts("[data-testid=run-steps]")), "").startswith("Step 1/"))
    app.open_header("context")
    app.wait_css("[data-testid=head-context-panel] [data-testid=context-meter]")
    app.screenshot("running-tool")
    app.wait("the answer", lambda: app.css("[data-testid=task][data-status=completed]"), timeout=30)
    app.wait("the marker to clear", lambda: app.css("[data-testid=session-item][data-activity=idle]"))
    app.wait("step 2 in the run meter", lambda: app.open_header("details") and next(iter(app.texts("[data-testid=run-steps]")), "").startswith("Step 2/"))


def test_dark_mode_follows_the_system_and_a_manual_choice(app_env: AppEnv, launch) -> None:
    app_env.env["GTK_THEME"] = "Adwaita:dark"
    app_env.seed("Say hello", app_env.script("hi", [{"text": "Hello **there**.\n\n```sh\necho dark\n```"}]))
    app = launch()
    app.by_text("[data-testid=session-item]", "Say hello").click()
    app.wait("the answer", lambda: app.css("[data-testid=assistant-message]"))
    root_bg = lambda: app.driver.execute_script("return getComputedStyle(document.documentElement).getPropertyValue('--bg').trim();")
    # GTK_THEME=Adwaita:dark reaches the page through the window theme (no settings portal
    # here, so prefers-color-scheme alone would say light).
    app.wait("the system's dark theme", lambda: root_bg() == "#18181b")
    app.screenshot("dark-mode-system")
    # The manual choice wins and is kept across a reload.
    app.open_settings()
    # (Clicked through the DOM: the long Settings page may still be scrolling to a section.)
    choose = lambda which: app.driver.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].click();", app.wait_css(f"[data-testid=theme-{which}]"))
    choose("light")
    app.wait("the light theme", lambda: root_bg() == "#f7f7f8")
    choose("dark")
    app.wait("the dark theme", lambda: root_bg() == "#18181b")
    app.driver.refresh()
    app.wait("the app again", lambda: app.css("[data-testid=app][data-loaded=true]"))
    app.wait_equal("the kept dark theme", root_bg, "#18181b")
    assert app.driver.execute_script("return document.documentElement.dataset.theme") == "dark"
    app.by_text("[data-testid=session-item]", "Say hello").click()
    app.wait("the answer", lambda: app.css("[data-testid=assistant-message]"))
    app.screenshot("dark-mode")
    app.open_settings()
    choose("system")
    app.wait_equal("no manual theme", lambda: app.driver.execute_script("return document.documentElement.dataset.theme"), None)
    # Back to the system's scheme: dark, as the GTK theme says.
    app.wait_equal("the system's dark theme", root_bg, "#18181b")


def test_a_small_window_collapses_the_sidebar(app_env: AppEnv, launch) -> None:
    title = "A rather long goal that would never fit on one line of a small window at all"
    app_env.seed(title, app_env.script("t", [{"text": "Fine."}]))
    app = launch()
    app.driver.set_window_size(640, 480)
    app.wait("a narrow viewport", lambda: app.driver.execute_script("return window.innerWidth") <= 660)
    rect = lambda sel: app.driver.execute_script("return document.querySelector(arguments[0]).getBoundingClientRect().toJSON();", sel)
    app.wait("the sidebar to collapse", lambda: rect("[data-testid=sidebar]")["right"] <= 0)
    toggle = app.wait_css("[data-testid=sidebar-toggle]")
    app.wait("the sidebar toggle shown", toggle.is_displayed)
    app.screenshot("640x480-collapsed")
    toggle.click()
    app.wait("the drawer", lambda: rect("[data-testid=sidebar]")["left"] >= 0)
    app.screenshot("640x480-drawer")
    app.by_text("[data-testid=session-item]", "A rather long goal").click()
    app.wait("the drawer to close", lambda: rect("[data-testid=sidebar]")["right"] <= 0)
    h1 = app.wait("the session's title", lambda: next(iter(app.css("[data-testid=session-view][data-loaded=true] [data-testid=session-title]")), None))
    lines = app.driver.execute_script(
        "const h = arguments[0]; const s = getComputedStyle(h);"
        "return { h: h.getBoundingClientRect().height, lh: parseFloat(s.lineHeight) || parseFloat(s.fontSize) * 1.3,"
        " overflow: s.textOverflow, sw: h.scrollWidth, cw: h.clientWidth };",
        h1,
    )
    assert lines["h"] < 2 * lines["lh"], lines
    assert lines["overflow"] == "ellipsis" and lines["sw"] > lines["cw"], lines
    sizes = app.driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth];")
    assert sizes[0] <= sizes[1], sizes
    app.screenshot("640x480")


class _Models:
    """A real OpenAI-compatible /v1/models endpoint on 127.0.0.1, on its own thread."""

    def __init__(self) -> None:
        import http.server
        import threading

        self.paths: list[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                outer.paths.append(self.path)
                body = json.dumps({"object": "list", "data": [{"id": "qwen2.5-7b"}, {"id": "llama-3.1-8b"}]}).encode()
                self.send_response(200 if self.path == "/v1/models" else 404)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()


def test_settings_sections_presets_and_the_model_picker(app_env: AppEnv, launch) -> None:
    models = _Models()
    try:
        app_env.cli("provider", "set", "--base-url", "http://127.0.0.1:9/v1", "--model", "old")
        app = launch()
        # Every section reads its own settings: the page says when all of them have come.
        app.open_settings()
        # The side list names the sections, each one on the page.
        labels = app.wait("the settings nav", lambda: app.texts("[data-testid=settings-nav] button"))
        named = ["General", "Models", "Limits & money", "Sandbox", "Triggers", "Background", "Data", "Advanced", "About"]
        # In this order (other entries may sit between and after them).
        assert [label for label in labels if label in named] == named, labels
        for testid in ("provider-settings", "limits-settings", "triggers-settings", "mcp-settings", "keys-settings", "about"):
            app.wait_css(f"[data-testid={testid}]")
        # A preset fills the base URL.
        app.wait_css("[data-testid=preset-ollama]").click()
        app.wait_attr("[data-testid=base-url]", "value", "http://127.0.0.1:11434/v1")
        app.wait_attr("[data-testid=preset-ollama]", "aria-pressed", "true")
        # The picker asks the server in the form (not saved yet) for its models.
        field = app.css("[data-testid=base-url]")[0]
        app.clear(field)
        app.type_into(field, models.base)
        app.css("[data-testid=load-models]")[0].click()
        app.wait("the model list", lambda: app.css("[data-testid=model-picker] option[value='qwen2.5-7b']"))
        assert models.paths == ["/v1/models"]
        app.wait_equal("the listed models", lambda: app.texts("[data-testid=model-picker] option")[1:], ["llama-3.1-8b", "qwen2.5-7b"])
        app.driver.execute_script(
            "const s = document.querySelector('[data-testid=model-picker]'); s.value = 'qwen2.5-7b';"
            "s.dispatchEvent(new Event('change', { bubbles: true }));"
        )
        app.wait_attr("[data-testid=model]", "value", "qwen2.5-7b")
        app.css("[data-testid=nav-section-advanced]")[0].click()
        app.css("[data-testid=save-provider]")[0].click()
        app.wait("saved", lambda: "Saved." in app.texts("[data-testid=provider-status]"))
        shown = app_env.cli("provider", "show").stdout
        assert models.base in shown and "qwen2.5-7b" in shown
        app.css("[data-testid=nav-section-models]")[0].click()
        app.screenshot("settings-model-picker")
    finally:
        models.close()


def test_an_mcp_secret_is_set_write_only_from_the_window(app_env: AppEnv, launch) -> None:
    import os
    import shutil

    import pytest

    if not os.environ.get("E2E_KEYRING") or not shutil.which("secret-tool"):
        pytest.skip("needs the headless gnome-keyring of tests/e2e/run.sh and secret-tool")
    from test_settings import files_containing, keychain_lookup

    secret = "mcp-e2e-secret-never-shown"
    app_env.cli("mcp", "add", "notes", "--secret-env", "NOTES_TOKEN", "--", "true")
    app = launch()
    app.open_settings()
    row = app.wait_attr("[data-testid=mcp-secret][data-var=NOTES_TOKEN]", "data-stored", "false")
    app.type_into(row.find_element("css selector", "[data-testid=mcp-secret-input]"), secret)
    assert row.find_element("css selector", "[data-testid=mcp-secret-input]").get_attribute("type") == "password"
    row.find_element("css selector", "[data-testid=mcp-secret-save]").click()
    app.wait("stored", lambda: app.css("[data-testid=mcp-secret][data-var=NOTES_TOKEN][data-stored=true]"))
    app.wait_attr("[data-testid=mcp-secret-input]", "value", "")
    assert secret not in app.driver.page_source
    assert keychain_lookup("mcp:notes:NOTES_TOKEN") == secret
    assert files_containing(app_env.data_dir, secret.encode()) == []
    app.css("[data-testid=nav-section-advanced]")[0].click()
    app.screenshot("keys-mcp-secret")


def test_sessions_list_timeline_and_composer_polish(app_env: AppEnv, launch) -> None:
    app_env.seed("Summarize the notes", app_env.script("a", [{"text": "Summary."}]))
    app_env.seed("Plant the tomatoes", app_env.script("b", [{"text": "Planted."}]))
    slow = app_env.script("slow", [{"text": "word " * 400, "chunk_size": 5, "chunk_delay_ms": 50}])
    app = launch(slow)
    app.wait("two sessions", lambda: len(app.css("[data-testid=session-item]")) == 2)
    assert set(app.texts(".session-date")) == {"just now"}
    # Search narrows the list.
    app.type_into(app.css("[data-testid=session-search]")[0], "tomato")
    app.wait("one match", lambda: app.texts("[data-testid=session-item] .session-title") == ["Plant the tomatoes"])
    app.clear(app.css("[data-testid=session-search]")[0])
    app.wait("both again", lambda: len(app.css("[data-testid=session-item]")) == 2)

    # Rename in place from the header.
    app.by_text("[data-testid=session-item]", "Plant the tomatoes").click()
    app.wait_css("[data-testid=rename-session]").click()
    field = app.wait_css("[data-testid=rename-input]")
    app.clear(field)
    app.type_into(field, "Garden")
    app.press_enter(field)
    app.wait("the new title", lambda: "Garden" in app.texts("[data-testid=session-item] .session-title"))
    app.wait_texts("[data-testid=session-title]", ["Garden"])

    # The timeline names events plainly; a row opens to its payload.
    app.wait_css("[data-testid=task-details-link]").click()
    app.wait_loaded("task-details")
    names = app.wait("the timeline", lambda: app.texts("[data-testid=timeline-row] .event-name"))
    assert names[0] == "Task created" and names[-1] == "Task completed", names
    app.css("[data-testid=timeline-row][data-type=task_completed] .event-name")[0].click()
    payload = app.wait("the payload", lambda: app.texts("[data-testid=timeline-payload] pre"))
    assert "Planted." in payload[0]
    app.screenshot("timeline-payload")

    # The composer has a label; Esc in it stops a run, after a confirmation.
    app.go("#/new")
    app.wait_attr("[data-testid=composer-input]", "aria-label", "Message to the agent")
    start_session(app, app_env.workspace("stop"), "Talk for a long time")
    app.wait("streaming", lambda: app.css("[data-testid=streaming-message]"))
    box = app.wait_attr("[data-testid=composer-input]", "aria-label", "Message to the agent")
    box.click()
    try:
        box.send_keys(Keys.ESCAPE)
    except WebDriverException:
        app.driver.execute_script(
            "arguments[0].dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true, cancelable: true }));", box
        )
    app.wait("the confirmation", lambda: app.css("[data-testid=confirm-stop]"))
    # The slow answer streams for 10 s: still running while the question is asked.
    assert app.css("[data-testid=task][data-status=running]"), "Esc alone must not stop the run"
    app.screenshot("confirm-stop")
    app.css("[data-testid=confirm-stop-yes]")[0].click()
    app.wait("the run to stop", lambda: app.css("[data-testid=task][data-status=cancelled]"), timeout=20)


def page_colours(app: App) -> dict:
    return app.driver.execute_script(
        "const r = document.documentElement;"
        "return { bg: getComputedStyle(r).backgroundColor, text: getComputedStyle(r).color,"
        " theme: r.dataset.theme || null, desktop: r.dataset.desktopTheme || null,"
        " media: matchMedia('(prefers-color-scheme: dark)').matches };"
    )


def test_system_follows_a_dark_gtk_setting(app_env: AppEnv, launch) -> None:
    # The desktop says dark only through GTK's own settings file (no portal, no GTK_THEME).
    app_env.env.pop("GTK_THEME", None)
    app_env.config_file("gtk-3.0/settings.ini", "[Settings]\ngtk-application-prefer-dark-theme=1\n")
    app_env.seed("Say hello", app_env.script("hi", [{"text": "Hello in the **dark**."}]))
    app = launch()
    app.wait("the window theme", lambda: page_colours(app)["desktop"] is not None)
    colours = page_colours(app)
    assert colours["theme"] is None, colours  # the choice is System
    assert colours["desktop"] == "dark", colours
    assert colours["bg"] == "rgb(24, 24, 27)", colours
    app.by_text("[data-testid=session-item]", "Say hello").click()
    app.wait("the answer", lambda: app.css("[data-testid=assistant-message]"))
    app.screenshot("system-dark-from-gtk")
    # A manual Light still wins over the desktop, and System goes back to it.
    app.open_settings()
    choose = lambda which: app.driver.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].click();", app.wait_css(f"[data-testid=theme-{which}]"))
    app.wait_attr("[data-testid=theme-system]", "aria-checked", "true")
    choose("light")
    app.wait("light", lambda: page_colours(app)["bg"] == "rgb(247, 247, 248)")
    choose("system")
    app.wait("dark again", lambda: page_colours(app)["bg"] == "rgb(24, 24, 27)")


def test_system_is_light_without_a_dark_gtk_setting(app_env: AppEnv, launch) -> None:
    app_env.env.pop("GTK_THEME", None)
    app_env.config_file("gtk-3.0/settings.ini", "[Settings]\ngtk-application-prefer-dark-theme=0\n")
    app = launch()
    app.wait("the window theme", lambda: page_colours(app)["desktop"] is not None)
    colours = page_colours(app)
    assert colours["theme"] is None and colours["desktop"] == "light" and not colours["media"], colours
    assert colours["bg"] == "rgb(247, 247, 248)", colours
    app.screenshot("system-light")


def session_ids(app_env: AppEnv) -> dict[str, int]:
    """Title → id, as the CLI lists the sessions."""
    return {s["title"]: s["id"] for s in json.loads(app_env.cli("sessions", "--json").stdout)}


def test_a_session_is_deleted_after_a_confirmation(app_env: AppEnv, launch) -> None:
    app_env.seed("Keep this one", app_env.script("k", [{"text": "Kept."}]))
    app_env.seed("Delete me", app_env.script("d", [{"text": "Soon gone."}]))
    # A third session waits for an approval (a CLI run without a terminal leaves it so).
    ws = app_env.workspace("busy")
    waits = app_env.script("w", [{"tool_calls": [{"name": "run_command", "arguments": {"command": "echo hi"}}]}, {"text": "ok"}])
    app_env.cli("run", "--workspace", str(ws), "--goal", "Wait for me", "--provider", f"scripted:{waits}", check=False)
    ids = session_ids(app_env)
    assert set(ids) == {"Keep this one", "Delete me", "Wait for me"}
    app = launch()
    app.wait("three sessions", lambda: len(app.css("[data-testid=session-item]")) == 3)

    def open_dialog(title: str) -> None:
        app.by_text("[data-testid=session-item]", title).click()
        app.wait("the session", lambda: app.texts("[data-testid=session-title]") == [title])
        if title == "Wait for me":
            # Its approval opens on its own; Esc leaves it waiting.
            app.wait("the approval dialog", lambda: focus_in_dialog(app))
            key(app, Keys.ESCAPE)
            app.wait("the approval dialog to close", lambda: not app.css("[data-testid=approval-dialog]"))
        app.open_header("details")
        app.wait_css("[data-testid=delete-session]").click()
        app.wait("the confirmation", lambda: app.css("[data-testid=delete-confirm]"))

    open_dialog("Delete me")
    # It names the session, says it cannot be undone, and starts on Cancel.
    app.wait_texts("[data-testid=delete-session-name]", ["Delete me"])
    app.wait("cannot be undone", lambda: any("cannot be undone" in t for t in app.texts("[data-testid=delete-confirm]")))
    app.wait_attr("[data-testid=delete-confirm]", "role", "alertdialog")
    app.wait("focus on Cancel", lambda: active_testid(app) == "delete-confirm-no")
    app.screenshot("delete-confirmation")
    # Tab stays inside the dialog.
    key(app, Keys.TAB)
    app.wait_equal("focus on Delete", lambda: active_testid(app), "delete-confirm-yes")
    key(app, Keys.TAB)
    app.wait_equal("focus back on Cancel", lambda: active_testid(app), "delete-confirm-no")
    # Esc cancels; so does Cancel. The session stays, here and for the CLI.
    key(app, Keys.ESCAPE)
    app.wait("the dialog to close", lambda: not app.css("[data-testid=delete-confirm]"))
    assert "Delete me" in app.texts("[data-testid=session-item] .session-title")  # nothing was asked of the store
    app.open_header("details")
    app.wait_css("[data-testid=delete-session]").click()
    app.wait_css("[data-testid=delete-confirm-no]").click()
    app.wait("the dialog to close", lambda: not app.css("[data-testid=delete-confirm]"))
    assert "Delete me" in session_ids(app_env)
    app.wait_texts("[data-testid=session-title]", ["Delete me"])

    # Confirmed: the list drops it (through the change feed) and the window leaves it.
    app.open_header("details")
    app.wait_css("[data-testid=delete-session]").click()
    app.wait_css("[data-testid=delete-confirm-yes]").click()
    app.wait("the session to leave the list", lambda: "Delete me" not in app.texts("[data-testid=session-item] .session-title"))
    app.wait("the new-session screen", lambda: app.css("[data-testid=new-session-view]"))
    assert set(session_ids(app_env)) == {"Keep this one", "Wait for me"}
    app.screenshot("deleted")

    # A session still waiting for its approval is refused, with the reason, and stays.
    open_dialog("Wait for me")
    app.wait_css("[data-testid=delete-confirm-yes]").click()
    err = app.wait_attr("[data-testid=delete-error]", "data-error-kind", "session_active")
    app.wait("the reason", lambda: "stop that task first" in err.text)
    app.screenshot("delete-refused-while-waiting")
    app.wait_css("[data-testid=delete-confirm-no]").click()
    assert "Wait for me" in session_ids(app_env)

    # Deleted from the CLI while the window shows it: the window follows.
    app.by_text("[data-testid=session-item]", "Keep this one").click()
    app.wait("the session", lambda: app.texts("[data-testid=session-title]") == ["Keep this one"])
    out = app_env.cli("session", "delete", str(ids["Keep this one"]), "--yes").stdout
    assert "deleted session" in out
    app.wait("the list to follow the CLI", lambda: app.texts("[data-testid=session-item] .session-title") == ["Wait for me"])
    app.wait("the new-session screen", lambda: app.css("[data-testid=new-session-view]"))
