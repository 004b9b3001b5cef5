"""A first run opens on the welcome: it finds the model servers already running on this
computer (here a real HTTP server listing two models, named to the app as a local server)
and one click makes it the provider; the empty session then offers three example goals for
the chosen folder, which go into the box to edit before sending."""
from __future__ import annotations

import http.server
import json
import threading

from conftest import App, AppEnv


class _Models(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (the handler's name)
        body = json.dumps({"data": [{"id": "qwen2.5-7b"}, {"id": "llama-3.1-8b"}]}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_server_running_here_is_found_and_chosen_then_example_goals_start_a_session(app_env: AppEnv, launch) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Models)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        app_env.app_env["POCKETPILOT_LOCAL_SERVERS"] = base
        app: App = launch()
        found = app.wait_css(f"[data-testid=found-server][data-base-url='{base}']")
        assert f"Server at 127.0.0.1:{server.server_address[1]}, running now" in found.text, found.text
        assert "2 models" in found.text, found.text
        app.screenshot("welcome-found")
        app.driver.execute_script(
            "const s = arguments[0].querySelector('[data-testid=found-server-model]'); s.value = 'qwen2.5-7b';"
            "s.dispatchEvent(new Event('change', {bubbles: true}));",
            found,
        )
        app.wait("the choice named", lambda: "Use qwen2.5-7b" in found.text)
        found.find_element("css selector", "[data-testid=use-found-server]").click()
        app.wait_css("[data-testid=new-session-view]")
        shown = app_env.cli("provider", "show").stdout
        assert base in shown and "qwen2.5-7b" in shown, shown
        assert not app.css("[data-testid=composer-blocked]")

        ws = app_env.workspace("recipes")
        field = app.wait_css("[data-testid=workspace-input]")
        app.clear(field)
        app.type_into(field, str(ws))
        app.wait_count("[data-testid=example-goal]", 3)
        goals = app.texts("[data-testid=example-goal]")
        assert all("recipes" in g for g in goals), goals
        app.css("[data-testid=example-goal]")[0].click()
        app.wait_attr("[data-testid=composer-input]", "value", goals[0])
        assert app.driver.execute_script("return document.activeElement.dataset.testid") == "composer-input"
        app.screenshot("example-goals")
    finally:
        server.shutdown()
