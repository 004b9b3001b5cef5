// The session header's context meter (issue 13): used / window tokens of the next
// request, where the window figure came from ("assumed" when nobody said), and the two
// actions on the model's view: "Compact now" and "Fresh context", each confirmed first
// because both change what the model sees from then on.
import { useState } from "preact/hooks";
import { compactNow, errorMessage, freshContext } from "../../api/commands";
import type { ContextUse } from "../../api/generated/bindings";
import { compactChoice, meterLevel, meterPercent, meterText, originLabel } from "./meter";
import "./context.css";

type Action = "compact" | "fresh";
type Result = { tone: "info" | "error"; text: string } | null;

interface Props {
  sessionId: number;
  use: ContextUse | null;
  error: string | null;
  busy: boolean;
  /** The busy run is paused: it asks nothing until continued, so compacting may go ahead. */
  paused?: boolean;
  /** After an action: re-read the meter, the dividers and the history. */
  onChanged: () => void;
}

const fmt = new Intl.NumberFormat("en-US");

export function ContextMeter({ sessionId, use, error, busy, paused = false, onChanged }: Props) {
  const [confirm, setConfirm] = useState<Action | null>(null);
  const [working, setWorking] = useState(false);
  const [result, setResult] = useState<Result>(null);

  const run = async (action: Action) => {
    setConfirm(null);
    setWorking(true);
    setResult(null);
    try {
      if (action === "compact") {
        const r = await compactNow(sessionId);
        setResult({
          tone: "info",
          text: r.compacted
            ? `Compacted: ${fmt.format(r.tokens_before)} → ${fmt.format(r.tokens_after)} tokens.`
            : `Nothing to compact (${fmt.format(r.tokens_before)} tokens).`,
        });
      } else {
        await freshContext(sessionId);
        setResult({ tone: "info", text: "Fresh context: the next turn starts from here." });
      }
    } catch (e) {
      setResult({ tone: "error", text: `${action === "compact" ? "Compact now" : "Fresh context"} failed: ${errorMessage(e)}` });
    } finally {
      setWorking(false);
      onChanged();
    }
  };

  const choice = compactChoice(use, busy && !paused, working);
  return (
    <div class="context-meter" data-testid="context-meter">
      {use ? (
        <span
          class={`meter level-${meterLevel(use)}`}
          data-testid="context-meter-value"
          data-used={use.used}
          data-window={use.window}
          data-origin={use.window_source}
          title={`The next request: about ${fmt.format(use.used)} tokens; a request may take ${fmt.format(use.limit)} (the rest is kept for the answer).`}
        >
          <span class="meter-bar" aria-hidden="true">
            <span style={{ width: `${meterPercent(use)}%` }} />
          </span>
          <span data-testid="context-meter-text">{meterText(use)}</span>{" "}
          <span class={`origin origin-${use.window_source}`} data-testid="context-window-origin">
            {originLabel(use.window_source)}
          </span>
        </span>
      ) : (
        <span class="muted" data-testid="context-meter-loading">
          {error ? `context: ${error}` : "context: …"}
        </span>
      )}
      <button
        type="button"
        data-testid="compact-now"
        disabled={!choice.enabled}
        title={choice.why}
        onClick={() => setConfirm("compact")}
      >
        Compact now
      </button>
      <button type="button" data-testid="fresh-context" disabled={working} onClick={() => setConfirm("fresh")}>
        Fresh context
      </button>
      {!choice.enabled && use && !(busy && !paused) && !working && (
        <span class="muted compact-why" data-testid="compact-why">
          {choice.why}
        </span>
      )}
      {result && (
        <span class={`context-result ${result.tone}`} data-testid="context-action-result" role="status">
          {result.text}
        </span>
      )}
      {confirm && <Confirm action={confirm} busy={busy} paused={paused} onYes={() => void run(confirm)} onNo={() => setConfirm(null)} />}
    </div>
  );
}

function Confirm(p: { action: Action; busy: boolean; paused: boolean; onYes: () => void; onNo: () => void }) {
  const { action, busy, paused, onYes, onNo } = p;
  const compact = action === "compact";
  return (
    <div class="overlay">
      <div class="dialog" role="dialog" aria-modal="true" aria-labelledby="context-confirm-title" data-testid="context-confirm">
        <h2 id="context-confirm-title">{compact ? "Compact the context now?" : "Start a fresh context?"}</h2>
        <p>
          {compact
            ? "The model summarises the older turns of this session and sees the summary instead of them from now on. Your own messages and the last turns stay word for word. The transcript keeps everything."
            : "The model forgets this session's conversation: the next turn starts from nothing but your next message. The transcript keeps everything."}
          {!compact && busy && " The run in progress ends at its next step."}
          {compact && paused && " The paused run sees the summary when you continue it."}
        </p>
        <div class="dialog-buttons">
          <button type="button" class="primary" data-testid="context-confirm-yes" onClick={onYes}>
            {compact ? "Compact now" : "Start fresh"}
          </button>
          <button type="button" data-testid="context-confirm-no" onClick={onNo}>
            Cancel
          </button>
        </div>
      </div>
    </div>
  );
}
