// The thinking line's words: while the built-in model's server loads, that is what the
// run waits for, and "Thinking…" would be wrong.
import { useLocalServer } from "./useLocalServer";

export function ThinkingLabel() {
  const server = useLocalServer();
  return server?.state === "starting" ? (
    <span data-testid="thinking-starting">Starting the local model…</span>
  ) : (
    <>Thinking…</>
  );
}
