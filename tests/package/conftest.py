"""Fixtures for the package test (run through tests/package/run.sh, which builds the .deb,
unpacks it and provides Xvfb and a D-Bus session):
  PACKAGE_DEB      the .deb under test
  PACKAGE_ROOT     where it was unpacked (dpkg-deb -x): the installed files
  PACKAGE_OUTPUT   where screenshots and logs go

Each test gets its own HOME, XDG dirs and data dir, and a PATH on which `pocketpilot` is
the unpacked /usr/bin/pocketpilot, as after `apt install`. The tray watcher and the X
helpers are the e2e harness's (tests/e2e/desktop_bus.py, x11.py).
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))


def required_path(var: str) -> Path:
    value = os.environ.get(var)
    if not value:
        pytest.fail(f"{var} is not set: run the package test through tests/package/run.sh")
    return Path(value)


@pytest.fixture(scope="session")
def deb() -> Path:
    return required_path("PACKAGE_DEB")


@pytest.fixture(scope="session")
def pkg_root() -> Path:
    return required_path("PACKAGE_ROOT")


@pytest.fixture(scope="session")
def output() -> Path:
    path = required_path("PACKAGE_OUTPUT")
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass
class Home:
    """An isolated person's session: dirs, environment, and the processes started in it."""

    root: Path
    env: dict[str, str]
    procs: list[subprocess.Popen]

    @property
    def data_dir(self) -> Path:
        return Path(self.env["POCKETPILOT_DATA_DIR"])

    @property
    def config_home(self) -> Path:
        return Path(self.env["XDG_CONFIG_HOME"])

    def workspace(self, name: str = "ws") -> Path:
        path = self.root / name
        path.mkdir(exist_ok=True)
        return path

    def cli(self, *args: str, check: bool = True, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """`pocketpilot ARGS` found on PATH, i.e. the installed binary."""
        proc = subprocess.run(["pocketpilot", *args], env=env or self.env, capture_output=True, text=True, timeout=60)
        if check and proc.returncode != 0:
            raise AssertionError(
                f"pocketpilot {' '.join(args)} exited {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
            )
        return proc

    def start(self, argv: list[str], name: str) -> subprocess.Popen:
        """Starts a desktop entry's command line in its own process group (the app and its
        WebKit processes are stopped together at the end); output goes to a log file."""
        log = open(self.root / f"{name}.log", "w")
        proc = subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(10)


@pytest.fixture
def home(tmp_path: Path, pkg_root: Path, output: Path, request: pytest.FixtureRequest):
    env = {k: v for k, v in os.environ.items() if not k.startswith("POCKETPILOT_")}
    dirs = {
        "POCKETPILOT_DATA_DIR": tmp_path / "data",
        "HOME": tmp_path / "home",
        "XDG_DATA_HOME": tmp_path / "home" / ".local" / "share",
        "XDG_CONFIG_HOME": tmp_path / "home" / ".config",
        "XDG_CACHE_HOME": tmp_path / "home" / ".cache",
        "XDG_RUNTIME_DIR": tmp_path / "run",
    }
    for key, path in dirs.items():
        path.mkdir(parents=True, exist_ok=True)
        env[key] = str(path)
    (tmp_path / "run").chmod(0o700)
    env["PATH"] = f"{pkg_root / 'usr' / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}"
    # The app's trigger host listens for webhooks: any free port, never a fixed one.
    env["POCKETPILOT_WEBHOOK_PORT"] = "0"
    env["POCKETPILOT_LOG"] = "info"
    h = Home(root=tmp_path, env=env, procs=[])
    yield h
    for proc in h.procs:
        stop(proc)
    # The app's own logs and the process output, kept next to the screenshots.
    keep = output / request.node.name
    keep.mkdir(parents=True, exist_ok=True)
    for log in tmp_path.glob("*.log"):
        shutil.copy(log, keep / log.name)
    logs = tmp_path / "data" / "logs"
    if logs.is_dir():
        shutil.copytree(logs, keep / "app-logs", dirs_exist_ok=True)


@pytest.fixture
def desktop():
    """The panel's tray watcher and a notification server on the session bus (the e2e
    harness). Ask for it before starting the app, so the tray icon registers with it."""
    from desktop_bus import DesktopBus

    bus = DesktopBus()
    yield bus
    bus.close()


def wait_for(what: str, check, timeout: float = 20.0, every: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")
