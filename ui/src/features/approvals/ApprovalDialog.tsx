// Shows the exact effect of a risky call before anything happens (titled in words: "Run a
// command in api"; the tool and capability under Details; focus starts on Reject…), and sends the person's
// answer: approve, approve for this session, approve with edited arguments, or reject
// with a reason. A command offers command rules instead of a capability grant: "Always
// allow `cargo test *` in this workspace" or for this session; the grant of every shell
// command stays under "More…", worded as what it is.
import { useEffect, useRef, useState } from "preact/hooks";
import { errorMessage, resolveApproval, resolveApprovalKeeping } from "../../api/commands";
import type { CommandRuleScope } from "../../api/generated/bindings";
import { ruleList, SHELL_EXECUTE, useCommandOffer } from "./commandOffer";
import type { Approval, Effect, Value } from "../../api/generated/bindings";
import { Inline } from "./inline";
import { focusables, modalKeyDown } from "../../lib/dialogKeys";
import { objectOf, type JsonObject } from "../../api/json";
import type { PendingApproval } from "../stream/items";
import { SandboxLine, useApprovalSandbox } from "./SandboxLine";
import { effectText, HiddenWarning, visible, visibleJson } from "./hidden";
import { approvalTitle } from "./words";
import type { ApprovalStep } from "./cardApproval";

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
    case "memory":
      return (
        <div class="effect" data-testid="effect" data-kind="memory">
          <div class="effect-label">
            Remember ({effect.scope === "global" ? "every workspace" : "this workspace"}); kept only if you approve
          </div>
          <pre data-testid="effect-memory">{visible(effect.text)}</pre>
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

type Mode = ApprovalStep;

interface Props {
  approval: PendingApproval;
  onDone: () => void;
  /** Esc: the dialog goes away, the approval stays pending. */
  onClose: () => void;
  /** The other approvals waiting for a person (named in the dialog). */
  waiting?: Approval[];
  /** Where it opens: the question, or straight at Edit… or Reject… (from the tool card). */
  step?: Mode;
}

export function ApprovalDialog({ approval, onDone, onClose, waiting = [], step = "ask" }: Props) {
  const [mode, setMode] = useState<Mode>(step);
  const [args, setArgs] = useState(() => visibleJson(approval.arguments));
  const [reason, setReason] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const sandbox = useApprovalSandbox(approval);
  const offer = useCommandOffer(approval.approvalId, approval.capability);
  const isCommand = approval.capability === SHELL_EXECUTE;
  const suggested = offer?.suggested ?? [];

  const answer = async (
    approve: boolean,
    opts: { sessionGrant?: boolean; edited?: boolean; keep?: CommandRuleScope } = {},
  ) => {
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
      const reply = {
        approve,
        edited_arguments: edited,
        session_grant: approve && !!opts.sessionGrant,
        note: approve ? null : reason.trim() || null,
      };
      if (approve && opts.keep && suggested.length > 0) {
        await resolveApprovalKeeping(approval.approvalId, reply, { scope: opts.keep, rules: suggested });
      } else {
        await resolveApproval(approval.approvalId, reply);
      }
      onDone();
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(false);
    }
  };

  const dialog = useRef<HTMLDivElement>(null);
  // Focus moves in when the dialog opens (to its first button), and back where it was
  // when it closes.
  useEffect(() => {
    const before = document.activeElement as HTMLElement | null;
    dialog.current?.querySelector<HTMLElement>("[data-testid=reject]")?.focus();
    return () => before?.focus?.();
  }, [approval.approvalId]);
  useEffect(() => {
    const root = dialog.current;
    if (!root) return;
    // The safe choice first: Reject… (it only asks for a reason), never Approve.
    const first =
      root.querySelector<HTMLElement>("textarea") ??
      root.querySelector<HTMLElement>("[data-testid=reject]") ??
      focusables(root)[0];
    first?.focus();
  }, [mode]);
  // Focus that lands behind the dialog (a click, a key the dialog did not see) comes back.
  useEffect(() => {
    const onFocus = (e: FocusEvent) => {
      const root = dialog.current;
      if (root && e.target instanceof Node && !root.contains(e.target)) focusables(root)[0]?.focus();
    };
    document.addEventListener("focusin", onFocus);
    return () => document.removeEventListener("focusin", onFocus);
  }, []);
  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key === "Escape" && mode !== "ask") {
      // Esc backs out of editing or rejecting first; a second Esc closes.
      e.preventDefault();
      e.stopPropagation();
      setMode("ask");
    } else if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      if (busy) return;
      if (mode === "ask") void answer(true);
      else if (mode === "edit") void answer(true, { edited: true });
      else void answer(false);
    } else {
      // Esc closes; Tab cycles inside: nothing behind the dialog is reachable while it is open.
      modalKeyDown(e, dialog.current, onClose);
    }
  };

  return (
    <div class="overlay">
      <div
        class="dialog"
        role="dialog"
        aria-modal="true"
        aria-labelledby="approval-title"
        aria-describedby="approval-reason"
        data-testid="approval-dialog"
        data-approval-id={approval.approvalId}
        ref={dialog}
        onKeyDown={onKeyDown}
      >
        <h2 id="approval-title" data-testid="approval-title">
          {visible(approvalTitle(approval.effect, approval.name))}
        </h2>
        <p class="muted" id="approval-reason" data-testid="approval-reason">
          <Inline text={approval.reason} />
        </p>
        <HiddenWarning texts={[effectText(approval.effect), JSON.stringify(approval.arguments)]} />
        <EffectView effect={approval.effect} />
        {offer && offer.reason && (
          <p class="muted" data-testid="approval-uncovered">
            <Inline text={offer.part ? `Not covered by a rule: ${offer.reason}` : offer.reason} />
          </p>
        )}
        {sandbox !== null && <SandboxLine line={sandbox} testid="approval-sandbox" />}
        <details class="approval-details" data-testid="approval-details">
          <summary>Details</summary>
          <p class="muted">
            Tool <code>{visible(approval.name)}</code>
            {approval.capability && (
              <>
                {" "}
                · capability <code data-testid="approval-capability">{approval.capability}</code>
              </>
            )}
          </p>
        </details>
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
        {waiting.length > 0 && (
          <div class="approvals-queue muted" data-testid="approvals-waiting">
            Also waiting ({waiting.length}):{" "}
            {waiting.map((w, i) => (
              <span key={w.id}>
                {i > 0 && ", "}
                <code>{w.tool}</code> (task {w.task_id})
              </span>
            ))}
          </div>
        )}
        <div class="dialog-buttons">
          {mode === "ask" && (
            <>
              <button type="button" class="primary" data-testid="approve" disabled={busy} onClick={() => answer(true)}>
                Approve
              </button>
              {isCommand && suggested.length > 0 && (
                <>
                  <button type="button" data-testid="approve-always" disabled={busy} onClick={() => answer(true, { keep: "workspace" })}>
                    Always allow <Inline text={ruleList(suggested)} /> in this workspace
                  </button>
                  <button type="button" data-testid="approve-session-rule" disabled={busy} onClick={() => answer(true, { keep: "session" })}>
                    Allow <Inline text={ruleList(suggested)} /> for this session
                  </button>
                </>
              )}
              {!isCommand && (
                <button
                  type="button"
                  data-testid="approve-session"
                  disabled={busy}
                  aria-describedby="approve-session-scope"
                  onClick={() => answer(true, { sessionGrant: true })}
                >
                  Approve for this session
                </button>
              )}
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
        {mode === "ask" && isCommand && (
          <details class="more" data-testid="approve-more">
            <summary>More…</summary>
            <button
              type="button"
              data-testid="approve-session"
              disabled={busy}
              aria-describedby="approve-session-scope"
              onClick={() => answer(true, { sessionGrant: true })}
            >
              Allow every shell command for this session
            </button>
            <p class="muted scope" id="approve-session-scope" data-testid="approve-session-scope">
              Every <code>{SHELL_EXECUTE}</code> call in this session runs without asking, whatever the command.
            </p>
          </details>
        )}
        {mode === "ask" && !isCommand && (
          <p class="muted scope" id="approve-session-scope" data-testid="approve-session-scope">
            “Approve for this session” allows{" "}
            {approval.capability ? (
              <>
                every <code>{approval.capability}</code> call
              </>
            ) : (
              <>
                every <code>{approval.name}</code> call
              </>
            )}{" "}
            in this session without asking again.
          </p>
        )}
        <p class="muted keys">Ctrl+Enter approves · Esc closes without deciding</p>
      </div>
    </div>
  );
}
