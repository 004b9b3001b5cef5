import { render } from "preact";
import { App } from "./app";
import "./styles.css";

const root = document.getElementById("app");
if (root) {
  render(<App />, root);
  // The first frame with the app drawn (tests/e2e/bench_ui.py reads it for cold start).
  requestAnimationFrame(() => requestAnimationFrame(() => performance.mark("pp-first-paint")));
}
