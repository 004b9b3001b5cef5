"""Fixtures for driving the real PocketPilot window through tauri-driver (WebDriver).

Run through tests/e2e/run.sh, which starts Xvfb and tauri-driver and sets:
  POCKETPILOT_BIN     absolute path of the app binary
  TAURI_DRIVER_URL    where tauri-driver listens (default http://127.0.0.1:4444)
  E2E_OUTPUT          where screenshots go (default test-output/e2e)

Each test gets its own data dir, HOME and XDG dirs. tauri-driver starts the app itself and
passes it only WebKitWebDriver's `--automation` flag, so the app is launched through a small
per-test wrapper script that sets the isolated environment and starts the binary with no
arguments (the binary treats any argument as a CLI command).
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest
from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.common.options import ArgOptions
from selenium.webdriver.remote.webelement import WebElement

ROOT = Path(__file__).resolve().parents[2]
DRIVER_URL = os.environ.get("TAURI_DRIVER_URL", "http://127.0.0.1:4444")
OUTPUT = Path(os.environ.get("E2E_OUTPUT", ROOT / "test-output" / "e2e")).resolve()
# How long a wait may take before it fails. A wait returns as soon as its condition holds,
# so a generous bound costs nothing when the window is quick; it is what keeps the suite
# green on a 2-core machine that is also compiling (a settings page reading the keychain
# took over 20 s there). E2E_WAIT_SECONDS overrides it.
WAIT = float(os.environ.get("E2E_WAIT_SECONDS", "60"))


def app_binary() -> Path:
    default = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "debug" / "pocketpilot"
    path = Path(os.environ.get("POCKETPILOT_BIN", default)).resolve()
    if not path.is_file():
        pytest.fail(f"the app binary {path} does not exist: build it (npm --prefix ui run build; cargo build -p pocketpilot)")
    return path


@dataclass
class AppEnv:
    """An isolated home for one test: data dir, workspace(s), scripts, environment."""

    root: Path
    binary: Path
    env: dict[str, str] = field(default_factory=dict)
    # Variables the launched app gets whatever their name (the launcher passes on only the
    # isolating ones from `env`).
    app_env: dict[str, str] = field(default_factory=dict)

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    def workspace(self, name: str = "ws") -> Path:
        path = self.root / name
        path.mkdir(exist_ok=True)
        return path

    def config_file(self, relative: str, text: str) -> Path:
        """Writes a file under the test's own XDG_CONFIG_HOME (e.g. `gtk-3.0/settings.ini`)."""
        path = Path(self.env["XDG_CONFIG_HOME"]) / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def script(self, name: str, turns: list[dict]) -> Path:
        path = self.root / f"{name}.json"
        path.write_text(json.dumps({"turns": turns}))
        return path

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [str(self.binary), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"pocketpilot {' '.join(args)} exited {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
            )
        return proc

    def seed(self, goal: str, script: Path, workspace: Path | None = None) -> subprocess.CompletedProcess[str]:
        """Runs one task to completion with the CLI (a new session each time)."""
        ws = workspace or self.workspace()
        return self.cli("run", "--workspace", str(ws), "--goal", goal, "--provider", f"scripted:{script}")

    def launcher(self, provider_script: Path | None = None) -> Path:
        """The executable tauri-driver starts: the isolated env, then the app, no arguments."""
        env = {k: v for k, v in self.env.items() if k.startswith(("POCKETPILOT_", "XDG_", "GTK_")) or k == "HOME"}
        env.update(self.app_env)
        if provider_script is not None:
            env["POCKETPILOT_PROVIDER"] = f"scripted:{provider_script}"
        lines = ["#!/bin/sh"] + [f"export {k}={shell_quote(v)}" for k, v in sorted(env.items())]
        # exec keeps the pid: the tests that look at the process or its window read it here.
        lines.append(f"echo $$ > {shell_quote(str(self.root / 'app.pid'))}")
        lines.append(f"exec {shell_quote(str(self.binary))}")
        path = self.root / "launch-app.sh"
        path.write_text("\n".join(lines) + "\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return path

    def app_pid(self) -> int:
        return int((self.root / "app.pid").read_text().split()[0])


def shell_quote(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


@pytest.fixture
def app_env(tmp_path: Path) -> AppEnv:
    root = tmp_path
    env = dict(os.environ)
    dirs = {
        "POCKETPILOT_DATA_DIR": root / "data",
        "HOME": root / "home",
        "XDG_DATA_HOME": root / "home" / ".local" / "share",
        "XDG_CONFIG_HOME": root / "home" / ".config",
        "XDG_CACHE_HOME": root / "home" / ".cache",
        "XDG_RUNTIME_DIR": root / "run",
    }
    for key, path in dirs.items():
        path.mkdir(parents=True, exist_ok=True)
        env[key] = str(path)
    (root / "run").chmod(0o700)
    env.pop("POCKETPILOT_PROVIDER", None)
    for key in ("POCKETPILOT_API_KEY", "POCKETPILOT_BASE_URL", "POCKETPILOT_MODEL"):
        env.pop(key, None)
    # The app's trigger host listens for webhooks: any free port, never a fixed one.
    env["POCKETPILOT_WEBHOOK_PORT"] = "0"
    env["POCKETPILOT_LOG"] = env.get("POCKETPILOT_LOG", "info")
    return AppEnv(root=root, binary=app_binary(), env=env)


def poll(what: str | Callable[[], str], check: Callable[[], object], timeout: float = WAIT, interval: float = 0.1) -> object:
    """The one wait of the e2e tests: polls `check` until it returns something truthy and
    returns that. Past `timeout` it fails naming `what` never came, with the last value or error
    seen. Every other wait here goes through it; tests never sleep. A WebDriverException or
    a LookupError (an element gone mid-render, `[0]` of no match yet) counts as not yet."""
    deadline = time.monotonic() + timeout
    last: object = None
    last_error: Exception | None = None
    while True:
        try:
            value = check()
            if value:
                return value
            last = value
        except (WebDriverException, LookupError) as e:  # the page mid-render, a match not there yet
            last_error = e
        if time.monotonic() >= deadline:
            name = what() if callable(what) else what
            seen = f"; last error: {last_error}" if last_error else f"; last seen: {last!r}"
            raise AssertionError(f"timed out after {timeout}s waiting for {name}{seen}")
        # sleep: the poll interval of this bounded wait (the page has no event to block on).
        time.sleep(interval)


# Resolves true once the element has kept the same box for two frames and nothing covers
# its centre; false otherwise (it is scrolled into view first).
STEADY_JS = """
const [el, done] = [arguments[0], arguments[arguments.length - 1]];
if (!el.isConnected) return done(false);
el.scrollIntoView({ block: "nearest", inline: "nearest" });
const box = () => { const r = el.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; };
const before = box();
requestAnimationFrame(() => requestAnimationFrame(() => {
  const after = box();
  const [x, y, w, h] = after;
  const top = w > 0 && h > 0 ? document.elementFromPoint(x + w / 2, y + h / 2) : null;
  done(before.every((v, i) => v === after[i]) && top !== null && (top === el || el.contains(top)));
}));
"""


class SteadyElement(WebElement):
    """A WebDriver click lands on coordinates taken a moment before. The settings screen
    loads its sections one by one, and a click aimed at a button that moves meanwhile hits
    whatever slid under it. So a click waits, as a person's eye would, until its target
    holds still and is on top; a target that never does fails the test plainly."""

    def click(self) -> None:
        def steady() -> bool:
            self.parent.set_script_timeout(10)
            return bool(self.parent.execute_async_script(STEADY_JS, self))

        poll(
            lambda: f"the element to click to hold still, uncovered: {self.get_attribute('outerHTML')[:200]}",
            steady,
            timeout=10.0,
            interval=0.05,
        )
        super().click()


class App:
    """A running app window under WebDriver, with small helpers for waiting."""

    def __init__(self, driver: webdriver.Remote, name: str):
        self.driver = driver
        self.name = name
        self.shots = 0

    def css(self, selector: str) -> list[WebElement]:
        return self.driver.find_elements(By.CSS_SELECTOR, selector)

    def wait(self, what: str, check: Callable[[], object], timeout: float = WAIT) -> object:
        """Waits (bounded) until `check` returns something truthy, and returns it. Every
        check on the window goes through a wait: what a test reads may still be arriving
        (a section loading, a re-read after a change, a stream). The timeout names `what`,
        leaves a screenshot and says what was seen last."""
        try:
            return poll(what, check, timeout)
        except AssertionError:
            try:
                self.screenshot(f"timeout-{''.join(c if c.isalnum() else '-' for c in what)[:60]}")
            except WebDriverException:
                pass
            raise

    def open_header(self, panel: str) -> WebElement:
        """Opens a popover of the session header (`context`: the ring's figures, Compact
        now, Fresh context; `details`: steps, tokens, cost, Export, Instructions, Delete)
        unless it is open, and returns its panel."""
        panel_css = f"[data-testid=head-{panel}-panel]"
        if not self.css(panel_css):
            self.wait_css(f"[data-testid=head-{panel}]").click()
        return self.wait_css(panel_css)

    def wait_css(self, selector: str, timeout: float = WAIT) -> WebElement:
        return self.wait(selector, lambda: next(iter(self.css(selector)), None), timeout)  # type: ignore[return-value]

    def wait_equal(self, what: str, get: Callable[[], object], expected: object, timeout: float = WAIT) -> object:
        """Waits until `get()` equals `expected`; the timeout shows both."""
        seen: list[object] = []

        def check() -> bool:
            seen[:] = [get()]
            return seen[0] == expected

        try:
            self.wait(what, check, timeout)
        except AssertionError as e:
            raise AssertionError(f"{e}\n  expected: {expected!r}\n  last got: {seen[0] if seen else '(nothing)'!r}") from None
        return expected

    def wait_texts(self, selector: str, expected: list[str], timeout: float = WAIT) -> list[str]:
        """Waits until the texts of `selector`'s matches are `expected`, in order."""
        self.wait_equal(f"the text of {selector}", lambda: self.texts(selector), expected, timeout)
        return expected

    def wait_attr(self, selector: str, name: str, expected: str | None, timeout: float = WAIT) -> WebElement:
        """Waits until the first match of `selector` has attribute `name` == `expected`
        (None: absent); returns that element."""
        def get() -> object:
            found = self.css(selector)
            return found[0].get_attribute(name) if found else "(no element)"

        self.wait_equal(f"{name} of {selector}", get, expected, timeout)
        return self.css(selector)[0]

    def wait_count(self, selector: str, count: int, timeout: float = WAIT) -> list[WebElement]:
        """Waits until `selector` has exactly `count` matches; returns them."""
        self.wait_equal(f"the number of {selector}", lambda: len(self.css(selector)), count, timeout)
        return self.css(selector)

    def wait_loaded(self, testid: str, timeout: float = WAIT) -> WebElement:
        """Waits for a screen that loads in parts to say every part has come (its
        `data-loaded`, ui/src/lib/loaded.tsx); returns its root."""
        return self.wait(  # type: ignore[return-value]
            f"the {testid} screen to load (data-loaded=true)",
            lambda: next(iter(self.css(f"[data-testid={testid}][data-loaded=true]")), None),
            timeout,
        )

    def open_settings(self) -> WebElement:
        """Opens Settings and waits until every section has loaded."""
        self.go("#/settings")
        return self.wait_loaded("settings-view")

    def holds(self, what: str, check: Callable[[], object], seconds: float = 1.0) -> None:
        """For what must NOT happen (a refused send stays unsent): `check` must stay true
        for the whole of `seconds`, looked at as often as a wait looks; it fails the moment
        it does not. Only for an absence: anything that arrives is waited for instead."""
        deadline = time.monotonic() + seconds

        def broken() -> bool:
            if not check():
                raise AssertionError(f"{what} did not hold")
            return time.monotonic() >= deadline

        poll(f"{what} to hold for {seconds}s", broken, timeout=seconds + 10.0)

    def texts(self, selector: str) -> list[str]:
        """The text of each match, as the DOM has it (whitespace-trimmed)."""
        return self.driver.execute_script(
            "return [...document.querySelectorAll(arguments[0])].map(e => e.textContent.trim());", selector
        )

    def by_text(self, selector: str, text: str) -> WebElement:
        """The first match of `selector` whose text contains `text`."""
        found = [e for e, t in zip(self.css(selector), self.texts(selector)) if text in t]
        if not found:
            raise AssertionError(f"no {selector} contains {text!r}; have {self.texts(selector)}")
        return found[0]

    def type_into(self, el: WebElement, text: str) -> None:
        """Types into an input. WebKitWebDriver under a bare Xvfb (no window manager, so no
        keyboard focus) answers send_keys with an unknown error; then the value is set the
        way a paste would, with the `input` event the UI listens to."""
        try:
            el.send_keys(text)
        except WebDriverException:
            self.driver.execute_script(
                "const el = arguments[0];"
                "const proto = el instanceof HTMLTextAreaElement ? HTMLTextAreaElement : HTMLInputElement;"
                "Object.getOwnPropertyDescriptor(proto.prototype, 'value').set.call(el, el.value + arguments[1]);"
                "el.dispatchEvent(new Event('input', { bubbles: true }));",
                el,
                text,
            )

    def clear(self, el: WebElement) -> None:
        self.driver.execute_script(
            "const el = arguments[0];"
            "const proto = el instanceof HTMLTextAreaElement ? HTMLTextAreaElement : HTMLInputElement;"
            "Object.getOwnPropertyDescriptor(proto.prototype, 'value').set.call(el, '');"
            "el.dispatchEvent(new Event('input', { bubbles: true }));",
            el,
        )

    def press_enter(self, el: WebElement) -> None:
        """Enter in a field (the composer sends on Enter); see `type_into` for the fallback."""
        try:
            el.send_keys(Keys.ENTER)
        except WebDriverException:
            self.driver.execute_script(
                "arguments[0].dispatchEvent(new KeyboardEvent('keydown',"
                " { key: 'Enter', code: 'Enter', bubbles: true, cancelable: true }));",
                el,
            )

    def settle(self) -> None:
        """Waits two animation frames so a screenshot shows the current DOM."""
        self.driver.set_script_timeout(10)
        self.driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "requestAnimationFrame(() => requestAnimationFrame(() => done(true)));"
        )

    def screenshot(self, step: str) -> Path:
        OUTPUT.mkdir(parents=True, exist_ok=True)
        self.shots += 1
        path = OUTPUT / f"{self.name}-{self.shots:02d}-{step}.png"
        try:
            self.settle()
            # WebKitGTK without accelerated compositing (the app turns it off, see
            # src-tauri/shell/mod.rs) answers a WebDriver screenshot after its next repaint:
            # on a page where nothing changes it would wait forever. A few invisible
            # repaints over the next second let it answer.
            self.driver.execute_script(
                "let n = 0; const t = setInterval(() => {"
                " document.body.style.outline = n % 2 ? '' : '1px solid transparent';"
                " if (++n >= 20) { clearInterval(t); document.body.style.outline = ''; } }, 50);"
            )
        except WebDriverException:
            pass
        self.driver.save_screenshot(str(path))
        return path

    def go(self, hash_route: str) -> None:
        self.driver.execute_script("window.location.hash = arguments[0];", hash_route)


@pytest.fixture
def desktop():
    """A panel's tray watcher and a notification server on the session bus (desktop_bus.py).
    Ask for it before launching the app, so the tray icon registers with it."""
    from desktop_bus import DesktopBus

    bus = DesktopBus()
    yield bus
    bus.close()


@pytest.fixture
def launch(request: pytest.FixtureRequest, app_env: AppEnv):
    """Starts the app under tauri-driver; quits it at the end of the test."""
    apps: list[App] = []

    def start(provider_script: Path | None = None, ready: str = "[data-testid=app][data-loaded=true]") -> App:
        opts = ArgOptions()
        opts.set_capability("browserName", "wry")
        opts.set_capability("tauri:options", {"application": str(app_env.launcher(provider_script))})
        driver = webdriver.Remote(command_executor=DRIVER_URL, options=opts, web_element_cls=SteadyElement)
        driver.implicitly_wait(0)
        app = App(driver, request.node.name)
        apps.append(app)
        app.wait("the app to load", lambda: app.css(ready), timeout=30)
        return app

    yield start
    for app in apps:
        try:
            app.driver.quit()
        except WebDriverException:
            pass
