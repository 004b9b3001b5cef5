"""Figures for the desktop app (a benchmark, not a test): cold start to first paint, idle
memory, and UI responsiveness while 200 deltas per second stream in.

Run it through the e2e runner, which provides Xvfb, D-Bus and tauri-driver:
    tests/e2e/run.sh --bench

How each figure is taken:
- Cold start: the launcher script records the wall-clock time just before it `exec`s the
  binary; the page records `performance.mark("pp-first-paint")` two animation frames after
  its first render (ui/src/main.tsx). Cold start = performance.timeOrigin + mark − launch.
  Every run gets a fresh data dir, HOME and XDG cache (no WebKit caches carried over); the
  binary and libraries are in the OS page cache after the first run, so the median of
  several runs is reported.
- Idle memory: 5 s after the window has loaded, the RSS and PSS of the app process and
  all its descendants (WebKitWebProcess, WebKitNetworkProcess) from /proc. RSS counts
  shared libraries once per process; PSS splits them, so the PSS sum is the honest total.
- Responsiveness: a scripted model streams 2000 one-character deltas 5 ms apart (200/s).
  In the page, a PerformanceObserver for `longtask` when WebKitGTK supports it (it does
  not so far), and in any case two monitors while the text streams:
  - main-thread stalls: a 10 ms interval timer records how late each tick fires; a tick
    more than 50 ms late means the main thread was busy (script, style, layout) for over
    50 ms — the "no main-thread task over 50 ms" figure;
  - frame gaps: a requestAnimationFrame monitor, the longest gap between frames and the
    number over 50 ms. This also counts frames the compositor was late with while the
    main thread was free (with software GL under Xvfb, most of them).
"""
from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from conftest import DRIVER_URL, App, AppEnv, app_binary  # noqa: E402
from selenium import webdriver  # noqa: E402
from selenium.webdriver.common.options import ArgOptions  # noqa: E402

RUNS = int(os.environ.get("BENCH_RUNS", "5"))
# A store to start with, copied into each run's data dir: the big one of the store's bench
# (STORE_OPEN_KEEP=FILE cargo bench -p pocketpilot-store --bench store_open), to see what
# its `quick_check` at open costs the window.
BIG_STORE = os.environ.get("BENCH_STORE")
DELTAS = 2000
DELTA_MS = 5


def fresh_env(root: Path) -> AppEnv:
    env = dict(os.environ)
    for key in ("POCKETPILOT_PROVIDER", "POCKETPILOT_API_KEY"):
        env.pop(key, None)
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
    if BIG_STORE:
        shutil.copyfile(BIG_STORE, root / "data" / "pocketpilot.db")
    env["POCKETPILOT_WEBHOOK_PORT"] = "0"
    return AppEnv(root=root, binary=app_binary(), env=env)


def start(app_env: AppEnv, script: Path | None) -> tuple[App, float, int]:
    """Starts the app under tauri-driver; returns it, the launch time and the app's pid."""
    launcher = app_env.launcher(script)
    stamp = app_env.root / "launched"
    lines = launcher.read_text().splitlines()
    # Record the time and pid just before exec (exec keeps the pid).
    lines.insert(-1, f"echo $$ $(date +%s.%N) > '{stamp}'")
    launcher.write_text("\n".join(lines) + "\n")
    opts = ArgOptions()
    opts.set_capability("browserName", "wry")
    opts.set_capability("tauri:options", {"application": str(launcher)})
    driver = webdriver.Remote(command_executor=DRIVER_URL, options=opts)
    app = App(driver, "bench")
    app.wait("the app to load", lambda: app.css("[data-testid=app][data-loaded=true]"), timeout=30)
    pid, launched = stamp.read_text().split()
    return app, float(launched), int(pid)


def store_waits_s(app: App) -> tuple[float, float, float]:
    """What the store's open and check cost the page: the first render's time (the page asks
    the store and renders at once, without waiting for the answer), when the store answered
    after asking (its open and check, beside the window's start), and first paint to the
    sessions drawn (the sidebar's `pp-sessions-shown`)."""
    asked, rendered, answered, painted, shown = app.wait(
        "the store's marks",
        lambda: app.driver.execute_script(
            "const m = n => performance.getEntriesByName(n)[0];"
            "const names = ['pp-store-asked', 'pp-render', 'pp-store-answered', 'pp-first-paint', 'pp-sessions-shown'];"
            "return names.every(n => m(n)) ? names.map(n => m(n).startTime) : null;"
        ),
        timeout=30,
    )  # type: ignore[misc]
    return (
        (float(rendered) - float(asked)) / 1000.0,
        (float(answered) - float(asked)) / 1000.0,
        (float(shown) - float(painted)) / 1000.0,
    )


def first_paint_s(app: App, launched: float) -> tuple[float, float]:
    """Cold start to first paint, and the part of it spent in the page (navigation start
    to the mark: loading, parsing and running the bundle, the first render and frame)."""
    at = app.wait(
        "the first-paint mark",
        lambda: app.driver.execute_script(
            "const m = performance.getEntriesByName('pp-first-paint')[0];"
            "return m ? [performance.timeOrigin, m.startTime] : null;"
        ),
        timeout=10,
    )
    origin, mark = at  # type: ignore[misc]
    return (float(origin) + float(mark)) / 1000.0 - launched, float(mark) / 1000.0


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(children.get(p, []))
    return found


def memory_mb(pid: int) -> tuple[float, float, list[str], dict[str, float]]:
    """RSS and PSS sums (MB), the process names, and the PSS of each process name."""
    rss = pss = 0
    names = []
    by_name: dict[str, float] = {}
    for p in descendants(pid):
        try:
            name = Path(f"/proc/{p}/comm").read_text().strip()
            own = 0
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    own += int(line.split()[1])
            pss += own
            by_name[name] = by_name.get(name, 0.0) + own / 1024
            names.append(name)
        except OSError:
            continue
    return rss / 1024, pss / 1024, names, by_name


MONITOR = """
window.__bench = { gaps: [], longtasks: [], longtaskSupported: false, last: performance.now(), on: true };
const b = window.__bench;
try {
  b.longtaskSupported = (PerformanceObserver.supportedEntryTypes || []).includes('longtask');
  if (b.longtaskSupported) {
    new PerformanceObserver((l) => { for (const e of l.getEntries()) b.longtasks.push(e.duration); })
      .observe({ type: 'longtask', buffered: false });
  }
} catch (e) { b.longtaskSupported = false; }
const tick = (t) => { if (!b.on) return; b.gaps.push(t - b.last); b.last = t; requestAnimationFrame(tick); };
requestAnimationFrame((t) => { b.last = t; requestAnimationFrame(tick); });
b.late = []; b.tickAt = performance.now();
b.timer = setInterval(() => {
  const now = performance.now();
  if (!b.on) { clearInterval(b.timer); return; }
  b.late.push(now - b.tickAt - 10); b.tickAt = now;
}, 10);
"""


def idle_gaps(app: App, seconds: float = 5.0) -> dict:
    """The same rAF monitor on the idle window: what Xvfb's software rendering costs alone."""
    app.driver.execute_script(MONITOR)
    # sleep: the figure is what the idle window does over this long a time.
    time.sleep(seconds)
    data = app.driver.execute_script("const b = window.__bench; b.on = false; return { gaps: b.gaps, late: b.late };")
    gaps, late = sorted(data["gaps"]), data["late"]
    return {"frames": len(gaps), "max_gap_ms": gaps[-1] if gaps else 0.0,
            "gaps_over_50ms": sum(1 for g in gaps if g > 50),
            "max_stall_ms": max(late, default=0.0), "stalls_over_50ms": sum(1 for x in late if x > 50)}


def responsiveness(app: App, workspace: Path) -> dict:
    app.go("#/new")
    field = app.wait_css("[data-testid=workspace-input]")
    app.clear(field)
    app.type_into(field, str(workspace))
    app.driver.execute_script(MONITOR)
    box = app.wait_css("[data-testid=composer-input]")
    app.type_into(box, "Stream a long answer")
    started = time.monotonic()
    app.press_enter(box)
    app.wait("streamed text", lambda: any(app.texts("[data-testid=streaming-message]")), timeout=30)
    app.wait("the answer to complete", lambda: app.css("[data-testid=task][data-status=completed]"), timeout=60)
    elapsed = time.monotonic() - started
    data = app.driver.execute_script(
        "const b = window.__bench; b.on = false;"
        "return { gaps: b.gaps, longtasks: b.longtasks, supported: b.longtaskSupported, late: b.late };"
    )
    gaps = sorted(data["gaps"])
    late = data["late"]
    return {
        "elapsed_s": elapsed,
        "frames": len(gaps),
        "max_gap_ms": gaps[-1] if gaps else 0.0,
        "p99_gap_ms": gaps[int(len(gaps) * 0.99) - 1] if gaps else 0.0,
        "gaps_over_50ms": sum(1 for g in gaps if g > 50),
        "max_stall_ms": max(late, default=0.0),
        "stalls_over_50ms": sum(1 for x in late if x > 50),
        "longtask_supported": data["supported"],
        "longtasks_over_50ms": len(data["longtasks"]),
        "longest_task_ms": max(data["longtasks"], default=0.0),
    }


def stream_text() -> str:
    """The streamed answer: one plain paragraph by default; with BENCH_MARKDOWN=1 markdown
    (paragraphs with bold and code, lists, fenced code) of the same length, which the window
    formats block by block as it arrives."""
    if os.environ.get("BENCH_MARKDOWN") != "1":
        return "x" * DELTAS
    block = (
        "A paragraph with **bold**, `code` and *emphasis* that goes on for a while.\n\n"
        "- one item\n- another item with **bold**\n\n"
        "```rust\nfn main() { println!(\"hi\"); }\n```\n\n"
    )
    return (block * (DELTAS // len(block) + 1))[:DELTAS]


def main() -> int:
    paints = []
    in_page = []
    store_waits = []
    mem = None
    resp = None
    idle = None
    with tempfile.TemporaryDirectory(prefix="pp-bench-") as tmp:
        for i in range(RUNS):
            app_env = fresh_env(Path(tmp) / f"run{i}")
            script = app_env.script(
                "stream", [{"text": stream_text(), "chunk_size": 1, "chunk_delay_ms": DELTA_MS}]
            )
            app, launched, pid = start(app_env, script)
            try:
                total, page = first_paint_s(app, launched)
                paints.append(total)
                in_page.append(page)
                store_waits.append(store_waits_s(app))
                if i == RUNS - 1:
                    # sleep: memory is measured once the started app has settled, as a person finds it.
                    time.sleep(5)
                    mem = memory_mb(pid)
                    idle = idle_gaps(app)
                    resp = responsiveness(app, app_env.workspace("bench"))
            finally:
                app.driver.quit()
    print(f"cold start to first paint (Xvfb, {RUNS} runs): median {statistics.median(paints):.2f} s, "
          f"min {min(paints):.2f} s, max {max(paints):.2f} s; "
          f"of which in the page (navigation start to the mark): median {statistics.median(in_page):.2f} s")
    size = f"{os.path.getsize(BIG_STORE) / 1048576:.0f} MiB store" if BIG_STORE else "new store"
    render_waits = [w[0] for w in store_waits]
    answers = [w[1] for w in store_waits]
    to_sessions = [w[2] for w in store_waits]
    print(f"  the first render, not waiting for the store ({size}): median {statistics.median(render_waits) * 1000:.0f} ms, "
          f"max {max(render_waits) * 1000:.0f} ms")
    print(f"  the store's open and check answered, after the page asked: median {statistics.median(answers) * 1000:.0f} ms, "
          f"max {max(answers) * 1000:.0f} ms (beside the drawn window)")
    print(f"  first paint to the sessions drawn: median {statistics.median(to_sessions) * 1000:.0f} ms, "
          f"max {max(to_sessions) * 1000:.0f} ms")
    if mem:
        rss, pss, names, by_name = mem
        print(f"idle memory, app + WebKit processes ({', '.join(sorted(set(names)))}): "
              f"RSS sum {rss:.0f} MB, PSS sum {pss:.0f} MB")
        print("  PSS by process: " + ", ".join(f"{n} {v:.0f} MB" for n, v in sorted(by_name.items())))
    if resp:
        how = "PerformanceObserver longtask" if resp["longtask_supported"] else "a timer and a rAF monitor (no longtask in this WebKitGTK)"
        kind = "markdown" if os.environ.get("BENCH_MARKDOWN") == "1" else "plain text"
        print(f"streaming {DELTAS} deltas ({kind}) at {1000 // DELTA_MS}/s nominal ({resp['elapsed_s']:.1f} s end to end), measured with {how}:")
        print(f"  main-thread stalls (10 ms timer late by): longest {resp['max_stall_ms']:.0f} ms, "
              f"over 50 ms: {resp['stalls_over_50ms']}")
        print(f"  frames {resp['frames']}, longest frame gap {resp['max_gap_ms']:.0f} ms, p99 {resp['p99_gap_ms']:.0f} ms, "
              f"gaps over 50 ms: {resp['gaps_over_50ms']}")
        if idle:
            print(f"  idle baseline (5 s, same monitors): frames {idle['frames']}, longest gap {idle['max_gap_ms']:.0f} ms, "
                  f"gaps over 50 ms: {idle['gaps_over_50ms']}; longest stall {idle['max_stall_ms']:.0f} ms, "
                  f"stalls over 50 ms: {idle['stalls_over_50ms']}")
        if resp["longtask_supported"]:
            print(f"  long tasks (>50 ms): {resp['longtasks_over_50ms']}, longest {resp['longest_task_ms']:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
