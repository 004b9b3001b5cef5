// The first screen when no provider is set up: which model answers. The built-in model
// (when this computer has it), the model servers already running here (Ollama, LM Studio,
// llama.cpp, vLLM, found on their default ports), or a server to set up in Settings.
import { useEffect, useRef, useState } from "preact/hooks";
import { errorMessage, localServers, providerSettings, setProviderSettings } from "../../api/commands";
import type { BuiltinModel, FoundServer } from "../../api/generated/bindings";
import { builtinName, sizeOf } from "./describe";
import "./models.css";

interface Props {
  builtin: BuiltinModel | null;
  onBuiltin: () => void;
  onProvider: () => void;
  /** A server found here was chosen and saved as the provider. */
  onServer: () => void;
}

/** "127.0.0.1:11434" from its base URL. */
export function addressOf(baseUrl: string): string {
  try {
    return new URL(baseUrl).host;
  } catch {
    return baseUrl;
  }
}

export function Welcome({ builtin, onBuiltin, onProvider, onServer }: Props) {
  const first = useRef<HTMLButtonElement>(null);
  const [found, setFound] = useState<FoundServer[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    first.current?.focus();
    localServers()
      .then(setFound)
      .catch(() => setFound([]));
  }, []);
  const use = async (server: FoundServer, model: string) => {
    try {
      const form = await providerSettings();
      await setProviderSettings({ ...form, base_url: server.base_url, model });
      onServer();
    } catch (e) {
      setError(errorMessage(e));
    }
  };
  return (
    <main class="session-view" data-testid="welcome-view" data-loaded={found !== null ? "true" : "false"}>
      <header class="view-head">
        <h1>Welcome to PocketPilot</h1>
      </header>
      <div class="scroll welcome">
        <p id="welcome-ask">Which model should answer?</p>
        <div class="welcome-choices" role="group" aria-labelledby="welcome-ask">
          {builtin && (
            <button type="button" class="primary welcome-choice" ref={first} data-testid="choose-builtin" onClick={onBuiltin}>
              <strong data-testid="builtin-name">Built-in: {builtinName(builtin)}, runs on this computer</strong>
              <span class="muted">
                Nothing leaves this computer. {sizeOf(builtin.size_mib)}
                {builtin.training_context !== null ? `, ${builtin.training_context.toLocaleString("en-US")}-token context` : ""}.
                Small and quick to start; a larger model answers better.
              </span>
            </button>
          )}
          {found === null && <p class="muted" data-testid="looking-for-servers">Looking for model servers on this computer…</p>}
          {found?.map((server) => (
            <FoundChoice key={server.base_url} server={server} onUse={(model) => void use(server, model)} />
          ))}
          <button
            type="button"
            class="welcome-choice"
            ref={builtin ? undefined : first}
            data-testid="choose-local-server"
            onClick={onProvider}
          >
            <strong>Ollama or another local server</strong>
            <span class="muted">
              {found !== null && found.length === 0
                ? "None is running now. Start one (Ollama, LM Studio, llama.cpp, vLLM) and set it up here."
                : "A model server you run yourself: Ollama, LM Studio, llama.cpp, vLLM."}
            </span>
          </button>
          <button type="button" class="welcome-choice" data-testid="choose-openai-compatible" onClick={onProvider}>
            <strong>OpenAI-compatible server</strong>
            <span class="muted">OpenAI, OpenRouter or any service with an OpenAI-compatible API and a key.</span>
          </button>
        </div>
        {error && <div class="notice error" role="alert">{error}</div>}
        <p class="muted">You can change this later in Settings.</p>
      </div>
    </main>
  );
}

/** A server found running here, with the model it would use (its first, or the one picked). */
function FoundChoice({ server, onUse }: { server: FoundServer; onUse: (model: string) => void }) {
  const [model, setModel] = useState(server.models[0] ?? "");
  return (
    <div class="welcome-choice found-server" data-testid="found-server" data-base-url={server.base_url}>
      <strong>
        {server.name} at {addressOf(server.base_url)}, running now
      </strong>
      <span class="muted">
        {server.models.length === 1 ? "1 model" : `${server.models.length} models`}; nothing leaves this computer.
      </span>
      <div class="row">
        {server.models.length > 1 && (
          <select
            aria-label={`The model ${server.name} should use`}
            data-testid="found-server-model"
            value={model}
            onChange={(e) => setModel((e.target as HTMLSelectElement).value)}
          >
            {server.models.map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        )}
        <button type="button" class="primary" data-testid="use-found-server" onClick={() => onUse(model)}>
          Use {model}
        </button>
      </div>
    </div>
  );
}
