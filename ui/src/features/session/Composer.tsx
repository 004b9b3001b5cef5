import { useEffect, useRef, useState } from "preact/hooks";
import type { WhenBusy } from "../../api/generated/bindings";
import { composerPlaceholder } from "./paused";

interface Props {
  onSend: (text: string, whenBusy: WhenBusy) => Promise<void> | void;
  disabled?: boolean;
  /** The agent is working: what is sent waits in the inbox as a follow-up or a steer. */
  busy?: boolean;
  /** The run is paused for the person (a budget ran out): the box says so. */
  paused?: boolean;
  hint?: string;
  placeholder?: string;
  /** Sending is refused, and this says why (in place, under the box). */
  blocked?: string | null;
  /** Stops the running task: Esc in the box asks first. */
  onStop?: () => void;
  /** Text put in the box from outside (an example goal); a new `n` puts it again. */
  draft?: { text: string; n: number } | null;
  /** Plan mode: on, each run only reads and ends with a plan to approve. */
  planMode?: boolean;
  onPlanMode?: (on: boolean) => void;
}

const MODES: { mode: WhenBusy; label: string; title: string }[] = [
  { mode: "followUp", label: "Follow-up", title: "Sent after the current answer, as the next message" },
  { mode: "steer", label: "Steer", title: "Given to the agent at its next step (after its current tool calls)" },
];

/** Enter sends; Shift+Enter starts a new line. While busy, Follow-up (default) or Steer. */
export function Composer({
  onSend,
  disabled,
  busy,
  paused,
  hint,
  placeholder,
  blocked,
  onStop,
  draft,
  planMode,
  onPlanMode,
}: Props) {
  const [text, setText] = useState("");
  const box = useRef<HTMLTextAreaElement>(null);
  useEffect(() => {
    if (!draft) return;
    setText(draft.text);
    box.current?.focus();
  }, [draft?.n]);
  const [mode, setMode] = useState<WhenBusy>("followUp");
  const [sending, setSending] = useState(false);
  const [confirmStop, setConfirmStop] = useState(false);
  const stopButton = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (confirmStop) stopButton.current?.focus();
  }, [confirmStop]);
  useEffect(() => {
    if (!busy) setConfirmStop(false);
  }, [busy]);
  const refused = !!blocked || !!disabled;
  const send = async () => {
    const goal = text.trim();
    if (!goal || refused || sending) return;
    setSending(true);
    try {
      await onSend(goal, mode);
      setText("");
    } finally {
      setSending(false);
    }
  };
  return (
    <form
      class="composer"
      data-busy={busy ? "true" : "false"}
      data-paused={paused ? "true" : "false"}
      onSubmit={(e) => {
        e.preventDefault();
        void send();
      }}
    >
      <textarea
        ref={box}
        data-testid="composer-input"
        aria-label="Message to the agent"
        aria-describedby={blocked ? "composer-blocked" : undefined}
        rows={3}
        value={text}
        placeholder={placeholder ?? composerPlaceholder(paused ? "paused" : busy ? "working" : "idle")}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
            e.preventDefault();
            void send();
          } else if (e.key === "Escape" && busy && onStop) {
            e.preventDefault();
            setConfirmStop(true);
          }
        }}
      />
      {blocked && (
        <div class="composer-blocked" id="composer-blocked" role="alert" data-testid="composer-blocked">
          {blocked} <a href="#/settings">Open Settings</a>
        </div>
      )}
      {confirmStop && onStop && (
        <div
          class="confirm-stop"
          role="alertdialog"
          aria-label="Stop the run?"
          data-testid="confirm-stop"
          onKeyDown={(e) => {
            if (e.key === "Escape") {
              e.preventDefault();
              setConfirmStop(false);
            }
          }}
        >
          <span>Stop the run? What it has done so far stays.</span>
          <button
            type="button"
            ref={stopButton}
            class="danger"
            data-testid="confirm-stop-yes"
            onClick={() => {
              setConfirmStop(false);
              onStop();
            }}
          >
            Stop
          </button>
          <button type="button" data-testid="confirm-stop-no" onClick={() => setConfirmStop(false)}>
            Keep running
          </button>
        </div>
      )}
      <div class="composer-row">
        {busy && (
          <div class="segmented" role="radiogroup" aria-label="While the agent is working" data-testid="busy-mode">
            {MODES.map((m) => (
              <button
                type="button"
                key={m.mode}
                role="radio"
                aria-checked={mode === m.mode}
                class={mode === m.mode ? "active" : ""}
                title={m.title}
                data-testid={`mode-${m.mode}`}
                onClick={() => setMode(m.mode)}
              >
                {m.label}
              </button>
            ))}
          </div>
        )}
        {onPlanMode && (
          <label class="plan-toggle" title="The agent only reads, then proposes a plan; nothing is written or run until you approve it">
            <input
              type="checkbox"
              data-testid="plan-mode"
              checked={!!planMode}
              onChange={(e) => onPlanMode((e.target as HTMLInputElement).checked)}
            />
            Plan first
          </label>
        )}
        {hint && <span class="muted">{hint}</span>}
        <button type="submit" class="primary" data-testid="send" disabled={refused || sending || !text.trim()}>
          {busy ? (mode === "steer" ? "Steer" : "Queue") : "Send"}
        </button>
      </div>
    </form>
  );
}
