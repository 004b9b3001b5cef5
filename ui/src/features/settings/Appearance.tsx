// Light, dark, or as the system says (lib/theme.ts keeps the choice).
import { useState } from "preact/hooks";
import { setTheme, storedTheme, type ThemeChoice } from "../../lib/theme";

const CHOICES: { value: ThemeChoice; label: string }[] = [
  { value: "system", label: "System" },
  { value: "light", label: "Light" },
  { value: "dark", label: "Dark" },
];

export function AppearanceSection() {
  const [choice, setChoice] = useState<ThemeChoice>(storedTheme);
  return (
    <section class="card" data-testid="appearance-settings" id="settings-appearance">
      <h2>Appearance</h2>
      <div class="segmented" role="radiogroup" aria-label="Colour scheme" data-testid="theme-choice">
        {CHOICES.map((c) => (
          <button
            type="button"
            key={c.value}
            role="radio"
            aria-checked={choice === c.value}
            class={choice === c.value ? "active" : ""}
            data-testid={`theme-${c.value}`}
            onClick={() => {
              setTheme(c.value);
              setChoice(c.value);
            }}
          >
            {c.label}
          </button>
        ))}
      </div>
      <p class="muted">System follows the desktop's light or dark theme.</p>
    </section>
  );
}
