// Settings → Undo history: how much disk and how many days the kept contents may use, and
// which directories the scan never enters.
import { useEffect, useState } from "preact/hooks";
import { changeSettings, errorMessage, setChangeSettings } from "../../api/commands";
import type { ChangeSettings } from "../../api/generated/bindings";
import { usePartLoaded } from "../../lib/loaded";

export function UndoHistorySettings() {
  const [s, setS] = useState<ChangeSettings | null>(null);
  const [status, setStatus] = useState<{ tone: "ok" | "error"; text: string } | null>(null);
  useEffect(() => {
    changeSettings()
      .then(setS)
      .catch((e) => setStatus({ tone: "error", text: errorMessage(e) }));
  }, []);
  usePartLoaded(s !== null || status !== null);
  if (!s) return null;
  const num = (field: "max_mib" | "max_age_days") => (e: Event) =>
    setS({ ...s, [field]: Number((e.target as HTMLInputElement).value.trim()) });
  const save = async () => {
    try {
      await setChangeSettings(s);
      setStatus({ tone: "ok", text: "Saved." });
    } catch (e) {
      setStatus({ tone: "error", text: errorMessage(e) });
    }
  };
  return (
    <section class="card" data-testid="undo-history-settings">
      <h2>Undo history</h2>
      <p class="muted">
        What each task changed is kept so it can be undone. Older tasks are pruned first; a pruned task says so instead of
        offering Undo.
      </p>
      <div class="grid">
        <label class="field">
          Disk for kept contents (MiB)
          <input type="number" min={1} data-testid="undo-max-mib" value={s.max_mib} onInput={num("max_mib")} />
        </label>
        <label class="field">
          Keep for (days)
          <input type="number" min={1} data-testid="undo-max-days" value={s.max_age_days} onInput={num("max_age_days")} />
        </label>
        <label class="field">
          Never scanned (folder names, comma-separated)
          <input
            type="text"
            data-testid="undo-ignored"
            value={(s.ignored ?? []).join(", ")}
            onInput={(e) =>
              setS({
                ...s,
                ignored: (e.target as HTMLInputElement).value
                  .split(",")
                  .map((x) => x.trim())
                  .filter((x) => x !== ""),
              })
            }
          />
        </label>
      </div>
      <div class="row actions">
        <button type="button" data-testid="save-undo-history" onClick={save}>
          Save undo history
        </button>
      </div>
      {status && (
        <div class={`notice ${status.tone}`} data-testid="undo-history-status">
          {status.text}
        </div>
      )}
    </section>
  );
}
