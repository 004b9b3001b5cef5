// What every settings section shares: a save's status line, and the note beside a field
// an environment variable overrides (the form shows and saves the stored value).
import { useEffect, useState } from "preact/hooks";
import { settingOverrides } from "../../api/commands";
import type { EnvOverride, SettingField } from "../../api/generated/bindings";
import { usePartLoaded } from "../../lib/loaded";

export type Status = { tone: "ok" | "error"; text: string; detail?: string | null } | null;

/** The fields an environment variable overrides: the form shows and saves the stored value. */
export function useOverrides(): EnvOverride[] {
  const [list, setList] = useState<EnvOverride[]>([]);
  const [read, setRead] = useState(false);
  useEffect(() => {
    settingOverrides()
      .then(setList)
      .catch(() => setList([]))
      .finally(() => setRead(true));
  }, []);
  usePartLoaded(read);
  return list;
}

export function Overridden({ field, overrides }: { field: SettingField; overrides: EnvOverride[] }) {
  const o = overrides.find((x) => x.field === field);
  if (!o) return null;
  return (
    <span class="muted" data-testid={`override-${field}`}>
      overridden by {o.variable} (runs use {o.value}; what you save here is kept for when it is unset)
    </span>
  );
}

export function StatusLine({ status, testid }: { status: Status; testid: string }) {
  if (!status) return null;
  return (
    <div class={`notice ${status.tone === "ok" ? "info" : "error"}`} data-testid={testid} role="status">
      {status.text}
      {status.detail && (
        <details class="failure-detail" data-testid={`${testid}-detail`}>
          <summary>Details</summary>
          <pre>{status.detail}</pre>
        </details>
      )}
    </div>
  );
}

