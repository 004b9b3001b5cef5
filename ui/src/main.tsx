import { render } from "preact";
import { App } from "./app";
import { loadMarkdown } from "./lib/markdown";
import "./styles.css";

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
