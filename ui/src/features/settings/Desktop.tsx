// Settings → Running in the background (start at login, keep running in the tray when the
// window closes) and About (version, commit, where the data and logs are, keychain and
// sandbox status). The logic is the runtime's (src-tauri/runtime/src/autostart.rs,
// about.rs), shared with `pocketpilot autostart` and `pocketpilot --version`.
import { useEffect, useState } from "preact/hooks";
import { aboutApp, desktopSettings, errorMessage, setKeepInTray, setStartAtLogin } from "../../api/commands";
import type { AboutInfo, DesktopSettings } from "../../api/generated/bindings";
import { usePartLoaded } from "../../lib/loaded";

export function DesktopSection() {
  const [s, setS] = useState<DesktopSettings | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    desktopSettings()
      .then(setS)
      .catch((e) => setError(errorMessage(e)));
  }, []);
  usePartLoaded(s !== null || error !== null);
  // Each switch answers with the state as stored: the checkbox shows what is, not what was clicked.
  const apply = (change: Promise<DesktopSettings>) =>
    change
      .then((next) => {
        setS(next);
        setError(null);
      })
      .catch((e) => setError(errorMessage(e)));
  return (
    <section class="card" data-testid="desktop-settings">
      <h2>Running in the background</h2>
      {s && (
        <>
          <label class="check">
            <input
              type="checkbox"
              data-testid="start-at-login"
              checked={s.start_at_login}
              onChange={(e) => void apply(setStartAtLogin((e.target as HTMLInputElement).checked))}
            />
            Start at login, hidden in the tray (triggers armed, interrupted work resumed)
          </label>
          <label class="check">
            <input
              type="checkbox"
              data-testid="keep-in-tray"
              checked={s.keep_in_tray}
              onChange={(e) => void apply(setKeepInTray((e.target as HTMLInputElement).checked))}
            />
            Keep running in the tray when the window closes
          </label>
          <p class="muted" data-testid="autostart-entry">
            {s.start_at_login ? "Login entry: " : "The login entry would be "}
            <code>{s.autostart_entry}</code>
            {s.keep_in_tray ? "" : ". Without the tray option, closing the window still keeps the app while a task runs or a trigger is armed."}
          </p>
        </>
      )}
      {error && (
        <div class="notice error" role="status" data-testid="desktop-status">
          {error}
        </div>
      )}
    </section>
  );
}

export function AboutSection() {
  const [a, setA] = useState<AboutInfo | null>(null);
  const [read, setRead] = useState(false);
  useEffect(() => {
    aboutApp()
      .then(setA)
      .catch(() => setA(null))
      .finally(() => setRead(true));
  }, []);
  usePartLoaded(read);
  if (!a) return null;
  const rows: [string, string, string][] = [
    ["Version", a.version, "about-version"],
    ["Commit", a.commit, "about-commit"],
    ["Data", a.data_dir, "about-data-dir"],
    ["Logs", a.log_dir, "about-log-dir"],
    ["Keychain", a.keychain, "about-keychain"],
    ["Sandbox", a.sandbox, "about-sandbox"],
  ];
  return (
    <section class="card" data-testid="about">
      <h2>About PocketPilot</h2>
      {rows.map(([label, value, testid]) => (
        <div class="row" key={testid}>
          <span class="muted">{label}:</span> <code data-testid={testid}>{value}</code>
        </div>
      ))}
    </section>
  );
}
