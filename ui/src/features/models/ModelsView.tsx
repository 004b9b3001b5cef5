// The Models screen: the models kept on this computer (which one conversations without a
// provider use), importing a GGUF file, downloading one from a URL with its progress and
// Cancel, Use and Remove. Errors are the runtime's own sentence (too large for this
// computer's memory, not a GGUF file, a checksum that does not match).
import { useEffect, useRef, useState } from "preact/hooks";
import {
  cancelPull,
  chooseModel,
  errorMessage,
  importModel,
  localModels,
  pickModelFile,
  pullModel,
  removeModel,
} from "../../api/commands";
import type { ModelRow, PullProgressEvent } from "../../api/generated/bindings";
import { hrefOf } from "../../lib/route";
import { ConfirmRemove } from "./ConfirmRemove";
import { builtinName, describeProgress, percentOf, sizeOf } from "./describe";
import { ServerStatus } from "./ServerStatus";
import { useLocalServer } from "./useLocalServer";
import "./models.css";

type Note = { tone: "ok" | "error"; text: string } | null;

interface Pull {
  url: string;
  progress: PullProgressEvent | null;
  cancelling: boolean;
}

interface Props {
  /** The models kept changed: the built-in model the window offers may have too. */
  onChanged: () => void;
}

export function ModelsView({ onChanged }: Props) {
  const [rows, setRows] = useState<ModelRow[] | null>(null);
  const [note, setNote] = useState<Note>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [removing, setRemoving] = useState<ModelRow | null>(null);
  const server = useLocalServer();

  const reload = async (changed = true) => {
    if (changed) onChanged();
    try {
      setRows(await localModels());
    } catch (e) {
      setRows((r) => r ?? []);
      setNote({ tone: "error", text: errorMessage(e) });
    }
  };
  useEffect(() => void reload(false), []);

  const act = async (what: string, f: () => Promise<string>) => {
    setBusy(what);
    setNote(null);
    try {
      setNote({ tone: "ok", text: await f() });
      await reload();
    } catch (e) {
      setNote({ tone: "error", text: errorMessage(e) });
    } finally {
      setBusy(null);
    }
  };
  const importFile = async () => {
    let path: string | null;
    try {
      path = await pickModelFile();
    } catch (e) {
      setNote({ tone: "error", text: errorMessage(e) });
      return;
    }
    if (path) {
      const picked = path;
      await act("import", async () => `Added ${builtinName(await importModel(picked))}.`);
    }
  };

  return (
    <main class="session-view models-view" data-testid="models-view" data-loaded={rows !== null ? "true" : "false"}>
      <header class="view-head">
        <div class="head-text">
          <h1>Models on this computer</h1>
          <div class="muted">Conversations use the one marked “in use” while no provider is set up.</div>
        </div>
        <a class="button" href={hrefOf({ name: "settings" })} data-testid="models-to-settings">
          Settings
        </a>
      </header>
      <div class="scroll">
        {note && (
          <div
            class={`notice ${note.tone === "ok" ? "info" : "error"}`}
            role={note.tone === "error" ? "alert" : "status"}
            data-testid={note.tone === "error" ? "models-error" : "models-status"}
          >
            {note.text}
          </div>
        )}
        <section class="card" aria-labelledby="models-server-title">
          <h2 id="models-server-title">The model server</h2>
          <ServerStatus status={server} />
        </section>
        <section class="card models-card" aria-labelledby="models-list-title">
          <h2 id="models-list-title">Kept models</h2>
          {rows === null ? (
            <p class="muted">Loading…</p>
          ) : rows.length === 0 ? (
            <p class="muted" data-testid="models-empty">
              No model is kept on this computer yet. Import a GGUF file or download one below.
            </p>
          ) : (
            <ModelTable
              rows={rows}
              busy={busy}
              onUse={(m) => void act(`use:${m.name}`, async () => {
                await chooseModel(m.name);
                return `Conversations without a provider now use ${builtinName(m)}.`;
              })}
              onRemove={setRemoving}
            />
          )}
          <div class="row actions">
            <button type="button" data-testid="import-model" disabled={busy !== null} onClick={() => void importFile()}>
              {busy === "import" ? "Importing…" : "Import a GGUF file…"}
            </button>
          </div>
        </section>
        <PullSection onDone={reload} onNote={setNote} />
      </div>
      {removing && (
        <ConfirmRemove
          model={removing}
          busy={busy !== null}
          onClose={() => setRemoving(null)}
          onConfirm={() => {
            const m = removing;
            void act(`remove:${m.name}`, async () => {
              await removeModel(m.name);
              return `Removed ${builtinName(m)}.`;
            }).finally(() => setRemoving(null));
          }}
        />
      )}
    </main>
  );
}

interface TableProps {
  rows: ModelRow[];
  busy: string | null;
  onUse: (m: ModelRow) => void;
  onRemove: (m: ModelRow) => void;
}

function ModelTable({ rows, busy, onUse, onRemove }: TableProps) {
  return (
    <table class="models-table" data-testid="models-table">
      <caption class="visually-hidden">Models kept on this computer</caption>
      <thead>
        <tr>
          <th scope="col">Model</th>
          <th scope="col">Size</th>
          <th scope="col">Parameters</th>
          <th scope="col">Quantisation</th>
          <th scope="col">Context</th>
          <th scope="col">
            <span class="visually-hidden">Actions</span>
          </th>
        </tr>
      </thead>
      <tbody>
        {rows.map((m) => (
          <tr key={m.name} data-testid="model-row" data-name={m.name} data-in-use={m.in_use ? "true" : "false"}>
            <th scope="row">
              <div class="model-name">
                {builtinName(m)}
                {m.in_use && (
                  <span class="badge in-use" data-testid="model-in-use">
                    in use
                  </span>
                )}
              </div>
              <div class="muted model-id">
                {m.name}
                {m.source === "bundled" ? " · came with PocketPilot" : m.source === "pulled" ? " · downloaded" : " · imported"}
              </div>
            </th>
            <td data-testid="model-size">{sizeOf(m.size_mib)}</td>
            <td>{m.parameters ?? "—"}</td>
            <td>{m.quantization ?? "—"}</td>
            <td>{m.training_context !== null ? `${m.training_context.toLocaleString("en-US")} tokens` : "—"}</td>
            <td class="model-actions">
              {!m.in_use && (
                <button
                  type="button"
                  data-testid="model-use"
                  aria-label={`Use ${builtinName(m)}`}
                  disabled={busy !== null}
                  onClick={() => onUse(m)}
                >
                  Use
                </button>
              )}
              <button
                type="button"
                class="link danger-link"
                data-testid="model-remove"
                aria-label={`Remove ${builtinName(m)}`}
                aria-haspopup="dialog"
                disabled={busy !== null}
                onClick={() => onRemove(m)}
              >
                Remove
              </button>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function PullSection({ onDone, onNote }: { onDone: () => Promise<void>; onNote: (n: Note) => void }) {
  const [url, setUrl] = useState("");
  const [sha, setSha] = useState("");
  const [pull, setPull] = useState<Pull | null>(null);
  const cancelButton = useRef<HTMLButtonElement>(null);
  const urlInput = useRef<HTMLInputElement>(null);

  const start = async (e: Event) => {
    e.preventDefault();
    const target = url.trim();
    if (!target) return;
    onNote(null);
    setPull({ url: target, progress: null, cancelling: false });
    // Focus follows the action: Cancel is what the keyboard wants next.
    requestAnimationFrame(() => cancelButton.current?.focus());
    try {
      const row = await pullModel(target, sha.trim() || null, (p) =>
        setPull((cur) => (cur && cur.url === target ? { ...cur, progress: p } : cur)),
      );
      if (row) {
        onNote({ tone: "ok", text: `Downloaded ${builtinName(row)}.` });
        setUrl("");
        setSha("");
      } else {
        onNote({ tone: "ok", text: "Download cancelled. Downloading the same URL again resumes where it stopped." });
      }
      await onDone();
    } catch (err) {
      onNote({ tone: "error", text: errorMessage(err) });
    } finally {
      setPull(null);
      requestAnimationFrame(() => urlInput.current?.focus());
    }
  };
  const cancel = async () => {
    if (!pull) return;
    setPull({ ...pull, cancelling: true });
    try {
      await cancelPull(pull.url);
    } catch (err) {
      onNote({ tone: "error", text: errorMessage(err) });
    }
  };
  const percent = pull?.progress ? percentOf(pull.progress) : null;

  return (
    <section class="card" aria-labelledby="models-pull-title" data-testid="pull-section">
      <h2 id="models-pull-title">Download a model</h2>
      <form onSubmit={(e) => void start(e)}>
        <label class="field">
          URL of a GGUF file
          <input
            ref={urlInput}
            data-testid="pull-url"
            type="url"
            value={url}
            placeholder="https://huggingface.co/…/model.Q4_K_M.gguf"
            disabled={pull !== null}
            onInput={(e) => setUrl((e.target as HTMLInputElement).value)}
          />
        </label>
        <label class="field">
          SHA-256 (optional: the download is checked against it)
          <input
            data-testid="pull-sha256"
            value={sha}
            spellcheck={false}
            autocomplete="off"
            disabled={pull !== null}
            onInput={(e) => setSha((e.target as HTMLInputElement).value)}
          />
        </label>
        <div class="row actions">
          <button type="submit" class="primary" data-testid="pull-start" disabled={pull !== null || !url.trim()}>
            Download
          </button>
        </div>
      </form>
      {pull && (
        <div class="pull-progress" data-testid="pull-progress" data-percent={percent !== null ? percent.toFixed(1) : ""}>
          <progress
            id="pull-bar"
            max={100}
            value={percent ?? undefined}
            aria-label={`Downloading ${pull.url}`}
            aria-valuetext={pull.progress ? describeProgress(pull.progress) : "Starting the download"}
          />
          <div class="row pull-line">
            <span class="muted" data-testid="pull-figures" aria-live="polite">
              {pull.cancelling ? "Cancelling…" : pull.progress ? describeProgress(pull.progress) : "Connecting…"}
            </span>
            <button
              type="button"
              ref={cancelButton}
              data-testid="pull-cancel"
              disabled={pull.cancelling}
              onClick={() => void cancel()}
            >
              Cancel
            </button>
          </div>
        </div>
      )}
    </section>
  );
}
