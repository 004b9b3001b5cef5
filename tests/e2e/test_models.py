"""The built-in model in the window: the first run with no provider offers the model on
this computer and it answers through the real `llama-server` (the header says "on this
computer", the thinking line says the model is starting, Settings shows the server ready);
the Models screen downloads a GGUF file from a local HTTP server with a progress bar that
advances, Cancel leaves no model, the download then resumes and is listed, a file that is
not GGUF is refused with the runtime's sentence, and Remove asks first.

The first test needs what `scripts/setup.sh` installs (`llama-server` and SmolLM2 under
`${POCKETPILOT_PEERS:-$HOME/.cache/pocketpilot-peers}`): skipped with a loud message
without it, failed when POCKETPILOT_REQUIRE_MODEL_SERVER is set."""
from __future__ import annotations

import os
import re
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import App, AppEnv

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def peers() -> Path:
    return Path(os.environ.get("POCKETPILOT_PEERS") or Path.home() / ".cache" / "pocketpilot-peers")


def require_model_server() -> Path:
    p = peers()
    if (p / "llama.cpp/build-portable/bin/llama-server").exists() and (p / "models" / MODEL_FILE).exists():
        return p
    msg = f"the built-in model is not installed under {p} (run scripts/setup-model-server.sh)"
    if os.environ.get("POCKETPILOT_REQUIRE_MODEL_SERVER"):
        pytest.fail(msg)
    pytest.skip(msg)


def use_builtin_model(app_env: AppEnv, peers_dir: Path) -> None:
    """The test command turns the built-in model off for every test (POCKETPILOT_LOCAL_MODEL=off,
    which tauri-driver passes on to the app); this one turns it back on for its app."""
    app_env.env["POCKETPILOT_LOCAL_MODEL"] = "on"
    app_env.env["POCKETPILOT_PEERS"] = str(peers_dir)


def test_first_run_offers_the_builtin_model_and_it_answers(app_env: AppEnv, launch) -> None:
    use_builtin_model(app_env, require_model_server())
    ws = app_env.workspace("hello")
    app = launch()

    # No provider, the built-in model present: the welcome offers it, not the provider form.
    app.wait_css("[data-testid=welcome-view]", timeout=60)
    assert not app.css("[data-testid=first-run]")
    name = app.wait("the built-in model's name", lambda: next(iter(app.texts("[data-testid=builtin-name]")), None))
    assert re.fullmatch(r"Built-in: smollm2.* 135M.*, runs on this computer", str(name), re.IGNORECASE), name
    assert app.texts("[data-testid=choose-local-server] strong") == ["Ollama or another local server"]
    assert app.texts("[data-testid=choose-openai-compatible] strong") == ["OpenAI-compatible server"]
    # The built-in choice has the focus: Enter takes it.
    assert app.driver.execute_script("return document.activeElement.dataset.testid") == "choose-builtin"
    app.screenshot("welcome")

    app.css("[data-testid=choose-builtin]")[0].click()
    app.wait_css("[data-testid=new-session-view]")
    assert not app.css("[data-testid=composer-blocked]"), "sending must be allowed with the built-in model"
    field = app.wait_css("[data-testid=workspace-input]")
    app.clear(field)
    app.type_into(field, str(ws))
    box = app.wait_css("[data-testid=composer-input]")
    app.type_into(box, "Say hello")
    app.press_enter(box)
    app.wait_css("[data-testid=session-view]")

    # The server loads the model first: the thinking line says so (from the server's event).
    app.wait("the thinking line to say the model is starting", lambda: app.css("[data-testid=thinking-starting]"), timeout=120)
    assert app.texts("[data-testid=thinking]") == ["Starting the local model…"]
    app.screenshot("starting-the-local-model")

    # Two slow cores: loading and answering take minutes, not seconds.
    app.wait("the run to end", lambda: app.css("[data-testid=task][data-status=completed], [data-testid=task][data-status=failed]"), timeout=600)
    status = app.css("[data-testid=task]")[0].get_attribute("data-status")
    assert status == "completed", f"the run ended {status}: {app.texts('[data-testid=task]')}"
    answer = app.wait("an answer", lambda: "".join(app.texts("[data-testid=assistant-message]")).strip())
    assert answer
    header = app.wait("the header's model", lambda: next(iter(app.texts("[data-testid=run-model]")), None), timeout=30)
    assert "on this computer" in str(header) and "smollm2 135m" in str(header).lower(), header
    app.wait_attr("[data-testid=run-model]", "data-local", "true")
    app.screenshot("answered-on-this-computer")

    # Settings: the server is ready, on a port, with its memory; the settings are there.
    app.go("#/settings")
    app.wait_css("[data-testid=settings-view][data-loaded=true]", timeout=30)
    app.wait_attr("[data-testid=local-model-settings] [data-testid=server-status]", "data-state", "ready", timeout=30)
    line = app.texts("[data-testid=local-model-settings] [data-testid=server-status]")[0]
    assert re.search(r"on port \d+, using \d+ MiB of memory", line), line
    assert app.css("[data-testid=local-enabled]")[0].is_selected()
    assert app.css("[data-testid=local-idle]")[0].get_attribute("value") == "10"
    app.driver.execute_script("document.querySelector('[data-testid=local-model-settings]').scrollIntoView()")
    app.screenshot("settings-server-ready")


def gguf_bytes(size: int) -> bytes:
    """A valid GGUF v3 file with no tensors and a few metadata keys, padded to `size` bytes
    (the padding stands for the weights: the header says there are none to read)."""

    def text(s: str) -> bytes:
        b = s.encode()
        return struct.pack("<Q", len(b)) + b

    string, u32, u64 = 8, 4, 10
    kv = [
        ("general.architecture", string, text("llama")),
        ("general.name", string, text("Tiny Test")),
        ("general.parameter_count", u64, struct.pack("<Q", 1_000_000)),
        ("general.file_type", u32, struct.pack("<I", 3)),
        ("llama.context_length", u32, struct.pack("<I", 2048)),
    ]
    head = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kv))
    for key, kind, value in kv:
        head += text(key) + struct.pack("<I", kind) + value
    return head + bytes(size - len(head))


class FileServer:
    """A local HTTP server for model files that sends no byte past `limit` until the test
    raises it, at a slow steady pace, so a download's progress can be seen moving and
    cancelled midway. HEAD and Range are answered like a real file host."""

    CHUNK = 64 * 1024

    def __init__(self, files: dict[str, bytes]):
        self.files = files
        self.limit = 0
        self.closing = False
        self.gate = threading.Condition()
        self.ranges: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _head(self) -> tuple[bytes, int] | None:
                body = outer.files.get(self.path.lstrip("/"))
                if body is None:
                    self.send_error(404)
                    return None
                start = 0
                asked = self.headers.get("Range")
                if asked:
                    outer.ranges.append(asked)
                    start = int(re.match(r"bytes=(\d+)-", asked).group(1))
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(body) - start))
                self.send_header("Content-Type", "application/octet-stream")
                self.end_headers()
                return body, start

            def do_HEAD(self) -> None:
                self._head()

            def do_GET(self) -> None:
                found = self._head()
                if not found:
                    return
                body, at = found
                try:
                    while at < len(body):
                        with outer.gate:
                            outer.gate.wait_for(lambda: outer.closing or outer.limit > at, timeout=600)
                            if outer.closing:
                                return
                            end = min(len(body), at + outer.CHUNK, outer.limit)
                        self.wfile.write(body[at:end])
                        self.wfile.flush()
                        at = end
                        # sleep: the pace of a slow file host, so that progress takes real time.
                        time.sleep(0.04)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the download was cancelled

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{name}"

    def allow(self, limit: int) -> None:
        with self.gate:
            self.limit = limit
            self.gate.notify_all()

    def close(self) -> None:
        with self.gate:
            self.closing = True
            self.gate.notify_all()
        self.server.shutdown()
        self.server.server_close()


def percent(app: App) -> float:
    found = app.css("[data-testid=pull-progress]")
    value = found[0].get_attribute("data-percent") if found else ""
    return float(value) if value else 0.0


def rows(app: App) -> list[str]:
    return [e.get_attribute("data-name") for e in app.css("[data-testid=model-row]")]


def start_download(app: App, url: str) -> None:
    field = app.wait_css("[data-testid=pull-url]")
    app.clear(field)
    app.type_into(field, url)
    app.css("[data-testid=pull-start]")[0].click()


def test_a_download_shows_progress_and_cancel_leaves_no_model(app_env: AppEnv, launch) -> None:
    # No shipped model here: the list holds only what this test adds.
    app_env.env["POCKETPILOT_PEERS"] = str(app_env.root / "no-peers")
    size = 8 * 1024 * 1024
    host = FileServer({"tiny-test.gguf": gguf_bytes(size), "notes.gguf": b"these are notes, not a model\n" * 4000})
    try:
        app = launch()
        app.go("#/settings")
        app.wait_css("[data-testid=settings-view][data-loaded=true]", timeout=30)
        app.wait_attr("[data-testid=local-model-settings] [data-testid=server-status]", "data-state", "stopped")
        app.css("[data-testid=nav-models]")[0].click()
        app.wait_css("[data-testid=models-view][data-loaded=true]")
        app.wait_css("[data-testid=models-empty]")
        models_dir = app_env.data_dir / "models"

        # Half the file may come; the bar advances while it does.
        host.allow(size // 2)
        start_download(app, host.url("tiny-test.gguf"))
        first = app.wait("progress", lambda: percent(app) or None, timeout=30)
        app.screenshot("download-progress")
        later = app.wait("the progress bar to advance", lambda: (p := percent(app)) > first and p, timeout=30)
        assert 0 < first < later <= 50.5, (first, later)
        assert "of 8.0 MiB" in app.texts("[data-testid=pull-figures]")[0]

        # Cancel: no model, nothing listed, and the form is back.
        app.css("[data-testid=pull-cancel]")[0].click()
        app.wait("the download to stop", lambda: not app.css("[data-testid=pull-progress]"), timeout=30)
        app.wait("the cancel to be said", lambda: any("cancelled" in t for t in app.texts("[data-testid=models-status]")))
        assert rows(app) == []
        assert app.css("[data-testid=models-empty]")
        assert not list(models_dir.glob("*.json")) and not list(models_dir.glob("*.gguf"))
        app.screenshot("download-cancelled")

        # Again, with the whole file allowed: it resumes where it stopped and is listed.
        host.allow(size)
        start_download(app, host.url("tiny-test.gguf"))
        app.wait("the model in the list", lambda: rows(app) == ["tiny-test"], timeout=60)
        assert any(r.startswith("bytes=") and r != "bytes=0-" for r in host.ranges), host.ranges
        row = app.css("[data-testid=model-row]")[0]
        assert row.get_attribute("data-in-use") == "true"
        text = row.text
        for expected in ("Tiny Test", "1M", "Q4_1", "2,048 tokens", "8.0 MiB"):
            assert expected in text, (expected, text)
        assert any("Downloaded Tiny Test" in t for t in app.texts("[data-testid=models-status]"))
        app.screenshot("downloaded-and-listed")

        # A file that is not GGUF: the runtime's sentence, and no model.
        start_download(app, host.url("notes.gguf"))
        error = app.wait("the refusal", lambda: next(iter(app.texts("[data-testid=models-error]")), None), timeout=60)
        assert error == f"{host.url('notes.gguf')} is not a GGUF model file", error
        assert rows(app) == ["tiny-test"]
        app.screenshot("not-gguf-refused")

        # Remove asks first: Cancel keeps the model, the confirmation removes it.
        app.css("[data-testid=model-remove]")[0].click()
        app.wait_css("[data-testid=remove-confirm]")
        assert app.driver.execute_script("return document.activeElement.dataset.testid") == "remove-confirm-no"
        app.screenshot("remove-confirmation")
        app.css("[data-testid=remove-confirm-no]")[0].click()
        app.wait("the dialog to close", lambda: not app.css("[data-testid=remove-confirm]"))
        assert rows(app) == ["tiny-test"]
        app.css("[data-testid=model-remove]")[0].click()
        app.wait_css("[data-testid=remove-confirm]")
        app.css("[data-testid=remove-confirm-yes]")[0].click()
        app.wait("the model to go", lambda: rows(app) == [] and app.css("[data-testid=models-empty]"))
        assert not (models_dir / "tiny-test.gguf").exists()
        app.screenshot("removed")
    finally:
        host.close()
