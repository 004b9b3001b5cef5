// Whether a new session is named by the model after its first answer (one small request,
// no tools), or keeps the first line of its first message. The default asks only a model
// that costs nothing.
import { useEffect, useState } from "preact/hooks";
import { errorMessage, sessionTitles, setSessionTitles } from "../../api/commands";
import type { SessionTitles } from "../../api/generated/bindings";
import { usePartLoaded } from "../../lib/loaded";
import { StatusLine, type Status } from "./fields";

const CHOICES: { value: SessionTitles; label: string }[] = [
  { value: "always", label: "Always" },
  { value: "free_models", label: "With free models" },
  { value: "off", label: "Never" },
];

export function SessionTitlesSection() {
  const [choice, setChoice] = useState<SessionTitles | null>(null);
  const [status, setStatus] = useState<Status>(null);
  useEffect(() => {
    sessionTitles()
      .then(setChoice)
      .catch((e) => setStatus({ tone: "error", text: errorMessage(e) }));
  }, []);
  usePartLoaded(choice !== null || status !== null);

  const choose = async (value: SessionTitles) => {
    setStatus(null);
    try {
      await setSessionTitles(value);
      setChoice(value);
    } catch (e) {
      setStatus({ tone: "error", text: errorMessage(e) });
    }
  };

  return (
    <section class="card" data-testid="titles-settings" aria-labelledby="titles-title">
      <h2 id="titles-title">Session titles</h2>
      <div class="segmented" role="radiogroup" aria-labelledby="titles-title" data-testid="titles-choice">
        {CHOICES.map((c) => (
          <button
            type="button"
            key={c.value}
            role="radio"
            aria-checked={choice === c.value}
            class={choice === c.value ? "active" : ""}
            data-testid={`titles-${c.value}`}
            disabled={choice === null}
            onClick={() => void choose(c.value)}
          >
            {c.label}
          </button>
        ))}
      </div>
      <p class="muted">
        After a new conversation's first answer, the model names it in a few words: one short extra request. Free
        models are the built-in model, a server on this computer, and a model priced at $0. Otherwise, and whenever you
        rename a conversation, it keeps your title.
      </p>
      <StatusLine status={status} testid="titles-status" />
    </section>
  );
}
