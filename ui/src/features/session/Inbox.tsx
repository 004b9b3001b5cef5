import type { Submission } from "../../api/generated/bindings";
import { textOf } from "../../api/json";

const MODE_LABEL: Record<string, string> = { followUp: "follow-up", steer: "steer", write: "note" };

interface Props {
  items: Submission[];
  onWithdraw: (id: number) => void;
}

/** What the person said while the agent was busy, waiting to be placed, oldest first. */
export function Inbox({ items, onWithdraw }: Props) {
  if (items.length === 0) return null;
  return (
    <section class="inbox" data-testid="inbox" aria-label="Waiting to be read">
      <h2 class="muted">Waiting for the agent ({items.length})</h2>
      <ul>
        {items.map((s) => (
          <li key={s.id} class="queued" data-testid="queued-item" data-mode={s.mode ?? ""} data-submission-id={s.id}>
            <span class={`badge mode-${s.mode ?? "other"}`} data-testid="queued-mode">
              {MODE_LABEL[s.mode ?? ""] ?? s.kind}
            </span>
            <span class="queued-text" data-testid="queued-text">
              {textOf(s.content, "text") ?? s.kind}
            </span>
            <button type="button" class="link" data-testid="withdraw" onClick={() => onWithdraw(s.id)}>
              Withdraw
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}
