// The hooks files that apply to the workspace, with every command they run: the person's
// own run always; the workspace's only once the person consented to its exact content
// (`pocketpilot agent-hooks consent`), so a cloned repository runs nothing by itself.
import { consentHooks, errorMessage, revokeHooks } from "../../api/commands";
import type { HooksFileInfo } from "../../api/generated/bindings";
import { visible } from "../approvals/hidden";

type Props = { files: HooksFileInfo[]; workspace: string; onChanged: () => void; onError: (e: string) => void };

export function Hooks({ files, workspace, onChanged, onError }: Props) {
  // The hash shown is the hash consented to: a file changed since is refused, not allowed.
  const act = async (what: () => Promise<unknown>) => {
    try {
      await what();
      onChanged();
    } catch (e) {
      onError(errorMessage(e));
    }
  };
  return (
    <section class="card" data-testid="hooks">
      <h2>Hooks</h2>
      <p class="muted">
        Commands run at the agent's events (Claude Code's format), sandboxed like its commands. A hook can deny a tool
        call or add context, never allow more.
      </p>
      {files.length === 0 ? (
        <p class="muted" data-testid="no-hooks">No hooks file applies.</p>
      ) : (
        files.map((f) => (
          <div key={f.path} data-testid="hooks-file" data-runs={f.runs ? "true" : "false"}>
            <p>
              <code>{visible(f.path)}</code>{" "}
              <span class="muted">
                {f.scope === "person"
                  ? "yours: runs"
                  : f.runs
                    ? "the workspace's: consented, runs"
                    : "the workspace's: NOT consented, does not run (pocketpilot agent-hooks consent)"}
              </span>
            </p>
            <ul>
              {f.hooks.map((h, i) => (
                <li key={i} data-testid="hook">
                  {h.event}
                  {h.matcher ? ` [${visible(h.matcher)}]` : ""}: <code>{visible(h.command)}</code>{" "}
                  <span class="muted">timeout {h.timeout_secs} s</span>
                </li>
              ))}
            </ul>
            {f.scope === "workspace" && f.hash !== "" && (
              <p>
                {f.runs ? (
                  <button type="button" data-testid="hooks-revoke" onClick={() => void act(() => revokeHooks(workspace))}>
                    Stop these hooks
                  </button>
                ) : (
                  <button
                    type="button"
                    data-testid="hooks-consent"
                    onClick={() => void act(() => consentHooks(workspace, f.hash))}
                  >
                    Allow these exact commands to run
                  </button>
                )}
              </p>
            )}
            {f.problems.map((p, i) => (
              <p key={`p${i}`} class="muted">
                skipped: {visible(p)}
              </p>
            ))}
          </div>
        ))
      )}
    </section>
  );
}
