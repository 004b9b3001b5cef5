// Settings → Data: the store's backups (newest first), "Back up now", how many daily copies
// are kept, and "Restore…" behind a confirm dialog (restore.ts). The logic is core's
// (core/src/api/data.rs), shared with `pocketpilot backup`.
import { useEffect, useRef, useState } from "preact/hooks";
import { backupNow, dataView, errorMessage, restoreBackup, setBackupSettings } from "../../api/commands";
import type { BackupFile, DataView } from "../../api/generated/bindings";
import { modalKeyDown } from "../../lib/dialogKeys";
import { usePartLoaded } from "../../lib/loaded";
import { confirmThenRestore, sizeText, type RestorePrompt } from "./restore";

interface Asking {
  prompt: RestorePrompt;
  answer: (yes: boolean) => void;
}

export function DataSection() {
  const [view, setView] = useState<DataView | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [asking, setAsking] = useState<Asking | null>(null);
  useEffect(() => {
    dataView()
      .then(setView)
      .catch((e) => setError(errorMessage(e)));
  }, []);
  usePartLoaded(view !== null || error !== null);
  const apply = (p: Promise<DataView>) => {
    setBusy(true);
    p.then((v) => {
      setView(v);
      setError(null);
    })
      .catch((e) => setError(errorMessage(e)))
      .finally(() => setBusy(false));
  };
  const ask = (prompt: RestorePrompt) =>
    new Promise<boolean>((resolve) =>
      setAsking({
        prompt,
        answer: (yes) => {
          setAsking(null);
          resolve(yes);
        },
      }),
    );
  const restore = (b: BackupFile) => {
    const newest = view?.backups.reduce((m, x) => Math.max(m, x.schema_version), 0) ?? null;
    confirmThenRestore(b, ask, restoreBackup, newest).catch((e) => setError(errorMessage(e)));
  };
  return (
    <section class="card" data-testid="data-settings">
      <h2>Data</h2>
      <p class="muted">
        Copies of everything PocketPilot keeps (sessions, tasks, answers, approvals, triggers, memories), made before
        each upgrade and once a day{view ? ` in ${view.dir}` : ""}.
      </p>
      {view && (
        <>
          <div class="row">
            <button type="button" data-testid="backup-now" disabled={busy} onClick={() => apply(backupNow())}>
              Back up now
            </button>{" "}
            <label>
              Keep the newest copy of the last{" "}
              <input
                type="number"
                min={1}
                max={365}
                data-testid="backup-keep-daily"
                value={view.settings.keep_daily}
                onChange={(e) =>
                  apply(setBackupSettings({ keep_daily: Number((e.target as HTMLInputElement).value) }))
                }
              />{" "}
              days (and of each version)
            </label>
          </div>
          {view.pending_restore && (
            <div class="notice info" data-testid="restore-pending">
              {view.pending_restore} is put back when PocketPilot restarts.
            </div>
          )}
          {view.backups.length === 0 ? (
            <p class="muted" data-testid="no-backups">No backups yet.</p>
          ) : (
            <ul class="backups" data-testid="backups">
              {view.backups.map((b) => (
                <li key={b.name} data-testid="backup-row">
                  <code>{b.taken_at}</code> <span class="muted">schema {b.schema_version}, {sizeText(b.bytes)}</span>{" "}
                  <button type="button" data-testid="backup-restore" onClick={() => restore(b)}>
                    Restore…
                  </button>
                </li>
              ))}
            </ul>
          )}
        </>
      )}
      {error && (
        <div class="notice error" role="status" data-testid="data-status">
          {error}
        </div>
      )}
      {asking && <ConfirmRestore asking={asking} />}
    </section>
  );
}

/** Keyboard-first like the other confirms: focus starts on Cancel, Tab stays inside, Esc cancels. */
function ConfirmRestore({ asking }: { asking: Asking }) {
  const dialog = useRef<HTMLDivElement>(null);
  const cancel = useRef<HTMLButtonElement>(null);
  useEffect(() => cancel.current?.focus(), []);
  const onKeyDown = (e: KeyboardEvent) => modalKeyDown(e, dialog.current, () => asking.answer(false));
  return (
    <div class="overlay">
      <div
        class="dialog confirm-delete"
        role="alertdialog"
        aria-modal="true"
        aria-labelledby="restore-title"
        aria-describedby="restore-what"
        data-testid="restore-confirm"
        ref={dialog}
        onKeyDown={onKeyDown}
      >
        <h2 id="restore-title">{asking.prompt.title}</h2>
        <p id="restore-what">{asking.prompt.body}</p>
        <div class="dialog-buttons">
          <button type="button" class="danger" data-testid="restore-confirm-yes" onClick={() => asking.answer(true)}>
            {asking.prompt.confirm}
          </button>
          <button type="button" ref={cancel} data-testid="restore-confirm-no" onClick={() => asking.answer(false)}>
            Cancel
          </button>
        </div>
      </div>
    </div>
  );
}
