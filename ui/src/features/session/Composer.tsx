import { useState } from "preact/hooks";

interface Props {
  onSend: (text: string) => Promise<void> | void;
  disabled?: boolean;
  hint?: string;
  placeholder?: string;
}

/** Enter sends; Shift+Enter starts a new line. */
export function Composer({ onSend, disabled, hint, placeholder }: Props) {
  const [text, setText] = useState("");
  const [sending, setSending] = useState(false);
  const send = async () => {
    const goal = text.trim();
    if (!goal || disabled || sending) return;
    setSending(true);
    try {
      await onSend(goal);
      setText("");
    } finally {
      setSending(false);
    }
  };
  return (
    <form
      class="composer"
      onSubmit={(e) => {
        e.preventDefault();
        void send();
      }}
    >
      <textarea
        data-testid="composer-input"
        rows={3}
        value={text}
        placeholder={placeholder ?? "Tell the agent what to do… (Enter sends, Shift+Enter for a new line)"}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
            e.preventDefault();
            void send();
          }
        }}
      />
      <div class="composer-row">
        {hint && <span class="muted">{hint}</span>}
        <button type="submit" data-testid="send" disabled={disabled || sending || !text.trim()}>
          Send
        </button>
      </div>
    </form>
  );
}
