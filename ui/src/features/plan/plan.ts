// Plan mode's pure parts: which plan the card shows, and the edit form's text to a plan.
import type { Plan, PlanContent } from "../../api/generated/bindings";

/** The plan the session's card shows: its newest (an older one was decided and carried out). */
export function currentPlan(plans: Plan[]): Plan | null {
  return plans.length === 0 ? null : plans[plans.length - 1];
}

/** One item per non-empty line, trimmed. */
export function lines(text: string): string[] {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l.length > 0);
}

/** The edit form's three boxes as a plan; `null` with no step. */
export function editedPlan(steps: string, files: string, commands: string): PlanContent | null {
  const content = { steps: lines(steps), files: lines(files), commands: lines(commands) };
  return content.steps.length === 0 ? null : content;
}

/** How far the approved plan is: "2 of 3 steps done". */
export function progress(plan: Plan): string {
  const done = plan.done.filter((n) => n >= 1 && n <= plan.content.steps.length).length;
  return `${done} of ${plan.content.steps.length} steps done`;
}
