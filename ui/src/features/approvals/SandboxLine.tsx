// The sandbox line, red when commands would run NOT sandboxed (issue 14).
import { useEffect, useState } from "preact/hooks";
import { aboutApp, taskEvents } from "../../api/commands";
import type { PendingApproval } from "../stream/items";
import { isUnsandboxed, sandboxLineOf } from "./sandbox";
import { usePartLoaded } from "../../lib/loaded";
import "./sandbox.css";

export function SandboxLine({ line, testid }: { line: string; testid: string }) {
  const off = isUnsandboxed(line);
  return (
    <div class={`sandbox-line${off ? " unsandboxed" : ""}`} data-testid={testid} data-sandboxed={off ? "false" : "true"} role={off ? "alert" : undefined}>
      {line}
    </div>
  );
}

/** An approval's line: carried by the live event, or read from the task's events for a
 * stored approval (opened from the sidebar, after a restart). */
export function useApprovalSandbox(a: PendingApproval): string | null {
  const [line, setLine] = useState<string | null>(a.sandbox ?? null);
  useEffect(() => {
    if (a.sandbox !== undefined) {
      setLine(a.sandbox);
      return;
    }
    let live = true;
    taskEvents(a.taskId)
      .then((evs) => live && setLine(sandboxLineOf(evs, a.callId)))
      .catch(() => live && setLine(null));
    return () => {
      live = false;
    };
  }, [a.taskId, a.callId, a.sandbox]);
  return line;
}

/** What this machine's commands get, for Settings (the same probe as `pocketpilot doctor`). */
export function SettingsSandboxLine() {
  const [line, setLine] = useState<string | null>(null);
  const [read, setRead] = useState(false);
  useEffect(() => {
    aboutApp()
      .then((a) => setLine(a.sandbox))
      .catch(() => setLine(null))
      .finally(() => setRead(true));
  }, []);
  usePartLoaded(read);
  if (line === null) return null;
  return (
    <section class="card" data-testid="settings-sandbox-card">
      <h2>Commands and MCP servers</h2>
      <SandboxLine line={line} testid="settings-sandbox" />
    </section>
  );
}
