import { useState } from "preact/hooks";
import type { WhenBusy } from "../../api/generated/bindings";

interface Props {
  onSend: (text: string, whenBusy: WhenBusy) => Promise<void> | void;
  disabled?: boolean;
  /** The agent is working: what is sent waits in the inbox as a follow-up or a steer. */
  busy?: boolean;
  hint?: string;
  placeholder?: string;
}

const MODES: { mode: WhenBusy; label: string; title: string }[] = [
  { mode: "followUp", label: "Follow-up", title: "Sent after the current answer, as the next message" },
  { mode: "steer", label: "Steer", title: "Given to the agent at its next step (after its current tool calls)" },
];

/** Enter sends; Shift+Enter starts a new line. While busy, Follow-up (default) or Steer. */
export function Composer({ onSend, disabled, busy, hint, placeholder }: Props) {
  const [text, setText] = useState("");
  const [mode, setMode] = useState<WhenBusy>("followUp");
  const [sending, setSending] = useState(false);
  const send = async () => {
    const goal = text.trim();
    if (!goal || disabled || sending) return;
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
      onSubmit={(e) => {
        e.preventDefault();
        void send();
      }}
    >
      <textarea
        data-testid="composer-input"
        rows={3}
        value={text}
        placeholder={
          placeholder ??
          (busy
            ? "The agent is working — your message waits until it can be read (Enter queues it)"
            : "Tell the agent what to do… (Enter sends, Shift+Enter for a new line)")
        }
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
            e.preventDefault();
            void send();
          }
        }}
      />
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
        {hint && <span class="muted">{hint}</span>}
        <button type="submit" data-testid="send" disabled={disabled || sending || !text.trim()}>
          {busy ? (mode === "steer" ? "Steer" : "Queue") : "Send"}
        </button>
      </div>
    </form>
  );
}
