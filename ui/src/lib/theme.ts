// Light, dark, or the system's choice (the default): the choice is kept in the webview's
// local storage and applied to <html data-theme>, which styles.css reads. "System" leaves
// the attribute off, so `prefers-color-scheme` (which WebKitGTK takes from the GTK theme)
// decides.
export type ThemeChoice = "system" | "light" | "dark";

const KEY = "pocketpilot.theme";

export function storedTheme(): ThemeChoice {
  try {
    const v = localStorage.getItem(KEY);
    return v === "light" || v === "dark" ? v : "system";
  } catch {
    return "system";
  }
}

export function applyTheme(choice: ThemeChoice): void {
  const root = document.documentElement;
  if (choice === "system") delete root.dataset.theme;
  else root.dataset.theme = choice;
}

export function setTheme(choice: ThemeChoice): void {
  try {
    if (choice === "system") localStorage.removeItem(KEY);
    else localStorage.setItem(KEY, choice);
  } catch {
    // Storage refused (a private webview): the choice holds for this window only.
  }
  applyTheme(choice);
}
