// A paused task: a budget ran out, the agent was repeating itself, or the disk is full.
// The card says what ran out and how much was used (the runtime's offer), proposes the
// budget again, and offers continue (with that raise, or a steer) and stop.
import { useEffect, useState } from "preact/hooks";
import { continueTask, errorMessage, pauseOffer, stopTask } from "../../api/commands";
import type { PauseOffer, Task } from "../../api/generated/bindings";
import { amountValid, proposedAmount, raiseFor, UNITS } from "./paused";

interface Props {
  task: Task;
  onDone: () => void;
}

export function PausedCard({ task, onDone }: Props) {
  const [offer, setOffer] = useState<PauseOffer | null>(null);
  // What the person typed; `null`: the proposal stands.
  const [typed, setTyped] = useState<number | null>(null);
  const [steer, setSteer] = useState("");
  const [showRepeated, setShowRepeated] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // The live view knows a run paused before the stored task says why: ask again when it does.
  const stored = task.pause?.message ?? "";
  useEffect(() => {
    let live = true;
    pauseOffer(task.id)
      .then((o) => live && setOffer(o))
      .catch(() => {
        // Not paused in the store yet (or no longer): the card waits for the next refresh.
      });
    return () => {
      live = false;
    };
  }, [task.id, stored]);

  const reason = offer?.reason ?? task.pause?.reason;
  const repeating = reason === "repetition";
  const budget = offer?.budget ?? task.pause?.budget ?? null;
  const unit = budget ? UNITS[budget] : null;
  const proposed = proposedAmount(offer);
  const valid = amountValid(typed);

  const act = async (f: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await f();
      onDone();
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(false);
    }
  };
  const sentence = offer?.sentence ?? task.pause?.message ?? "";
  return (
    <section class="paused-card" role="alertdialog" aria-label="Paused task" data-testid="paused-card">
      <strong>
        {repeating ? "The agent is repeating itself" : reason === "disk_full" ? "The disk is full: free some space, then continue" : "A budget ran out"}
      </strong>
      {!repeating && <p data-testid="paused-message">{sentence}</p>}
      {repeating && (
        <>
          <button type="button" class="link" data-testid="show-repeated" onClick={() => setShowRepeated(!showRepeated)}>
            {showRepeated ? "Hide what it repeated" : "Show what it repeated"}
          </button>
          {showRepeated && <p data-testid="paused-message">{sentence}</p>}
          <textarea
            data-testid="paused-steer"
            placeholder="Steer: tell the agent what to do instead (optional)"
            value={steer}
            onInput={(e) => setSteer((e.target as HTMLTextAreaElement).value)}
          />
        </>
      )}
      {unit && !repeating && (
        <label>
          Continue with{" "}
          <input
            type="number"
            min={unit.step}
            step={unit.step}
            value={typed ?? proposed ?? ""}
            aria-invalid={!valid}
            data-testid="paused-amount"
            onInput={(e) => {
              const v = (e.target as HTMLInputElement).value;
              setTyped(v.trim() === "" ? null : Number(v));
            }}
          />{" "}
          {unit.label}
        </label>
      )}
      {!valid && <div class="notice error" role="alert">Enter an amount above zero.</div>}
      {error && <div class="notice error" role="alert">{error}</div>}
      <div class="actions">
        <button
          type="button"
          class="primary"
          disabled={busy || !valid}
          data-testid="paused-continue"
          onClick={() => act(() => continueTask(task.id, raiseFor(offer, typed), steer.trim() ? steer : null))}
        >
          {repeating && steer.trim() ? "Steer and continue" : "Continue"}
        </button>
        <button type="button" class="danger" disabled={busy} data-testid="paused-stop" onClick={() => act(() => stopTask(task.id))}>
          Stop
        </button>
      </div>
    </section>
  );
}
