"""Issue 6: the first run leads to the settings screen; the API key typed there lands in
the OS keychain (a headless gnome-keyring here) and is never shown, stored or logged
anywhere else."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import App, AppEnv

KEY = "sk-e2e-9f3c1d2b-never-shown-again"
BASE_URL = "http://127.0.0.1:9/v1"
MODEL = "e2e-model"


def keychain_lookup(account: str) -> str | None:
    proc = subprocess.run(
        # keyring files the account as `username` (and a `target`) in the Secret Service.
        ["secret-tool", "lookup", "service", "pocketpilot", "username", account],
        capture_output=True,
        text=True,
        timeout=20,
    )
    return proc.stdout if proc.returncode == 0 else None


def files_containing(root: Path, needle: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


@pytest.mark.skipif(
    not os.environ.get("E2E_KEYRING") or not shutil.which("secret-tool"),
    reason="needs the headless gnome-keyring of tests/e2e/run.sh and secret-tool",
)
def test_first_run_settings_store_the_key_in_the_keychain(app_env: AppEnv, launch) -> None:
    app: App = launch()  # no POCKETPILOT_PROVIDER and nothing configured: a first run
    # The welcome asks which model answers; a service with a key is set up in Settings.
    app.wait_css("[data-testid=welcome-view] [data-testid=choose-openai-compatible]").click()
    app.wait("the settings screen", lambda: app.css("[data-testid=settings-view] [data-testid=first-run]"))
    assert app.driver.execute_script("return window.location.hash") == "#/settings"
    app.wait_loaded("settings-view")
    app.wait("the key status", lambda: app.css("[data-testid=key-status][data-stored=false]"))
    app.screenshot("first-run")

    app.type_into(app.wait_css("[data-testid=base-url]"), BASE_URL)
    app.type_into(app.wait_css("[data-testid=model]"), MODEL)
    app.type_into(app.wait_css("[data-testid=api-key]"), KEY)
    app.wait_attr("[data-testid=api-key]", "type", "password")
    app.css("[data-testid=save-provider]")[0].click()
    app.wait("saved", lambda: "Saved." in app.texts("[data-testid=provider-status]"))
    app.wait("a key is stored", lambda: app.css("[data-testid=key-status][data-stored=true]"))
    # The field is write-only: once filed the key leaves the page.
    app.wait_attr("[data-testid=api-key]", "value", "")
    assert KEY not in app.driver.page_source
    app.screenshot("key-stored")

    # It is in the keychain under the provider's name, and nowhere in the app's files.
    assert keychain_lookup("default") == KEY
    assert files_containing(app_env.data_dir, KEY.encode()) == []
    shown = app_env.cli("provider", "show").stdout
    assert BASE_URL in shown and MODEL in shown and KEY not in shown

    # A connection test against nothing fails with a message that does not carry the key.
    app.css("[data-testid=test-connection]")[0].click()
    app.wait(
        "the connection test to answer",
        lambda: any(t and t != "Saved." for t in app.texts("[data-testid=provider-status]")),
        timeout=60,
    )
    assert KEY not in app.driver.page_source

    # Reopened: configured (no first-run banner), the key reported as stored, never shown.
    app.driver.refresh()
    app.wait_loaded("settings-view")
    app.wait("the settings again", lambda: app.css("[data-testid=key-status][data-stored=true]"))
    app.wait("no first-run banner", lambda: not app.css("[data-testid=first-run]"))
    app.wait_attr("[data-testid=base-url]", "value", BASE_URL)
    app.wait_attr("[data-testid=api-key]", "value", "")
    assert KEY not in app.driver.page_source
    app.screenshot("reopened")

    # Removing it empties the keychain entry.
    app.css("[data-testid=delete-key]")[0].click()
    app.wait("no key stored", lambda: app.css("[data-testid=key-status][data-stored=false]"))
    assert keychain_lookup("default") is None
    assert files_containing(app_env.data_dir, KEY.encode()) == []


def test_workspace_policy_per_capability(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("project")
    app_env.seed("Say hello", app_env.script("hello", [{"text": "Hello."}]), workspace=ws)
    app: App = launch()
    app.open_settings()
    app.wait_count("[data-testid=policy-row]", 7)
    rows = {r.get_attribute("data-capability"): r for r in app.css("[data-testid=policy-row]")}
    assert list(rows) == ["fs:read", "fs:list", "fs:write", "fs:delete", "shell:execute", "net:network", "mcp"]
    assert {r.get_attribute("data-choice") for r in rows.values()} == {"default"}

    rows["fs:write"].find_element("css selector", "[data-testid=policy-deny]").click()
    app.wait("fs:write denied", lambda: app.css("[data-capability='fs:write'][data-choice=deny]"))
    rows = {r.get_attribute("data-capability"): r for r in app.css("[data-testid=policy-row]")}
    rows["shell:execute"].find_element("css selector", "[data-testid=policy-allow]").click()
    app.wait("shell:execute allowed", lambda: app.css("[data-capability='shell:execute'][data-choice=allow]"))
    app.screenshot("policy")

    shown = app_env.cli("policy", "show", "--workspace", str(ws), "--json").stdout
    import json

    rules = json.loads(shown)
    assert rules == {"allow": ["shell:execute"], "deny": ["fs:write"]}
