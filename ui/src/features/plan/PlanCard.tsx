// Plan mode's card: the plan a planning run ended with, as a checklist. Proposed, it
// offers Approve, Edit (then approve the edited plan) and Reject; approved, its steps tick
// as the run marks them done; rejected, it says nothing of it ran.
import { useEffect, useState } from "preact/hooks";
import { approvePlan, errorMessage, rejectPlan, sessionPlans } from "../../api/commands";
import type { Plan } from "../../api/generated/bindings";
import { currentPlan, editedPlan, progress } from "./plan";

/** The session's plans, read again whenever `version` changes (the transcript moved on). */
export function usePlans(sessionId: number, version: string): { plan: Plan | null; reload: () => void } {
  const [plans, setPlans] = useState<Plan[]>([]);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    sessionPlans(sessionId)
      .then((p) => live && setPlans(p))
      .catch(() => {
        // A failed read leaves the card as it was; the next change reads again.
      });
    return () => {
      live = false;
    };
  }, [sessionId, version, tick]);
  return { plan: currentPlan(plans), reload: () => setTick((t) => t + 1) };
}

interface Props {
  plan: Plan;
  /** After a decision: the run carrying the plan out (approved), else `null`. */
  onDecided: (run: number | null) => void;
}

export function PlanCard({ plan, onDecided }: Props) {
  const [editing, setEditing] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [reason, setReason] = useState("");
  const [steps, setSteps] = useState(plan.content.steps.join("\n"));
  const [files, setFiles] = useState((plan.content.files ?? []).join("\n"));
  const [commands, setCommands] = useState((plan.content.commands ?? []).join("\n"));
  const proposed = plan.status === "proposed";
  const act = async (f: () => Promise<number | null>) => {
    setBusy(true);
    setError(null);
    try {
      onDecided(await f());
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(false);
    }
  };
  const edited = editedPlan(steps, files, commands);
  return (
    <section class="plan-card" aria-label="Plan" data-testid="plan-card" data-status={plan.status} data-plan-id={plan.id}>
      <strong data-testid="plan-heading">
        {proposed
          ? "The agent's plan: nothing is written or run until you approve it"
          : plan.status === "approved"
            ? `Plan approved: ${progress(plan)}`
            : "Plan rejected: nothing of it ran"}
      </strong>
      {editing ? (
        <div class="plan-edit">
          <label>
            Steps, one per line
            <textarea data-testid="plan-edit-steps" rows={4} value={steps} onInput={(e) => setSteps((e.target as HTMLTextAreaElement).value)} />
          </label>
          <label>
            Files it may write, one per line
            <textarea data-testid="plan-edit-files" rows={2} value={files} onInput={(e) => setFiles((e.target as HTMLTextAreaElement).value)} />
          </label>
          <label>
            Commands it may run, exactly, one per line
            <textarea data-testid="plan-edit-commands" rows={2} value={commands} onInput={(e) => setCommands((e.target as HTMLTextAreaElement).value)} />
          </label>
        </div>
      ) : (
        <PlanLists plan={plan} />
      )}
      {error && (
        <div class="notice error" role="alert">
          {error}
        </div>
      )}
      {proposed && (
        <div class="plan-actions">
          {editing ? (
            <>
              <button type="button" class="primary" data-testid="plan-approve-edited" disabled={busy || edited === null} onClick={() => void act(() => approvePlan(plan.task_id, edited))}>
                Approve the edited plan
              </button>
              <button type="button" data-testid="plan-edit-cancel" onClick={() => setEditing(false)}>
                Cancel
              </button>
            </>
          ) : (
            <>
              <button type="button" class="primary" data-testid="plan-approve" disabled={busy} onClick={() => void act(() => approvePlan(plan.task_id, null))}>
                Approve
              </button>
              <button type="button" data-testid="plan-edit" disabled={busy} onClick={() => setEditing(true)}>
                Edit
              </button>
              <input
                data-testid="plan-reject-reason"
                aria-label="Why not (optional)"
                placeholder="Why not (optional)"
                value={reason}
                onInput={(e) => setReason((e.target as HTMLInputElement).value)}
              />
              <button type="button" class="danger" data-testid="plan-reject" disabled={busy} onClick={() => void act(() => rejectPlan(plan.task_id, reason.trim() || null).then(() => null))}>
                Reject
              </button>
            </>
          )}
        </div>
      )}
    </section>
  );
}

function PlanLists({ plan }: { plan: Plan }) {
  const ticking = plan.status === "approved";
  const files = plan.content.files ?? [];
  const commands = plan.content.commands ?? [];
  return (
    <>
      <ol class="plan-steps">
        {plan.content.steps.map((step, i) => {
          const done = plan.done.includes(i + 1);
          return (
            <li key={i} data-testid="plan-step" data-done={done ? "true" : "false"}>
              {ticking && <input type="checkbox" checked={done} disabled aria-label={done ? "done" : "not done yet"} />} {step}
            </li>
          );
        })}
      </ol>
      {files.length > 0 && (
        <div class="muted" data-testid="plan-files">
          Files it may write: {files.map((f) => <code key={f}>{f}</code>)}
        </div>
      )}
      {commands.length > 0 && (
        <div class="muted" data-testid="plan-commands">
          Commands it may run: {commands.map((c) => <code key={c}>{c}</code>)}
        </div>
      )}
    </>
  );
}
