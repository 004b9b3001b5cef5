import { render } from "preact";
import { App } from "./app";
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
  render(<App />, root);
  // The first frame with the app drawn (tests/e2e/bench_ui.py reads it for cold start).
  requestAnimationFrame(() =>
    requestAnimationFrame(() => {
      performance.mark("pp-first-paint");
      // Then the markdown renderer, so it is there before the first answer arrives.
      setTimeout(() => void loadMarkdown(), 0);
    }),
  );
}
