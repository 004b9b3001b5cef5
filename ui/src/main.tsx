import { render } from "preact";
import { App } from "./app";
import { storeProblem } from "./api/commands";
import { Recovery } from "./features/data/Recovery";
import { installCodeCopy } from "./lib/copy";
import { loadMarkdown } from "./lib/markdown";
import { applyTheme, followDesktopTheme, storedTheme } from "./lib/theme";
import "./styles.css";

// Before the first render, so a dark choice never flashes light.
applyTheme(storedTheme());
void followDesktopTheme();
installCodeCopy();

const root = document.getElementById("app");
if (root) {
  // The app draws at once: the store opens (and is checked) beside the window's start, and
  // the app's calls wait for it in the shell. A store that cannot be opened replaces the
  // app with the recovery screen; a failed question (the shell is older or gone) leaves the
  // usual app, whose calls report it. The marks show that the page no longer waits for the
  // store, and when it answered (tests/e2e/bench_ui.py reports them).
  performance.mark("pp-store-asked");
  const problem = storeProblem().catch(() => null);
  render(<App />, root);
  performance.mark("pp-render");
  markFirstPaint();
  void problem.then((p) => {
    performance.mark("pp-store-answered");
    if (p) render(<Recovery problem={p} reload={() => location.reload()} />, root);
  });
}

function markFirstPaint() {
  // The first frame with the app drawn (tests/e2e/bench_ui.py reads it for cold start).
  requestAnimationFrame(() =>
    requestAnimationFrame(() => {
      performance.mark("pp-first-paint");
      // Then the markdown renderer, so it is there before the first answer arrives.
      setTimeout(() => void loadMarkdown(), 0);
    }),
  );
}
