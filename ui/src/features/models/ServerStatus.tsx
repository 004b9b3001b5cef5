// The built-in model's server, in a sentence, with the last lines of its log after a crash.
import type { LocalServerStatus } from "../../api/generated/bindings";
import { describeServer } from "./describe";

export function ServerStatus({ status }: { status: LocalServerStatus | null }) {
  if (!status) return <p class="muted" data-testid="server-status">Reading the server's state…</p>;
  return (
    <div class="server-status" data-testid="server-status" data-state={status.state}>
      <p role="status" class={status.state === "crashed" ? "notice error" : ""}>
        <span class={`server-dot ${status.state}`} aria-hidden="true" />
        {describeServer(status)}
      </p>
      {status.state === "crashed" && status.log_tail.length > 0 && (
        <details open data-testid="server-log">
          <summary>The last lines of its log</summary>
          <pre class="server-log">{status.log_tail.join("\n")}</pre>
        </details>
      )}
    </div>
  );
}
