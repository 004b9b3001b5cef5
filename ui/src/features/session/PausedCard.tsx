// A paused task (issue 19): a budget ran out, or the agent was repeating itself. The card
// says why and offers continue (with more of the budget that ran out, or a steer) and stop.
import { useState } from "preact/hooks";
import { continueTask, errorMessage, stopTask } from "../../api/commands";
import type { Budget, Raise, Task } from "../../api/generated/bindings";

interface Props {
  task: Task;
  onDone: () => void;
}

const UNITS: Record<Budget, { label: string; initial: number; key: keyof Raise }> = {
  steps: { label: "more steps", initial: 10, key: "steps" },
  seconds: { label: "more seconds", initial: 300, key: "seconds" },
  tokens: { label: "more tokens", initial: 100000, key: "tokens" },
  usd: { label: "more dollars", initial: 1, key: "usd" },
};

export function PausedCard({ task, onDone }: Props) {
  const pause = task.pause;
  const repeating = pause?.reason === "repetition";
  const unit = pause?.budget ? UNITS[pause.budget] : null;
  const [amount, setAmount] = useState(unit?.initial ?? 0);
  const [steer, setSteer] = useState("");
  const [showRepeated, setShowRepeated] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

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
  const raise: Raise = unit ? { [unit.key]: amount } : {};
  return (
    <section class="paused-card" role="alertdialog" aria-label="Paused task" data-testid="paused-card">
      <strong>{repeating ? "The agent is repeating itself" : "A budget ran out"}</strong>
      {!repeating && <p data-testid="paused-message">{pause?.message}</p>}
      {repeating && (
        <>
          <button type="button" class="link" data-testid="show-repeated" onClick={() => setShowRepeated(!showRepeated)}>
            {showRepeated ? "Hide what it repeated" : "Show what it repeated"}
          </button>
          {showRepeated && <p data-testid="paused-message">{pause?.message}</p>}
          <textarea
            data-testid="paused-steer"
            placeholder="Steer: tell the agent what to do instead (optional)"
            value={steer}
            onInput={(e) => setSteer((e.target as HTMLTextAreaElement).value)}
          />
        </>
      )}
      {unit && (
        <label>
          Continue with{" "}
          <input
            type="number"
            min={0}
            step={unit.key === "usd" ? 0.1 : 1}
            value={amount}
            data-testid="paused-amount"
            onInput={(e) => setAmount(Number((e.target as HTMLInputElement).value))}
          />{" "}
          {unit.label}
        </label>
      )}
      {error && <div class="notice error" role="alert">{error}</div>}
      <div class="actions">
        <button
          type="button"
          class="primary"
          disabled={busy}
          data-testid="paused-continue"
          onClick={() => act(() => continueTask(task.id, raise, steer.trim() ? steer : null))}
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
