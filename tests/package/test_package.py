"""Issue 17, "installs and starts like a desktop app", checked on the real .deb: what it
holds and declares (dpkg-deb, desktop-file-validate, the libraries the binary links), the
installed CLI, the desktop entry's Exec line opening the window under Xvfb (a second launch
brings it back), and start at login: the autostart entry the CLI writes starts the app
hidden with its tray icon registered (the e2e tray harness sees it), a schedule fires in
it, and it has no window (nor WebKit processes) until the tray's Open. The Settings switch that writes
the same entry is driven in the real window by tests/e2e/test_background.py."""
from __future__ import annotations

import json
import os
import re
import shlex
import struct
import subprocess
import time
from pathlib import Path

import pytest
from conftest import ROOT, Home, wait_for
from xmaps import MapWatch

ICON_SIZES = [32, 48, 64, 128, 256, 512]
# What the control file must name however the list evolves: the window, the toolkit, the
# tray (loaded with dlopen, so no linker check would find it). The bundler adds these three
# itself; tauri.conf.json lists the rest.
MUST_DEPEND = {"libwebkit2gtk-4.1-0", "libgtk-3-0", "libayatana-appindicator3-1"}
# Essential on every Debian system; dpkg-shlibdeps lists libc6 too, but a missing one is harmless.
ESSENTIAL = {"libc6", "libgcc-s1"}
ANSWER = "The workspace has one file, notes.txt."


def control_field(deb: Path, field: str) -> str:
    return subprocess.run(["dpkg-deb", "-f", str(deb), field], capture_output=True, text=True, check=True).stdout.strip()


def packages_of(field: str) -> set[str]:
    """`a (>= 1), b | c` → {a, b, c}: every package an entry could be satisfied by."""
    names = set()
    for entry in field.split(","):
        for alt in entry.split("|"):
            name = alt.strip().split(" ")[0].split("(")[0].strip()
            if name:
                names.add(name)
    return names


def desktop_entry(path: Path) -> dict[str, str]:
    values = {}
    in_main = False
    for line in path.read_text().splitlines():
        if line.startswith("["):
            in_main = line.strip() == "[Desktop Entry]"
        elif in_main and "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            values[key.strip()] = value.strip()
    return values


def exec_argv(exec_value: str) -> list[str]:
    """An Exec value as the session runs it: string escapes, then the quoting rules (a
    subset of the shell's, which shlex follows); no field codes are expected here."""
    assert not re.search(r"%[fFuUdDnNickvm]", exec_value), f"unexpected field code in Exec={exec_value}"
    return shlex.split(exec_value.replace("\\\\", "\\").replace("%%", "%"))


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def only_entry(pkg_root: Path) -> Path:
    entries = list((pkg_root / "usr" / "share" / "applications").glob("*.desktop"))
    assert len(entries) == 1, entries
    return entries[0]


def validate(path: Path) -> None:
    proc = subprocess.run(["desktop-file-validate", str(path)], capture_output=True, text=True)
    # Hints are advice; errors and warnings fail (the tool exits non-zero only on errors).
    problems = [l for l in (proc.stdout + proc.stderr).splitlines() if "error:" in l or "warning:" in l]
    assert proc.returncode == 0 and not problems, f"desktop-file-validate {path}:\n{proc.stdout}{proc.stderr}"


def unique_colours(png: Path) -> int:
    out = subprocess.run(["/usr/bin/convert", str(png), "-format", "%k", "info:"], capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


def screenshot(path: Path) -> Path:
    # -window root: naming a window that is not there would hang import.
    subprocess.run(["timeout", "20", "/usr/bin/import", "-window", "root", str(path)], check=True)
    return path


def descendants(pid: int) -> list[str]:
    """The command names of every process below `pid`."""
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name, rest = text.split(" (", 1)[1].rsplit(")", 1)
        child = int(stat.parent.name)
        children.setdefault(int(rest.split()[1]), []).append(child)
        names[child] = name
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(names[child])
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# --------------------------------------------------------------------------- the files


def test_the_package_holds_the_binary_its_menu_entry_and_icons(pkg_root: Path) -> None:
    binary = pkg_root / "usr" / "bin" / "pocketpilot"
    assert binary.is_file() and os.access(binary, os.X_OK)
    entry_path = only_entry(pkg_root)
    validate(entry_path)
    entry = desktop_entry(entry_path)
    # Started from the menu with no arguments: the window (any argument is the CLI).
    assert exec_argv(entry["Exec"]) == ["pocketpilot"], entry["Exec"]
    assert entry["Type"] == "Application" and entry["Terminal"] == "false"
    assert entry["Name"] == "PocketPilot"
    assert "Utility;" in entry["Categories"]
    icon = entry["Icon"]
    for size in ICON_SIZES:
        png = pkg_root / "usr" / "share" / "icons" / "hicolor" / f"{size}x{size}" / "apps" / f"{icon}.png"
        assert png.is_file(), f"no {size}px icon at {png}"
        assert png_size(png) == (size, size), png


def test_the_control_file_names_every_library_the_binary_needs(deb: Path, pkg_root: Path) -> None:
    assert control_field(deb, "Package") == "pocketpilot"
    field = control_field(deb, "Depends")
    entries = [e.strip() for e in field.split(",")]
    assert len(entries) == len(set(entries)), f"Depends repeats itself: {field}"
    depends = packages_of(field)
    assert MUST_DEPEND <= depends, f"Depends lacks {MUST_DEPEND - depends}"
    assert "gnome-keyring" in packages_of(control_field(deb, "Recommends"))
    # Each name is a real package: this machine runs the app, so it has them all.
    for name in depends:
        state = subprocess.run(["dpkg-query", "-W", "-f=${Status}", name], capture_output=True, text=True).stdout
        assert "install ok installed" in state, f"Depends names {name}, which is not an installed package here"
    # Every library the binary links directly belongs to a package the control file names.
    binary = pkg_root / "usr" / "bin" / "pocketpilot"
    dynamic = subprocess.run(["readelf", "-d", str(binary)], capture_output=True, text=True, check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", dynamic)
    assert needed, dynamic
    resolved = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    paths = dict(re.findall(r"^\s*(\S+) => (/\S+)", resolved, re.M))
    # The dynamic loader is listed by its path alone.
    paths.update({Path(p).name: p for p in re.findall(r"^\s*(/\S+) \(0x", resolved, re.M)})
    for lib in needed:
        assert lib in paths, f"{lib} does not resolve on this machine:\n{resolved}"
        real = os.path.realpath(paths[lib])
        candidates = {real, paths[lib], real.replace("/usr/lib/", "/lib/", 1), real.replace("/lib/", "/usr/lib/", 1)}
        owner = None
        for candidate in candidates:
            found = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
            if found.returncode == 0:
                owner = found.stdout.split(":")[0].strip()
                break
        assert owner, f"no package owns {lib} ({real})"
        assert owner in depends or owner in ESSENTIAL, f"{lib} comes from {owner}, which Depends does not name"


# ---------------------------------------------------------------------- the installed CLI


def test_version_and_a_scripted_task_through_the_installed_cli(home: Home) -> None:
    about = home.cli("--version").stdout.splitlines()
    first = about[0]
    match = re.fullmatch(r"pocketpilot (\S+) \(commit (\S+)\)", first)
    assert match, about
    version = json.loads((ROOT / "tauri.conf.json").read_text())["version"]
    assert match.group(1) == version
    head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    if head.returncode == 0:
        assert match.group(2) == head.stdout.strip(), "the binary was not built from this checkout's HEAD"
    lines = dict(l.split(": ", 1) for l in about[1:])
    assert lines["data"] == str(home.data_dir)
    assert lines["logs"] == str(home.data_dir / "logs")
    assert lines["start at login"] == "off"
    if os.environ.get("PACKAGE_KEYRING"):  # run.sh started a Secret Service on the test's bus
        assert lines["keychain"] == "available (Secret Service)", lines
    else:  # whatever the bus offers; the line is there
        assert lines["keychain"], lines
    assert lines["sandbox"].startswith(("sandboxed:", "NOT sandboxed:")), lines

    # Without POCKETPILOT_DATA_DIR the data is under XDG_DATA_HOME.
    xdg = {k: v for k, v in home.env.items() if k != "POCKETPILOT_DATA_DIR"}
    lines = dict(l.split(": ", 1) for l in home.cli("--version", env=xdg).stdout.splitlines()[1:])
    assert lines["data"] == str(Path(xdg["XDG_DATA_HOME"]) / "pocketpilot")

    ws = home.workspace()
    (ws / "notes.txt").write_text("hello\n")
    script = home.root / "turns.json"
    script.write_text(json.dumps({"turns": [
        {"text": "Let me look.", "tool_calls": [{"name": "list_dir", "arguments": {}}]},
        {"text": ANSWER, "chunk_size": 5},
    ]}))
    run = home.cli("run", "--workspace", str(ws), "--goal", "What is in here?", "--provider", f"scripted:{script}")
    assert ANSWER in run.stdout
    tasks = json.loads(home.cli("tasks", "--json").stdout)
    assert [t["status"] for t in tasks] == ["completed"], tasks


# ------------------------------------------------------------------- the built-in model


def test_the_package_carries_the_built_in_model_and_answers_a_goal_with_it(home: Home, pkg_root: Path) -> None:
    sidecar = pkg_root / "usr" / "bin" / "pocketpilot-llama-server"
    model = pkg_root / "usr" / "lib" / "pocketpilot" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert sidecar.is_file() and os.access(sidecar, os.X_OK), "no llama-server sidecar in the package"
    assert model.is_file() and model.read_bytes()[:4] == b"GGUF", "no default model in the package"
    # The person's HOME is empty (no setup-script cache): only what the package holds can
    # serve the goal. `home` leaves out every POCKETPILOT_ variable but its own dirs.
    doctor = home.cli("doctor", check=False).stdout
    assert f"built-in model server: {sidecar} (next to the app): runs" in doctor, doctor
    ws = home.workspace()
    (ws / "README.md").write_text("# Demo\n")
    run = subprocess.run(["pocketpilot", "run", "--workspace", str(ws), "--goal", "Say hello"],
                         env=home.env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"stdout: {run.stdout}\nstderr: {run.stderr}"
    assert run.stdout.strip(), run.stderr
    tasks = json.loads(home.cli("tasks", "--json").stdout)
    shown = json.loads(home.cli("show", str(tasks[0]["id"]), "--json").stdout)
    started = [e for e in shown["events"] if e["type"] == "task_started"]
    assert started and started[0]["payload"]["provider"].startswith("local:"), started


# ------------------------------------------------------------------------- the window


def test_the_menu_entry_opens_the_window_and_a_second_launch_brings_it_back(home: Home, pkg_root: Path, output: Path, desktop) -> None:
    from x11 import AppWindow

    # An armed trigger keeps the app in the tray when its window closes.
    home.cli("hooks", "add", "inbox", "--workspace", str(home.workspace()))
    argv = exec_argv(desktop_entry(only_entry(pkg_root))["Exec"])
    app = home.start(argv, "menu-entry")
    window = AppWindow(app.pid)
    wait_for("the window to be mapped", window.mapped)
    desktop.tray_item()
    # The page has painted once the screen holds more than the window's plain background.
    shot = output / "menu-entry-window.png"
    wait_for("the page to paint", lambda: unique_colours(screenshot(shot)) > 64, timeout=30, every=0.5)

    window.request_close()
    wait_for("the window to hide", lambda: not window.mapped())
    assert alive(app.pid)
    second = subprocess.run(argv, env=home.env, capture_output=True, text=True, timeout=30)
    assert second.returncode == 0, second.stderr
    wait_for("the running window to come back", window.mapped)
    assert alive(app.pid)
    window.close()


# --------------------------------------------------------------------- start at login


def test_start_at_login_runs_hidden_in_the_tray_and_a_schedule_fires(home: Home, output: Path, desktop) -> None:
    assert home.cli("autostart", "status").stdout.startswith("start at login: off")
    home.cli("autostart", "on")
    entry_path = home.config_home / "autostart" / "pocketpilot.desktop"
    assert entry_path.is_file()
    validate(entry_path)
    entry = desktop_entry(entry_path)
    binary = str(Path(home.env["PATH"].split(":")[0]) / "pocketpilot")
    assert exec_argv(entry["Exec"]) == [binary, "--background"]
    assert entry["TryExec"] == binary
    assert "start at login: on" in home.cli("--version").stdout

    # A schedule due within the minute, played by the scripted model.
    ws = home.workspace()
    script = home.root / "cron.json"
    script.write_text(json.dumps({"turns": [{"text": "Scheduled run done."}]}))
    schedule = home.cli("cron", "add", "* * * * *", "--workspace", str(ws), "--goal", "tick",
                        "--provider", f"scripted:{script}").stdout.strip()

    maps = MapWatch()
    try:
        app = home.start(exec_argv(entry["Exec"]), "autostart")
        item = desktop.tray_item(timeout=30)
        desktop.wait("the tray menu", lambda: "Open PocketPilot" in desktop.labels(item))
        # The session starting the entry again (a second login) hands over and changes nothing.
        again = subprocess.run(exec_argv(entry["Exec"]), env=home.env, capture_output=True, text=True, timeout=30)
        assert again.returncode == 0, again.stderr

        def fired():
            runs = json.loads(home.cli("cron", "runs", schedule, "--json").stdout)
            done = [r for r in runs if r["outcome"] == "fired" and r["task_id"]]
            if not done:
                return None
            task = json.loads(home.cli("show", str(done[0]["task_id"]), "--json").stdout)
            return task if task["task"]["status"] == "completed" else None

        task = wait_for("the schedule to fire and its task to complete", fired, timeout=100, every=1)
        assert task["task"]["goal"] == "tick"
        assert alive(app.pid)
        assert not [m for m in maps.poll() if m[1] in (app.pid, None)], f"a window was shown: {maps.poll()}"

        # No web view yet, so none of WebKit's processes: the window is made when asked for.
        assert "WebKitWebProces" not in descendants(app.pid), descendants(app.pid)
        desktop.click(item, "Open PocketPilot")
        wait_for("the window to be mapped", lambda: [m for m in maps.poll() if m[1] == app.pid], timeout=20)
        assert "WebKitWebProces" in descendants(app.pid)  # the check above can see one
        wait_for("the page to paint", lambda: unique_colours(screenshot(output / "autostart-opened-from-tray.png")) > 64,
                 timeout=30, every=0.5)
        desktop.click(item, "Quit PocketPilot")
        wait_for("the app to quit", lambda: not alive(app.pid), timeout=15)
    finally:
        maps.close()

    home.cli("autostart", "off")
    assert not entry_path.exists()
    assert home.cli("autostart", "status").stdout.startswith("start at login: off")
