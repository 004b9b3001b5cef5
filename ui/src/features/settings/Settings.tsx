// Settings: the model provider (base URL, model, API key — write-only, kept in the OS
// keychain), "test connection", limits, prices and money budgets (Money.tsx), the policy
// of a workspace, and background work (webhooks, schedules, file watches) and MCP servers
// (features/triggers).
import { useEffect, useRef, useState } from "preact/hooks";
import {
  apiKeyStored,
  deleteApiKey,
  errorDetail,
  errorKind,
  errorMessage,
  limits as loadLimits,
  listModels,
  policyRules,
  providerSettings,
  setApiKey,
  setLimits,
  setPolicyRules,
  setProviderSettings,
  testConnection,
} from "../../api/commands";
import { UndoHistorySettings } from "../changes/UndoHistorySettings";
import type { LimitsForm, PolicyRules, ProviderForm } from "../../api/generated/bindings";
import { McpSettings, TriggerSettings } from "../triggers/Triggers";
import { AboutSection, DesktopSection } from "./Desktop";
import { DataSection } from "../data/DataSection";
import { SettingsSandboxLine } from "../approvals/SandboxLine";
import { AppearanceSection } from "./Appearance";
import { SessionTitlesSection } from "./SessionTitles";
import { PRESETS, presetOf } from "./presets";
import { SettingsGroup, SettingsNav, useSettingsFilter } from "./SettingsNav";
import { KeysSection } from "./Keys";
import { CAPABILITIES, choiceOf, defaultOf, withChoice, type Choice } from "./policy";
import { MoneySection } from "./Money";
import { CommandRulesSection } from "./CommandRules";
import { LocalModelSection } from "../models/LocalModelSection";
import { Overridden, StatusLine, useOverrides, type Status } from "./fields";
import { PartsContext, useLoadedParts, usePartLoaded } from "../../lib/loaded";
import { SearchInput } from "../../lib/inputs";

interface Props {
  /** No model is configured yet: say why the person is here. */
  firstRun: boolean;
  workspaces: string[];
  onSaved: () => void;
}

export function Settings({ firstRun, workspaces, onSaved }: Props) {
  const [loaded, report] = useLoadedParts();
  const [query, setQuery] = useState("");
  const scroll = useRef<HTMLDivElement>(null);
  const nothing = useSettingsFilter(scroll, query);
  return (
    <PartsContext.Provider value={report}>
    <main class="session-view settings" data-testid="settings-view" data-loaded={loaded ? "true" : "false"}>
      <header class="view-head">
        <h1>Settings</h1>
      </header>
      <div class="settings-body">
      <SettingsNav />
      <div class="scroll settings-scroll" data-testid="settings-scroll" ref={scroll}>
        <SearchInput
          class="settings-search"
          placeholder="Find a setting"
          label="Find a setting"
          testid="settings-search"
          value={query}
          onValue={setQuery}
        />
        {nothing && (
          <p class="muted" data-testid="settings-no-match">
            No setting mentions “{query.trim()}”.
          </p>
        )}
        {firstRun && (
          <div class="notice info" data-testid="first-run">
            Welcome to PocketPilot. Tell it which model to use: an OpenAI-compatible base URL, a model
            name and, if the service needs one, an API key.
          </div>
        )}
        <SettingsGroup id="general">
          <AppearanceSection />
          <SessionTitlesSection />
        </SettingsGroup>
        <SettingsGroup id="models">
          <ProviderSection onSaved={onSaved} />
          <LocalModelSection />
        </SettingsGroup>
        <SettingsGroup id="limits">
          <LimitsSection />
          <MoneySection />
        </SettingsGroup>
        <SettingsGroup id="sandbox">
          <SettingsSandboxLine />
          <PolicySection workspaces={workspaces} />
          <CommandRulesSection workspaces={workspaces} />
        </SettingsGroup>
        <SettingsGroup id="triggers">
          <TriggerSettings workspaces={workspaces} />
        </SettingsGroup>
        <SettingsGroup id="background">
          <DesktopSection />
        </SettingsGroup>
        <SettingsGroup id="data">
          <DataSection />
          <UndoHistorySettings />
        </SettingsGroup>
        <SettingsGroup id="advanced">
          <McpSettings workspaces={workspaces} />
          <KeysSection />
        </SettingsGroup>
        <SettingsGroup id="about">
          <AboutSection />
        </SettingsGroup>
      </div>
      </div>
    </main>
    </PartsContext.Provider>
  );
}

function ProviderSection({ onSaved }: { onSaved: () => void }) {
  const [form, setForm] = useState<ProviderForm | null>(null);
  const overrides = useOverrides();
  const [key, setKey] = useState("");
  const [stored, setStored] = useState<boolean | null>(null);
  const [status, setStatus] = useState<Status>(null);
  const [testing, setTesting] = useState(false);
  const [models, setModels] = useState<string[] | null>(null);
  const [listing, setListing] = useState(false);
  const [keyRead, setKeyRead] = useState(false);

  const [noKeychain, setNoKeychain] = useState(false);
  const reloadStored = () =>
    apiKeyStored()
      .then((s) => {
        setStored(s);
        setNoKeychain(false);
      })
      .catch((e) => {
        // No keychain on this computer is a fact to mention where the key is asked for,
        // not an error: a server on this computer needs no key.
        if (errorKind(e) === "keychain") setNoKeychain(true);
        else setStatus({ tone: "error", text: errorMessage(e) });
      });
  useEffect(() => {
    providerSettings()
      .then(setForm)
      .catch((e) => setStatus({ tone: "error", text: errorMessage(e) }));
    void reloadStored().finally(() => setKeyRead(true));
  }, []);
  usePartLoaded((form !== null || status !== null) && keyRead);
  if (!form) return <section class="card">Loading…</section>;

  const save = async () => {
    setStatus(null);
    try {
      await setProviderSettings(form);
      if (key.trim()) {
        await setApiKey(key);
        // The field is write-only: once filed, the key leaves the page.
        setKey("");
      }
      await reloadStored();
      setStatus({ tone: "ok", text: "Saved." });
      onSaved();
    } catch (e) {
      setStatus({ tone: "error", text: errorMessage(e) });
    }
  };
  const removeKey = async () => {
    try {
      await deleteApiKey();
      await reloadStored();
    } catch (e) {
      setStatus({ tone: "error", text: errorMessage(e) });
    }
  };
  const test = async () => {
    setTesting(true);
    setStatus(null);
    try {
      setStatus({ tone: "ok", text: await testConnection() });
    } catch (e) {
      setStatus({ tone: "error", text: errorMessage(e), detail: errorDetail(e) });
    } finally {
      setTesting(false);
    }
  };
  const loadModels = async () => {
    setListing(true);
    setStatus(null);
    try {
      const found = await listModels((form.base_url ?? "").trim());
      setModels(found);
      if (found.length === 0) setStatus({ tone: "error", text: "The server lists no models." });
    } catch (e) {
      setModels(null);
      setStatus({ tone: "error", text: errorMessage(e), detail: errorDetail(e) });
    } finally {
      setListing(false);
    }
  };
  const text = (field: "base_url" | "model") => (e: Event) =>
    setForm({ ...form, [field]: (e.target as HTMLInputElement).value });

  return (
    <section class="card" data-testid="provider-settings">
      <h2>Model provider</h2>
      <div class="presets" role="group" aria-label="Presets" data-testid="presets">
        <span class="muted">Presets:</span>
        {PRESETS.map((p) => (
          <button
            type="button"
            key={p.id}
            class={presetOf(form.base_url)?.id === p.id ? "chip active" : "chip"}
            data-testid={`preset-${p.id}`}
            aria-pressed={presetOf(form.base_url)?.id === p.id}
            onClick={() => setForm({ ...form, base_url: p.baseUrl })}
          >
            {p.label}
          </button>
        ))}
      </div>
      <label class="field">
        Base URL (OpenAI-compatible)
        <input data-testid="base-url" value={form.base_url ?? ""} placeholder="https://api.openai.com/v1" onInput={text("base_url")} />
        <Overridden field="base_url" overrides={overrides} />
      </label>
      <label class="field">
        Model
        <div class="row">
          <input data-testid="model" value={form.model ?? ""} placeholder="gpt-4o-mini" onInput={text("model")} />
          <button type="button" data-testid="load-models" onClick={() => void loadModels()} disabled={listing || !form.base_url}>
            {listing ? "Asking…" : "List models"}
          </button>
        </div>
        {models && models.length > 0 && (
          <select
            data-testid="model-picker"
            aria-label="Models the server offers"
            value={models.includes(form.model ?? "") ? form.model ?? "" : ""}
            onChange={(e) => setForm({ ...form, model: (e.target as HTMLSelectElement).value })}
          >
            <option value="" disabled>
              Choose one of the {models.length} models the server offers
            </option>
            {models.map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        )}
        <Overridden field="model" overrides={overrides} />
      </label>
      <label class="field">
        API key — kept in the system keychain; PocketPilot never shows it again
        <input
          data-testid="api-key"
          type="password"
          autocomplete="off"
          value={key}
          placeholder={stored ? "A key is stored — type a new one to replace it" : "No key stored"}
          onInput={(e) => setKey((e.target as HTMLInputElement).value)}
        />
      </label>
      <div class="row">
        <span class="muted" data-testid="key-status" data-stored={stored ? "true" : "false"}>
          {stored === null ? "" : stored ? "A key is stored." : "No key stored."}
        </span>
        {noKeychain && (
          <span class="muted" data-testid="no-keychain">
            This computer has no system keychain, so a key cannot be kept here. A model server on this computer needs
            none.
          </span>
        )}
        {stored && (
          <button type="button" class="link" data-testid="delete-key" onClick={removeKey}>
            Remove key
          </button>
        )}
      </div>
      <div class="row actions">
        <button type="button" class="primary" data-testid="save-provider" onClick={save}>
          Save
        </button>
        <button type="button" data-testid="test-connection" onClick={test} disabled={testing}>
          {testing ? "Testing…" : "Test connection"}
        </button>
      </div>
      <StatusLine status={status} testid="provider-status" />
    </section>
  );
}

function LimitsSection() {
  const [l, setL] = useState<LimitsForm | null>(null);
  const overrides = useOverrides();
  const [status, setStatus] = useState<Status>(null);
  useEffect(() => {
    loadLimits()
      .then(setL)
      .catch((e) => setStatus({ tone: "error", text: errorMessage(e) }));
  }, []);
  usePartLoaded(l !== null || status !== null);
  if (!l) return null;
  const num = (field: keyof LimitsForm, optional = false) => (e: Event) => {
    const raw = (e.target as HTMLInputElement).value.trim();
    setL({ ...l, [field]: optional && raw === "" ? null : Number(raw) });
  };
  const save = async () => {
    try {
      await setLimits(l);
      setStatus({ tone: "ok", text: "Saved." });
    } catch (e) {
      setStatus({ tone: "error", text: errorMessage(e) });
    }
  };
  return (
    <section class="card" data-testid="limits-settings">
      <h2>Limits for each task</h2>
      <div class="grid">
        <label class="field">
          Steps (model turns)
          <input type="number" min={1} data-testid="max-steps" value={l.max_steps} onInput={num("max_steps")} />
          <Overridden field="max_steps" overrides={overrides} />
        </label>
        <label class="field">
          Seconds
          <input type="number" min={1} data-testid="max-seconds" value={l.max_task_seconds} onInput={num("max_task_seconds")} />
          <Overridden field="max_task_seconds" overrides={overrides} />
        </label>
        <label class="field">
          Tokens (empty: no limit)
          <input type="number" min={1} data-testid="max-tokens" value={l.max_task_tokens ?? ""} onInput={num("max_task_tokens", true)} />
          <Overridden field="max_task_tokens" overrides={overrides} />
        </label>
      </div>
      <div class="row actions">
        <button type="button" class="primary" data-testid="save-limits" onClick={save}>
          Save limits
        </button>
      </div>
      <StatusLine status={status} testid="limits-status" />
    </section>
  );
}

function PolicySection({ workspaces }: { workspaces: string[] }) {
  const [workspace, setWorkspace] = useState(workspaces[0] ?? "");
  const [rules, setRules] = useState<PolicyRules | null>(null);
  const [status, setStatus] = useState<Status>(null);
  useEffect(() => {
    if (!workspace && workspaces[0]) setWorkspace(workspaces[0]);
  }, [workspaces[0]]);
  useEffect(() => {
    if (!workspace) return;
    setRules(null);
    policyRules(workspace)
      .then(setRules)
      .catch((e) => setStatus({ tone: "error", text: errorMessage(e) }));
  }, [workspace]);
  usePartLoaded(workspaces.length === 0 || rules !== null || status?.tone === "error");

  const choose = async (capability: string, choice: Choice) => {
    if (!rules) return;
    const next = withChoice(rules, capability, choice);
    try {
      await setPolicyRules(workspace, next);
      setRules(next);
      setStatus({ tone: "ok", text: "Saved." });
    } catch (e) {
      setStatus({ tone: "error", text: errorMessage(e) });
    }
  };

  return (
    <section class="card" data-testid="policy-settings">
      <h2>What the agent may do in a workspace</h2>
      {workspaces.length === 0 ? (
        <p class="muted">Start a session first: rules belong to a workspace folder.</p>
      ) : (
        <>
          <label class="field">
            Workspace
            <select data-testid="policy-workspace" value={workspace} onChange={(e) => setWorkspace((e.target as HTMLSelectElement).value)}>
              {workspaces.map((w) => (
                <option key={w} value={w}>
                  {w}
                </option>
              ))}
            </select>
          </label>
          {rules && (
            <table class="policy" data-testid="policy-table">
              <thead>
                <tr>
                  <th>Capability</th>
                  <th>Allow</th>
                  <th>Default</th>
                  <th>Deny</th>
                </tr>
              </thead>
              <tbody>
                {CAPABILITIES.map((c) => {
                  const current = choiceOf(rules, c.id);
                  return (
                    <tr key={c.id} data-testid="policy-row" data-capability={c.id} data-choice={current}>
                      <td>
                        {c.label} <code class="muted">{c.id}</code>
                      </td>
                      {(["allow", "default", "deny"] as Choice[]).map((choice) => (
                        <td key={choice}>
                          <input
                            type="radio"
                            name={`policy-${c.id}`}
                            aria-label={`${choice} ${c.id}`}
                            title={choice === "default" ? `Default: ${defaultOf(c.id)}` : choice}
                            data-testid={`policy-${choice}`}
                            checked={current === choice}
                            onChange={() => void choose(c.id, choice)}
                          />
                        </td>
                      ))}
                    </tr>
                  );
                })}
              </tbody>
            </table>
          )}
        </>
      )}
      <StatusLine status={status} testid="policy-status" />
    </section>
  );
}
