// Keys: the secrets MCP servers declare (`--secret-env`), each set from here into the OS
// keychain and never shown again, like the model's API key (which is in the Provider
// section).
import { useEffect, useState } from "preact/hooks";
import { errorMessage, mcpSecrets, setMcpSecret } from "../../api/commands";
import type { McpSecret } from "../../api/generated/bindings";
import { usePartLoaded } from "../../lib/loaded";

export function KeysSection() {
  const [secrets, setSecrets] = useState<McpSecret[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const reload = () =>
    mcpSecrets()
      .then((s) => {
        setSecrets(s);
        setError(null);
      })
      .catch((e) => setError(errorMessage(e)));
  useEffect(() => {
    void reload();
  }, []);
  usePartLoaded(secrets !== null || error !== null);
  return (
    <section class="card" data-testid="keys-settings">
      <h2>Keys</h2>
      <p class="muted">
        The model's API key is set under Provider. Secrets of MCP servers go to the system keychain from here;
        PocketPilot never shows them again.
      </p>
      {error && <div class="notice error" role="alert">{error}</div>}
      {secrets && secrets.length === 0 && <p class="muted">No MCP server declares a secret.</p>}
      {secrets?.map((s) => (
        <SecretRow key={`${s.server}/${s.var}`} secret={s} onSaved={() => void reload()} />
      ))}
    </section>
  );
}

function SecretRow({ secret, onSaved }: { secret: McpSecret; onSaved: () => void }) {
  const [value, setValue] = useState("");
  const [error, setError] = useState<string | null>(null);
  const save = async () => {
    setError(null);
    try {
      await setMcpSecret(secret.server, secret.var, value);
      // Write-only: once filed the value leaves the page.
      setValue("");
      onSaved();
    } catch (e) {
      setError(errorMessage(e));
    }
  };
  return (
    <div class="field" data-testid="mcp-secret" data-server={secret.server} data-var={secret.var} data-stored={secret.stored ? "true" : "false"}>
      <span>
        <code>{secret.var}</code> for <code>{secret.server}</code> —{" "}
        <span data-testid="mcp-secret-status">{secret.stored ? "stored" : "not set"}</span>
      </span>
      <div class="row">
        <input
          type="password"
          autocomplete="off"
          data-testid="mcp-secret-input"
          aria-label={`${secret.var} for ${secret.server}`}
          placeholder={secret.stored ? "Type a new value to replace it" : "Value"}
          value={value}
          onInput={(e) => setValue((e.target as HTMLInputElement).value)}
        />
        <button type="button" class="primary" data-testid="mcp-secret-save" disabled={!value.trim()} onClick={() => void save()}>
          Save
        </button>
      </div>
      {error && <div class="notice error" role="alert">{error}</div>}
    </div>
  );
}
