// Light, dark, or the system's choice (the default): the choice is kept in the webview's
// local storage and applied to <html data-theme>, which styles.css reads. "System" leaves
// the attribute off, and then the page is dark when either source of the desktop's scheme
// says dark (light is what both report when they know nothing):
// - `prefers-color-scheme`, which WebKitGTK takes from the settings portal;
// - the window theme (Tauri: `theme()` and `onThemeChanged`), which the shell sets from
//   the GTK settings when there is no portal to say it (src-tauri/shell/theme.rs), kept on
//   <html data-desktop-theme>.
import { getCurrentWindow, type Theme } from "@tauri-apps/api/window";

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

export function applyDesktopTheme(theme: Theme | null): void {
  const root = document.documentElement;
  if (theme === "dark" || theme === "light") root.dataset.desktopTheme = theme;
  else delete root.dataset.desktopTheme;
}

/** Follows the window theme: listens first, then reads, so a change between is not lost. */
export async function followDesktopTheme(): Promise<void> {
  try {
    const window = getCurrentWindow();
    await window.onThemeChanged(({ payload }) => applyDesktopTheme(payload));
    applyDesktopTheme(await window.theme());
  } catch {
    // Not in the app's window (a unit test, a plain browser): prefers-color-scheme alone.
  }
}
