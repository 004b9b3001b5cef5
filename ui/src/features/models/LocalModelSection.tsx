// Settings → Built-in model: the server's state (stopped, starting, ready with its port and
// memory, crashed with its log's last lines), the built-in model's settings, and the way to
// the Models screen.
import { useEffect, useState } from "preact/hooks";
import { errorMessage, localModelForm, saveLocalModelForm } from "../../api/commands";
import type { LocalModelForm } from "../../api/generated/bindings";
import { usePartLoaded } from "../../lib/loaded";
import { hrefOf } from "../../lib/route";
import { StatusLine, type Status } from "../settings/fields";
import { ServerStatus } from "./ServerStatus";
import { refreshLocalServer, useLocalServer } from "./useLocalServer";
import "./models.css";

export function LocalModelSection() {
  const [form, setForm] = useState<LocalModelForm | null>(null);
  const [status, setStatus] = useState<Status>(null);
  const server = useLocalServer();
  useEffect(() => {
    localModelForm()
      .then(setForm)
      .catch((e) => setStatus({ tone: "error", text: errorMessage(e) }));
    // The memory figure is read now, not the one from when the server became ready.
    void refreshLocalServer().catch(() => undefined);
  }, []);
  usePartLoaded(form !== null || status !== null);

  const save = async (e: Event) => {
    e.preventDefault();
    if (!form) return;
    setStatus(null);
    try {
      await saveLocalModelForm(form);
      setStatus({ tone: "ok", text: "Saved. The server uses these the next time it starts." });
    } catch (err) {
      setStatus({ tone: "error", text: errorMessage(err) });
    }
  };
  const num = (field: "idle_minutes" | "max_context") => (e: Event) =>
    form && setForm({ ...form, [field]: Number((e.target as HTMLInputElement).value) });

  return (
    <section class="card" data-testid="local-model-settings" aria-labelledby="local-model-title">
      <h2 id="local-model-title">Built-in model</h2>
      <p class="muted">
        With no provider set up, conversations use a model on this computer, run by a server PocketPilot starts when
        needed and stops when idle.
      </p>
      <ServerStatus status={server} />
      {form && (
        <form onSubmit={(e) => void save(e)}>
          <label class="field check">
            <input
              type="checkbox"
              data-testid="local-enabled"
              checked={form.enabled}
              onChange={(e) => setForm({ ...form, enabled: (e.target as HTMLInputElement).checked })}
            />
            Use the built-in model when no provider is set up
          </label>
          <div class="local-form">
            <label class="field">
              Stop the server after this many idle minutes
              <input type="number" min={1} max={1440} data-testid="local-idle" value={form.idle_minutes} onInput={num("idle_minutes")} />
            </label>
            <label class="field">
              Largest context (tokens)
              <input
                type="number"
                min={2048}
                step={256}
                data-testid="local-max-context"
                value={form.max_context}
                onInput={num("max_context")}
              />
            </label>
          </div>
          <div class="row actions">
            <button type="submit" class="primary" data-testid="save-local-model">
              Save
            </button>
            <a class="button" href={hrefOf({ name: "models" })} data-testid="open-models">
              Manage models…
            </a>
          </div>
        </form>
      )}
      <StatusLine status={status} testid="local-model-status" />
    </section>
  );
}
