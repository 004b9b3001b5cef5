// "Export…" in the session header: the shell asks where (the system's save dialog) and
// writes the transcript, tool calls and changed files there; the path written is shown.
import { useState } from "preact/hooks";
import { errorMessage, exportSession } from "../../api/commands";

export function ExportSession({ sessionId }: { sessionId: number }) {
  const [busy, setBusy] = useState(false);
  const [said, setSaid] = useState<{ text: string; error: boolean } | null>(null);
  const run = async () => {
    setBusy(true);
    setSaid(null);
    try {
      const path = await exportSession(sessionId);
      if (path !== null) setSaid({ text: `Exported to ${path}`, error: false });
    } catch (e) {
      setSaid({ text: errorMessage(e), error: true });
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button
        type="button"
        class="link rename export-session"
        data-testid="export-session"
        aria-label="Export this session to a file"
        disabled={busy}
        onClick={() => void run()}
      >
        Export…
      </button>
      {said && (
        <span class={said.error ? "muted error" : "muted"} role="status" data-testid="export-result">
          {said.text}
        </span>
      )}
    </>
  );
}
