// Shows the exact effect of a risky call before anything happens, and sends the person's
// answer: approve, approve for this session, approve with edited arguments, or reject
// with a reason.
import { useState } from "preact/hooks";
import { errorMessage, resolveApproval } from "../../api/commands";
import type { Effect, Value } from "../../api/generated/bindings";
import { objectOf, type JsonObject } from "../../api/json";
import type { PendingApproval } from "../stream/items";
import { effectText, HiddenWarning, visible } from "./hidden";

export function EffectView({ effect }: { effect: Effect }) {
  switch (effect.kind) {
    case "diff":
      return (
        <div class="effect" data-testid="effect" data-kind="diff">
          <div class="effect-label">
            Changes <code data-testid="effect-path">{visible(effect.path)}</code>
          </div>
          <pre class="diff" data-testid="effect-diff">
            {effect.diff.split("\n").map((line, i) => (
              <span key={i} class={diffClass(line)}>
                {visible(line)}
                {"\n"}
              </span>
            ))}
          </pre>
        </div>
      );
    case "command":
      return (
        <div class="effect" data-testid="effect" data-kind="command">
          <div class="effect-label">Runs</div>
          <pre data-testid="effect-command">{visible(effect.command)}</pre>
          <div class="effect-label">
            in <code data-testid="effect-cwd">{visible(effect.cwd)}</code>
          </div>
        </div>
      );
    case "fetch":
      return (
        <div class="effect" data-testid="effect" data-kind="fetch">
          <div class="effect-label">Fetches</div>
          <pre data-testid="effect-url">{visible(effect.url)}</pre>
        </div>
      );
    case "delete":
      return (
        <div class="effect" data-testid="effect" data-kind="delete">
          <div class="effect-label">Deletes</div>
          <pre data-testid="effect-path">{visible(effect.path)}</pre>
        </div>
      );
    default:
      return <div class="effect muted">No effect beyond reading.</div>;
  }
}

function diffClass(line: string): string {
  if (line.startsWith("+++") || line.startsWith("---")) return "diff-file";
  if (line.startsWith("+")) return "diff-add";
  if (line.startsWith("-")) return "diff-del";
  if (line.startsWith("@@")) return "diff-hunk";
  return "";
}

type Mode = "ask" | "edit" | "reject";

export function ApprovalDialog({ approval, onDone }: { approval: PendingApproval; onDone: () => void }) {
  const [mode, setMode] = useState<Mode>("ask");
  const [args, setArgs] = useState(() => JSON.stringify(approval.arguments, null, 2));
  const [reason, setReason] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const answer = async (approve: boolean, opts: { sessionGrant?: boolean; edited?: boolean } = {}) => {
    setError(null);
    let edited: JsonObject | null = null;
    if (opts.edited) {
      try {
        // JSON.parse answers JSON: a `Value` by construction.
        const v: Value = JSON.parse(args);
        edited = objectOf(v);
        if (!edited) throw new Error("the arguments must be a JSON object");
      } catch (e) {
        setError(`Invalid arguments: ${e instanceof Error ? e.message : String(e)}`);
        return;
      }
    }
    setBusy(true);
    try {
      await resolveApproval(approval.approvalId, {
        approve,
        edited_arguments: edited,
        session_grant: approve && !!opts.sessionGrant,
        note: approve ? null : reason.trim() || null,
      });
      onDone();
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="overlay">
      <div
        class="dialog"
        role="dialog"
        aria-modal="true"
        aria-labelledby="approval-title"
        data-testid="approval-dialog"
        data-approval-id={approval.approvalId}
      >
        <h2 id="approval-title">
          Approve <code>{visible(approval.name)}</code>?
        </h2>
        <p class="muted">
          {approval.reason}
          {approval.capability && (
            <>
              {" "}
              · capability <code>{approval.capability}</code>
            </>
          )}
        </p>
        <HiddenWarning texts={[effectText(approval.effect), JSON.stringify(approval.arguments)]} />
        <EffectView effect={approval.effect} />
        {mode === "edit" && (
          <label class="field">
            Arguments (JSON; checked again before it runs)
            <textarea data-testid="edit-arguments" rows={8} value={args} onInput={(e) => setArgs((e.target as HTMLTextAreaElement).value)} />
          </label>
        )}
        {mode === "reject" && (
          <label class="field">
            Reason (the agent reads it)
            <textarea data-testid="reject-reason" rows={3} value={reason} onInput={(e) => setReason((e.target as HTMLTextAreaElement).value)} />
          </label>
        )}
        {error && <div class="notice error" role="alert">{error}</div>}
        <div class="dialog-buttons">
          {mode === "ask" && (
            <>
              <button type="button" class="primary" data-testid="approve" disabled={busy} onClick={() => answer(true)}>
                Approve
              </button>
              <button type="button" data-testid="approve-session" disabled={busy} onClick={() => answer(true, { sessionGrant: true })}>
                Approve for this session
              </button>
              <button type="button" data-testid="edit" disabled={busy} onClick={() => setMode("edit")}>
                Edit arguments…
              </button>
              <button type="button" class="danger" data-testid="reject" disabled={busy} onClick={() => setMode("reject")}>
                Reject…
              </button>
            </>
          )}
          {mode === "edit" && (
            <>
              <button type="button" class="primary" data-testid="approve-edited" disabled={busy} onClick={() => answer(true, { edited: true })}>
                Approve with these arguments
              </button>
              <button type="button" disabled={busy} onClick={() => setMode("ask")}>
                Back
              </button>
            </>
          )}
          {mode === "reject" && (
            <>
              <button type="button" class="danger" data-testid="confirm-reject" disabled={busy} onClick={() => answer(false)}>
                Reject
              </button>
              <button type="button" disabled={busy} onClick={() => setMode("ask")}>
                Back
              </button>
            </>
          )}
        </div>
      </div>
    </div>
  );
}
