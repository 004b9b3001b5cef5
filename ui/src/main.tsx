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
  // A store that cannot be opened shows the recovery screen instead of the app; a failed
  // question (the shell is older or gone) is the usual app, whose calls report it.
  // The marks around the question show how long the page waited for the store's check,
  // which runs beside the window's start (tests/e2e/bench_ui.py reports it).
  performance.mark("pp-store-asked");
  storeProblem()
    .catch(() => null)
    .then((problem) => {
      performance.mark("pp-store-answered");
      render(problem ? <Recovery problem={problem} reload={() => location.reload()} /> : <App />, root);
      markFirstPaint();
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
