// What the window says about a paused run, as plain functions of its data: the card's
// raise, the header's limits (with what was raised), and the composer and Stop wording.
import type { Budget, PauseOffer, Raise, Task } from "../../api/generated/bindings";

export interface Unit {
  /** "more steps": after the amount in "Continue with [3] more steps". */
  label: string;
  key: keyof Raise;
  step: number;
}

export const UNITS: Record<Budget, Unit> = {
  steps: { label: "more steps", key: "steps", step: 1 },
  seconds: { label: "more seconds", key: "seconds", step: 1 },
  tokens: { label: "more tokens", key: "tokens", step: 1 },
  usd: { label: "more dollars", key: "usd", step: 0.1 },
};

/** The amount the card proposes: the offer's raise of the budget that ran out. */
export function proposedAmount(offer: PauseOffer | null): number | null {
  if (!offer?.budget) return null;
  const v = offer.raise[UNITS[offer.budget].key];
  return typeof v === "number" && v > 0 ? v : null;
}

/** The raise Continue sends: the amount typed, else the proposal; nothing for a
 * repetition pause (or while the proposal is not known: the runtime then takes its own). */
export function raiseFor(offer: PauseOffer | null, typed: number | null): Raise {
  if (!offer?.budget) return {};
  const amount = typed ?? proposedAmount(offer);
  if (amount === null || !Number.isFinite(amount) || amount <= 0) return {};
  const key = UNITS[offer.budget].key;
  return { [key]: key === "usd" ? amount : Math.round(amount) };
}

/** Whether what was typed can be sent: a positive number, or nothing typed. */
export function amountValid(typed: number | null): boolean {
  return typed === null || (Number.isFinite(typed) && typed > 0);
}

/** The step limit the header shows: the run's limit plus what was raised for this task. */
export function stepLimit(cap: number | null, task: Pick<Task, "extra">): number | null {
  return cap === null ? null : cap + task.extra.steps;
}

/** The token budget the header shows, with what was raised for this task. */
export function tokenLimit(cap: number | null, task: Pick<Task, "extra">): number | null {
  return cap === null ? null : cap + task.extra.tokens;
}

export type RunState = "idle" | "working" | "paused";

export function composerPlaceholder(state: RunState): string {
  switch (state) {
    case "paused":
      return "The run is paused: continue or stop it above. A message sent now waits until it goes on.";
    case "working":
      return "The agent is working — your message waits until it can be read (Enter queues it)";
    case "idle":
      return "Tell the agent what to do… (Enter sends, Shift+Enter for a new line)";
  }
}

/** The header's Stop button: a paused run is stopped as the card stops it. */
export function stopLabel(state: RunState): string {
  return state === "paused" ? "Stop paused run" : "Stop";
}
