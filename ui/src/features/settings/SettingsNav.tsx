// The side list of the settings screen: each entry scrolls to its section. Every section
// stays on the page (so a section added later fits without a new tab).
const SECTIONS: { label: string; testid: string }[] = [
  { label: "Provider", testid: "provider-settings" },
  { label: "Limits & policy", testid: "limits-settings" },
  { label: "Triggers", testid: "triggers-settings" },
  { label: "MCP servers", testid: "mcp-settings" },
  { label: "Keys", testid: "keys-settings" },
  { label: "Appearance", testid: "appearance-settings" },
  { label: "About", testid: "about" },
];

export function SettingsNav() {
  return (
    <nav class="settings-nav" aria-label="Settings sections" data-testid="settings-nav">
      {SECTIONS.map((s) => (
        <button
          type="button"
          key={s.testid}
          data-testid={`nav-${s.testid}`}
          onClick={() => document.querySelector(`[data-testid="${s.testid}"]`)?.scrollIntoView({ block: "start" })}
        >
          {s.label}
        </button>
      ))}
    </nav>
  );
}
