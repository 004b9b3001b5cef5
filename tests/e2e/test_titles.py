"""A new session is named by the model after its first answer: the sessions list and the
header show the first line of the message at once, then the model's few words. The model
is a real OpenAI-compatible HTTP server on 127.0.0.1 (written here: it streams the run's
answer and gives the title as one answer, and keeps every request). Settings → General says
whether to ask; "Never" keeps the first line."""
from __future__ import annotations

import http.server
import json
import threading

from conftest import App, AppEnv

ANSWER = "The build fails because serde is missing from Cargo.toml."
TITLE = "Broken cargo build"


class _ChatServer:
    def __init__(self) -> None:
        self.bodies: list[dict] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the handler's name)
                raw = self.rfile.read(int(self.headers.get("content-length", "0")))
                if not self.path.endswith("/chat/completions"):
                    self.send_response(404)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                body = json.loads(raw)
                outer.bodies.append(body)
                if body.get("stream"):
                    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                             "choices": [{"index": 0, "delta": {"role": "assistant", "content": ANSWER}, "finish_reason": None}]}
                    end = {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                    out = f"data: {json.dumps(chunk)}\n\ndata: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode()
                    kind = "text/event-stream"
                else:
                    out = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                                      "choices": [{"index": 0, "message": {"role": "assistant", "content": f'"{TITLE}."'},
                                                   "finish_reason": "stop"}]}).encode()
                    kind = "application/json"
                self.send_response(200)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def do_GET(self) -> None:  # noqa: N802
                self.send_response(404)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def title_requests(self) -> list[dict]:
        return [b for b in self.bodies if b["messages"][0]["content"].startswith("Write a title for this conversation")]

    def close(self) -> None:
        self.server.shutdown()


def _start(app: App, folder: str, goal: str) -> None:
    app.go("#/new")
    app.wait_css("[data-testid=new-session-view]")
    field = app.wait_css("[data-testid=workspace-input]")
    app.clear(field)
    app.type_into(field, folder)
    box = app.wait_css("[data-testid=composer-input]")
    app.type_into(box, goal)
    app.press_enter(box)
    app.wait_css("[data-testid=session-view]")
    app.wait("the run to end", lambda: app.css("[data-testid=task][data-status=completed]"), timeout=60)


def _titles(app: App) -> list[str]:
    return app.texts("[data-testid=session-item] .session-title")


def test_a_new_session_is_named_by_the_model_after_its_first_answer_and_never_when_off(app_env: AppEnv, launch) -> None:
    server = _ChatServer()
    try:
        app_env.cli("provider", "set", "--base-url", server.base, "--model", "m")
        ws = app_env.workspace("proj")
        app = launch()
        _start(app, str(ws), "why does cargo build fail here?\nit worked yesterday")
        assert ANSWER in "".join(app.texts("[data-testid=assistant-message]"))

        # The list and the header take the model's title, without a reload.
        app.wait("the model's title in the sessions list", lambda: _titles(app) == [TITLE])
        app.wait("the model's title in the header", lambda: app.texts("[data-testid=session-title]") == [TITLE])
        assert len(server.title_requests()) == 1
        asked = server.title_requests()[0]
        assert not asked.get("tools") and asked.get("max_tokens") == 24, asked
        app.screenshot("named-by-the-model")

        # The default asks free models only; "Never" is kept, and a new session keeps its first line.
        app.open_settings()
        app.wait_attr("[data-testid=titles-free_models]", "aria-checked", "true")
        app.css("[data-testid=titles-off]")[0].click()
        app.wait_attr("[data-testid=titles-off]", "aria-checked", "true")
        app.driver.execute_script("document.querySelector('[data-testid=titles-settings]').scrollIntoView()")
        app.screenshot("titles-setting-never")
        assert "session titles: the first line of the first message (off)" in app_env.cli("provider", "titles").stdout

        _start(app, str(ws), "list the crates this workspace depends on")
        app.wait("both sessions listed", lambda: len(_titles(app)) == 2)
        assert sorted(_titles(app)) == sorted([TITLE, "list the crates this workspace depends on"]), _titles(app)
        assert len(server.title_requests()) == 1, "nothing may be asked with titles off"
    finally:
        server.close()
