// The side list of the settings screen: each entry scrolls to its section (every section
// stays on the page, so a section added later fits without a new tab). "Models on this
// computer", under the built-in model's entry, opens the Models screen.
import { Fragment } from "preact";
import { navigate } from "../../lib/route";

const SECTIONS: { label: string; testid: string }[] = [
  { label: "Provider", testid: "provider-settings" },
  { label: "Limits & policy", testid: "limits-settings" },
  { label: "Triggers", testid: "triggers-settings" },
  { label: "MCP servers", testid: "mcp-settings" },
  { label: "Keys", testid: "keys-settings" },
  { label: "Built-in model", testid: "local-model-settings" },
  { label: "Data", testid: "data-settings" },
  { label: "Appearance", testid: "appearance-settings" },
  { label: "About", testid: "about" },
];

export function SettingsNav() {
  return (
    <nav class="settings-nav" aria-label="Settings sections" data-testid="settings-nav">
      {SECTIONS.map((s) => (
        <Fragment key={s.testid}>
          <button
            type="button"
            data-testid={`nav-${s.testid}`}
            onClick={() => document.querySelector(`[data-testid="${s.testid}"]`)?.scrollIntoView({ block: "start" })}
          >
            {s.label}
          </button>
          {s.testid === "local-model-settings" && (
            <button type="button" class="nav-sub" data-testid="nav-models" onClick={() => navigate({ name: "models" })}>
              Models on this computer
            </button>
          )}
        </Fragment>
      ))}
    </nav>
  );
}
