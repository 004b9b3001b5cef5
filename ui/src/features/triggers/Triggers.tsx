// Background work in the settings screen: webhooks (the token shown once), schedules
// (with the next fire time), file watches, "pause all", and MCP servers. Every change
// goes to the runtime through the api module; the runtime's error messages are shown as
// they come (a bad cron expression says what is wrong and what would do).
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import {
  addMcpServer,
  createSchedule,
  createWatch,
  createWebhook,
  deleteMcpServer,
  deleteSchedule,
  deleteWatch,
  deleteWebhook,
  errorKind,
  errorMessage,
  listMcpServers,
  listSchedules,
  listWatches,
  listWebhooks,
  pickFolder,
  setSchedulePaused,
  setTriggersPaused,
  setWatchPaused,
  setWebhookPaused,
  triggerStatus,
} from "../../api/commands";
import type { CreatedWebhook, McpServer, Schedule, TriggerStatus, Watch, Webhook } from "../../api/generated/bindings";
import { useChanges } from "../../store/useStore";
import { usePartLoaded } from "../../lib/loaded";
import { EMPTY_MCP_FORM, commandLineOf, describeNextFire, hookUrl, toNewMcpServer, type McpForm } from "./forms";
import "./triggers.css";

type Status = { tone: "ok" | "error"; text: string; kind?: string | null } | null;

const failed = (e: unknown): Status => ({ tone: "error", text: errorMessage(e), kind: errorKind(e) });

function StatusLine({ status, testid }: { status: Status; testid: string }) {
  if (!status) return null;
  return (
    <div
      class={`notice ${status.tone === "ok" ? "info" : "error"}`}
      data-testid={testid}
      data-kind={status.kind ?? ""}
      role={status.tone === "error" ? "alert" : "status"}
    >
      {status.text}
    </div>
  );
}

/** A workspace folder: typed, picked from the known ones, or chosen with the folder picker. */
function WorkspaceField({
  value,
  onChange,
  workspaces,
  testid,
  optional,
}: {
  value: string;
  onChange: (v: string) => void;
  workspaces: string[];
  testid: string;
  optional?: boolean;
}) {
  const list = `${testid}-known`;
  const choose = async () => {
    const picked = await pickFolder().catch(() => null);
    if (picked) onChange(picked);
  };
  return (
    <label class="field">
      {optional ? "Workspace (empty: every workspace)" : "Workspace"}
      <div class="row">
        <input
          data-testid={testid}
          list={list}
          value={value}
          placeholder={optional ? "every workspace" : "/path/to/project"}
          onInput={(e) => onChange((e.target as HTMLInputElement).value)}
        />
        <button type="button" onClick={choose} title="Choose a folder">
          Choose…
        </button>
      </div>
      <datalist id={list}>
        {workspaces.map((w) => (
          <option key={w} value={w} />
        ))}
      </datalist>
    </label>
  );
}

function Row({ children, actions }: { children: ComponentChildren; actions: ComponentChildren }) {
  return (
    <>
      <div class="trigger-main">{children}</div>
      <div class="trigger-actions">{actions}</div>
    </>
  );
}

function PauseButton({ paused, onToggle, testid }: { paused: boolean; onToggle: () => void; testid: string }) {
  return (
    <button type="button" data-testid={testid} onClick={onToggle}>
      {paused ? "Resume" : "Pause"}
    </button>
  );
}

/**
 * A reload whose answer is applied only when no later reload started meanwhile: reads
 * overlap (an action's own reload, a pushed change), and an older answer that comes back
 * last must not undo a newer one.
 */
function useNewest<T>(load: () => Promise<T>, apply: (v: T) => void, fail: (e: unknown) => void) {
  const latest = useRef(0);
  // The section has loaded once the newest read has answered, either way.
  const [answered, setAnswered] = useState(false);
  usePartLoaded(answered);
  return useCallback(async () => {
    const ticket = ++latest.current;
    try {
      const v = await load();
      if (ticket === latest.current) apply(v);
    } catch (e) {
      if (ticket === latest.current) fail(e);
    }
    if (ticket === latest.current) setAnswered(true);
  }, []);
}

/** Re-reads when trigger definitions change: here, in another view, or from the CLI. */
function useTriggerChanges(reload: () => Promise<void>) {
  useChanges(
    (c) => {
      if (c.kind === "triggers" || c.kind === "refresh") void reload();
    },
    [reload],
  );
}

/** Runs an action, then reloads; a rejection lands in the section's status line. */
function useAction(reload: () => Promise<void>, setStatus: (s: Status) => void) {
  return useCallback(
    async (what: () => Promise<unknown>, done?: string) => {
      try {
        await what();
        setStatus(done ? { tone: "ok", text: done } : null);
      } catch (e) {
        setStatus(failed(e));
      }
      await reload();
    },
    [reload, setStatus],
  );
}

export function TriggerSettings({ workspaces }: { workspaces: string[] }) {
  const [status, setStatus] = useState<TriggerStatus | null>(null);
  const [error, setError] = useState<Status>(null);
  const reload = useNewest(triggerStatus, setStatus, (e) => setError(failed(e)));
  // The listener starts shortly after the window: the feed says when (a `triggers` change).
  useEffect(() => void reload(), [reload]);
  useTriggerChanges(reload);
  const toggleAll = async () => {
    if (!status) return;
    try {
      await setTriggersPaused(!status.all_paused);
      setError(null);
    } catch (e) {
      setError(failed(e));
    }
    await reload();
  };
  return (
    <>
      <section class="card" data-testid="triggers-settings" data-all-paused={status?.all_paused ? "true" : "false"}>
        <h2>Background work</h2>
        <p class="muted">
          Webhooks, schedules and file watches start ordinary tasks: a risky step still waits for your approval.
        </p>
        <div class="row">
          <span class="muted" data-testid="webhook-listener">
            {status?.webhook_base ? `Webhooks listen on ${status.webhook_base}` : "The webhook listener is not running."}
          </span>
          <button type="button" data-testid="pause-all" onClick={toggleAll} disabled={!status}>
            {status?.all_paused ? "Resume all triggers" : "Pause all triggers"}
          </button>
        </div>
        {status?.all_paused && (
          <div class="notice info" data-testid="all-paused">
            All triggers are paused: webhooks answer 503, schedules and watches skip.
          </div>
        )}
        <StatusLine status={error} testid="triggers-status" />
      </section>
      <WebhooksSection workspaces={workspaces} base={status?.webhook_base ?? null} />
      <SchedulesSection workspaces={workspaces} />
      <WatchesSection workspaces={workspaces} />
    </>
  );
}

function WebhooksSection({ workspaces, base }: { workspaces: string[]; base: string | null }) {
  const [hooks, setHooks] = useState<Webhook[]>([]);
  const [name, setName] = useState("");
  const [workspace, setWorkspace] = useState(workspaces[0] ?? "");
  const [created, setCreated] = useState<CreatedWebhook | null>(null);
  const [status, setStatus] = useState<Status>(null);
  useEffect(() => {
    if (!workspace && workspaces[0]) setWorkspace(workspaces[0]);
  }, [workspaces[0]]);
  const reload = useNewest(listWebhooks, setHooks, (e) => setStatus(failed(e)));
  useEffect(() => void reload(), [reload]);
  useTriggerChanges(reload);
  const act = useAction(reload, setStatus);

  const create = async () => {
    setCreated(null);
    try {
      const c = await createWebhook({ name: name.trim(), workspace: workspace.trim() });
      setCreated(c);
      setName("");
      setStatus(null);
    } catch (e) {
      setStatus(failed(e));
    }
    await reload();
  };

  return (
    <section class="card" data-testid="webhooks-settings">
      <h2>Webhooks</h2>
      <p class="muted">
        <code>POST /hooks/NAME</code> with the token in <code>X-PocketPilot-Token</code> and a JSON body{" "}
        <code>{'{"text": "…"}'}</code> starts a task in the hook's workspace.
      </p>
      {hooks.length > 0 && (
        <ul class="trigger-list" data-testid="webhook-list">
          {hooks.map((h) => (
            <li key={h.id} class="trigger-row" data-testid="webhook-row" data-name={h.name} data-paused={String(h.paused)}>
              <Row
                actions={
                  <>
                    <PauseButton
                      testid="webhook-pause"
                      paused={h.paused}
                      onToggle={() => void act(() => setWebhookPaused(h.name, !h.paused))}
                    />
                    <button type="button" class="danger" data-testid="webhook-delete" onClick={() => void act(() => deleteWebhook(h.name))}>
                      Delete
                    </button>
                  </>
                }
              >
                <strong>{h.name}</strong> {h.paused && <span class="badge">paused</span>}
                <div class="muted small">
                  {base ? <code data-testid="webhook-url">{hookUrl(base, h.name)}</code> : null} · {h.workspace}
                  {h.last_fired_at ? ` · last fired ${h.last_fired_at}` : ""}
                </div>
              </Row>
            </li>
          ))}
        </ul>
      )}
      {created && (
        <div class="notice info token-once" data-testid="webhook-created" data-name={created.hook.name}>
          <p>
            Hook <strong>{created.hook.name}</strong> created. Its token is shown <strong>only now</strong>: copy it.
          </p>
          <label class="field">
            Token
            <input readOnly data-testid="webhook-token" value={created.token} onFocus={(e) => (e.target as HTMLInputElement).select()} />
          </label>
          {base && (
            <label class="field">
              URL
              <input readOnly data-testid="webhook-created-url" value={hookUrl(base, created.hook.name)} />
            </label>
          )}
          {base && (
            <pre class="example">
              {`curl -X POST ${hookUrl(base, created.hook.name)} \\\n  -H 'X-PocketPilot-Token: ${created.token}' \\\n  -H 'Content-Type: application/json' \\\n  -d '{"text": "What changed?"}'`}
            </pre>
          )}
          <button type="button" data-testid="webhook-token-done" onClick={() => setCreated(null)}>
            I have copied it
          </button>
        </div>
      )}
      <div class="grid two">
        <label class="field">
          Name (letters, digits, - and _)
          <input data-testid="webhook-name" value={name} placeholder="deploy" onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        </label>
        <WorkspaceField value={workspace} onChange={setWorkspace} workspaces={workspaces} testid="webhook-workspace" />
      </div>
      <div class="row actions">
        <button type="button" class="primary" data-testid="webhook-create" onClick={create}>
          Create webhook
        </button>
      </div>
      <StatusLine status={status} testid="webhook-status" />
    </section>
  );
}

function SchedulesSection({ workspaces }: { workspaces: string[] }) {
  const [schedules, setSchedules] = useState<Schedule[]>([]);
  const [expr, setExpr] = useState("");
  const [goal, setGoal] = useState("");
  const [catchUp, setCatchUp] = useState(false);
  const [workspace, setWorkspace] = useState(workspaces[0] ?? "");
  const [status, setStatus] = useState<Status>(null);
  useEffect(() => {
    if (!workspace && workspaces[0]) setWorkspace(workspaces[0]);
  }, [workspaces[0]]);
  const reload = useNewest(listSchedules, setSchedules, (e) => setStatus(failed(e)));
  useEffect(() => void reload(), [reload]);
  useTriggerChanges(reload);
  const act = useAction(reload, setStatus);
  const create = () =>
    act(async () => {
      await createSchedule({ expr: expr.trim(), workspace: workspace.trim(), goal, catch_up: catchUp });
      setExpr("");
      setGoal("");
    }, "Schedule created.");
  const now = new Date();

  return (
    <section class="card" data-testid="schedules-settings">
      <h2>Schedules</h2>
      {schedules.length > 0 && (
        <ul class="trigger-list" data-testid="schedule-list">
          {schedules.map((s) => (
            <li key={s.id} class="trigger-row" data-testid="schedule-row" data-id={s.id} data-paused={String(s.paused)}>
              <Row
                actions={
                  <>
                    <PauseButton
                      testid="schedule-pause"
                      paused={s.paused}
                      onToggle={() => void act(() => setSchedulePaused(s.id, !s.paused))}
                    />
                    <button type="button" class="danger" data-testid="schedule-delete" onClick={() => void act(() => deleteSchedule(s.id))}>
                      Delete
                    </button>
                  </>
                }
              >
                <code>{s.expr}</code> <span class="goal-inline">{s.goal}</span>
                <div class="muted small">
                  Next: <span data-testid="schedule-next">{describeNextFire(s.next_fire, s.paused, now)}</span> · {s.workspace}
                  {s.catch_up ? " · catches up one missed run" : ""}
                </div>
              </Row>
            </li>
          ))}
        </ul>
      )}
      <div class="grid two">
        <label class="field">
          When (5 fields in UTC, or @hourly, @daily, @weekly)
          <input data-testid="schedule-expr" value={expr} placeholder="0 9 * * MON-FRI" onInput={(e) => setExpr((e.target as HTMLInputElement).value)} />
        </label>
        <WorkspaceField value={workspace} onChange={setWorkspace} workspaces={workspaces} testid="schedule-workspace" />
      </div>
      <label class="field">
        Goal
        <textarea data-testid="schedule-goal" rows={2} value={goal} placeholder="Summarise yesterday's changes in NOTES.md" onInput={(e) => setGoal((e.target as HTMLTextAreaElement).value)} />
      </label>
      <label class="check">
        <input type="checkbox" data-testid="schedule-catch-up" checked={catchUp} onChange={(e) => setCatchUp((e.target as HTMLInputElement).checked)} />
        After PocketPilot was closed, run the latest missed time (once)
      </label>
      <div class="row actions">
        <button type="button" class="primary" data-testid="schedule-create" onClick={() => void create()}>
          Add schedule
        </button>
      </div>
      <StatusLine status={status} testid="schedule-status" />
    </section>
  );
}

function WatchesSection({ workspaces }: { workspaces: string[] }) {
  const [watches, setWatches] = useState<Watch[]>([]);
  const [pattern, setPattern] = useState("");
  const [goal, setGoal] = useState("");
  const [interval, setInterval_] = useState("");
  const [workspace, setWorkspace] = useState(workspaces[0] ?? "");
  const [status, setStatus] = useState<Status>(null);
  useEffect(() => {
    if (!workspace && workspaces[0]) setWorkspace(workspaces[0]);
  }, [workspaces[0]]);
  const reload = useNewest(listWatches, setWatches, (e) => setStatus(failed(e)));
  useEffect(() => void reload(), [reload]);
  useTriggerChanges(reload);
  const act = useAction(reload, setStatus);
  const create = () =>
    act(async () => {
      const secs = interval.trim() === "" ? null : Number(interval);
      if (secs !== null && (!Number.isInteger(secs) || secs < 0)) {
        throw new Error("the interval must be a whole number of seconds");
      }
      await createWatch({ pattern: pattern.trim(), workspace: workspace.trim(), goal, min_interval_secs: secs });
      setPattern("");
      setGoal("");
    }, "Watch created.");

  return (
    <section class="card" data-testid="watches-settings">
      <h2>File watches</h2>
      <p class="muted">A change to matching files starts a task that names them; the agent's own writes do not.</p>
      {watches.length > 0 && (
        <ul class="trigger-list" data-testid="watch-list">
          {watches.map((w) => (
            <li key={w.id} class="trigger-row" data-testid="watch-row" data-id={w.id} data-paused={String(w.paused)}>
              <Row
                actions={
                  <>
                    <PauseButton testid="watch-pause" paused={w.paused} onToggle={() => void act(() => setWatchPaused(w.id, !w.paused))} />
                    <button type="button" class="danger" data-testid="watch-delete" onClick={() => void act(() => deleteWatch(w.id))}>
                      Delete
                    </button>
                  </>
                }
              >
                <code>{w.pattern}</code> {w.paused && <span class="badge">paused</span>} <span class="goal-inline">{w.goal}</span>
                <div class="muted small">
                  {w.workspace} · at most one task per {w.min_interval_secs} s
                  {w.last_fired_at ? ` · last fired ${w.last_fired_at}` : ""}
                </div>
              </Row>
            </li>
          ))}
        </ul>
      )}
      <div class="grid two">
        <label class="field">
          Path or glob inside the workspace
          <input data-testid="watch-pattern" value={pattern} placeholder="src/**/*.rs" onInput={(e) => setPattern((e.target as HTMLInputElement).value)} />
        </label>
        <WorkspaceField value={workspace} onChange={setWorkspace} workspaces={workspaces} testid="watch-workspace" />
      </div>
      <label class="field">
        Goal
        <textarea data-testid="watch-goal" rows={2} value={goal} placeholder="Review the changed files" onInput={(e) => setGoal((e.target as HTMLTextAreaElement).value)} />
      </label>
      <label class="field">
        At most one task every … seconds (empty: 30)
        <input type="number" min={0} data-testid="watch-interval" value={interval} onInput={(e) => setInterval_((e.target as HTMLInputElement).value)} />
      </label>
      <div class="row actions">
        <button type="button" class="primary" data-testid="watch-create" onClick={() => void create()}>
          Add watch
        </button>
      </div>
      <StatusLine status={status} testid="watch-status" />
    </section>
  );
}

export function McpSettings({ workspaces }: { workspaces: string[] }) {
  const [servers, setServers] = useState<McpServer[]>([]);
  const [form, setForm] = useState<McpForm>(EMPTY_MCP_FORM);
  const [status, setStatus] = useState<Status>(null);
  const reload = useNewest(listMcpServers, setServers, (e) => setStatus(failed(e)));
  useEffect(() => void reload(), [reload]);
  useTriggerChanges(reload);
  const act = useAction(reload, setStatus);
  const set = <K extends keyof McpForm>(k: K, v: McpForm[K]) => setForm({ ...form, [k]: v });
  const text = (k: "name" | "commandLine" | "env" | "url" | "capability" | "startupTimeout" | "callTimeout") => (e: Event) =>
    set(k, (e.target as HTMLInputElement).value);
  const add = () =>
    act(async () => {
      const s = await addMcpServer(toNewMcpServer(form));
      setForm({ ...EMPTY_MCP_FORM, workspace: form.workspace });
      return s;
    }, "Server saved. Runs started from now on can use its tools.");

  return (
    <section class="card" data-testid="mcp-settings">
      <h2>MCP servers</h2>
      <p class="muted">
        Their tools appear as <code>mcp:SERVER:TOOL</code>. Each call asks for approval unless the capability below allows it.
      </p>
      {servers.length > 0 && (
        <ul class="trigger-list" data-testid="mcp-list">
          {servers.map((s) => (
            <li key={`${s.name}@${s.workspace ?? ""}`} class="trigger-row" data-testid="mcp-row" data-name={s.name} data-workspace={s.workspace ?? ""}>
              <Row
                actions={
                  <button type="button" class="danger" data-testid="mcp-delete" onClick={() => void act(() => deleteMcpServer(s.name, s.workspace))}>
                    Delete
                  </button>
                }
              >
                <strong>{s.name}</strong> <span class="badge">{s.url ? "HTTP" : "stdio"}</span>
                <div class="muted small">
                  <code data-testid="mcp-how">{s.url ?? commandLineOf(s.command ?? "", s.args)}</code>
                </div>
                <div class="muted small">
                  {s.workspace ?? "every workspace"} · {s.capability ?? "mcp:execute (asks)"}
                  {s.allow_read_only ? " · read-only tools allowed" : ""} · start {s.startup_timeout_secs} s, call {s.call_timeout_secs} s
                  {s.secret_env.length ? ` · secrets: ${s.secret_env.join(", ")}` : ""}
                </div>
              </Row>
            </li>
          ))}
        </ul>
      )}
      <div class="grid two">
        <label class="field">
          Name
          <input data-testid="mcp-name" value={form.name} placeholder="files" onInput={text("name")} />
        </label>
        <WorkspaceField value={form.workspace} onChange={(v) => set("workspace", v)} workspaces={workspaces} testid="mcp-workspace" optional />
      </div>
      <div class="row" role="radiogroup">
        <label class="check">
          <input type="radio" name="mcp-kind" data-testid="mcp-kind-stdio" checked={form.kind === "stdio"} onChange={() => set("kind", "stdio")} />
          Command (stdio)
        </label>
        <label class="check">
          <input type="radio" name="mcp-kind" data-testid="mcp-kind-http" checked={form.kind === "http"} onChange={() => set("kind", "http")} />
          URL (streamable HTTP)
        </label>
      </div>
      {form.kind === "stdio" ? (
        <>
          <label class="field">
            Command and arguments (quote an argument with spaces)
            <input data-testid="mcp-command" value={form.commandLine} placeholder="npx -y @modelcontextprotocol/server-everything" onInput={text("commandLine")} />
          </label>
          <label class="field">
            <span>
              Environment, one NAME=value a line (not for secrets: use <code>pocketpilot mcp secret</code>)
            </span>
            <textarea data-testid="mcp-env" rows={2} value={form.env} onInput={text("env")} />
          </label>
        </>
      ) : (
        <label class="field">
          URL
          <input data-testid="mcp-url" value={form.url} placeholder="http://127.0.0.1:3001/mcp" onInput={text("url")} />
        </label>
      )}
      <div class="grid">
        <label class="field">
          Capability (empty: mcp:execute, asks)
          <input data-testid="mcp-capability" value={form.capability} placeholder="mcp:execute" onInput={text("capability")} />
        </label>
        <label class="field">
          Startup timeout, s (empty: 30)
          <input type="number" min={1} data-testid="mcp-startup-timeout" value={form.startupTimeout} onInput={text("startupTimeout")} />
        </label>
        <label class="field">
          Call timeout, s (empty: 120)
          <input type="number" min={1} data-testid="mcp-call-timeout" value={form.callTimeout} onInput={text("callTimeout")} />
        </label>
      </div>
      <label class="check">
        <input type="checkbox" data-testid="mcp-read-only" checked={form.allowReadOnly} onChange={(e) => set("allowReadOnly", (e.target as HTMLInputElement).checked)} />
        Let tools the server marks read-only run without asking (mcp:read)
      </label>
      <div class="row actions">
        <button type="button" class="primary" data-testid="mcp-add" onClick={() => void add()}>
          Add server
        </button>
      </div>
      <StatusLine status={status} testid="mcp-status" />
    </section>
  );
}
