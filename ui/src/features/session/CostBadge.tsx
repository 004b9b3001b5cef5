// The session's cost so far, a small figure in the session header (issue 19). Kept on its
// own so the header around it can change; it re-reads when `version` changes (a run of
// the session changed state) and never throws into the view.
import { useEffect, useState } from "preact/hooks";
import { taskCost } from "../../api/commands";
import type { TaskCost } from "../../api/generated/bindings";
import { usd } from "../../lib/format";

interface Props {
  /** The session's newest task: its cost, and through it the session's. */
  taskId: number | null;
  version: string;
}

export function CostBadge({ taskId, version }: Props) {
  const [cost, setCost] = useState<TaskCost | null>(null);
  useEffect(() => {
    if (taskId === null) return;
    let live = true;
    taskCost(taskId)
      .then((c) => live && setCost(c))
      .catch(() => live && setCost(null));
    return () => {
      live = false;
    };
  }, [taskId, version]);
  if (!cost || cost.session.turns === 0) return null;
  const dollars = (v: number | null) => usd(v ?? 0);
  const unpriced = cost.session.unpriced_turns > 0 ? ` (${cost.session.unpriced_turns} turns without a price)` : "";
  const title =
    `This session: ${dollars(cost.session.cost_usd)}${unpriced}\n` +
    `Last task: ${dollars(cost.task.cost_usd)} over ${cost.task.turns} turns\n` +
    cost.turns.map((t) => `step ${t.step}: ${t.cost_usd === null ? "no price" : dollars(t.cost_usd)}`).join("\n");
  return (
    <span class="cost-badge muted" data-testid="session-cost" title={title}>
      {dollars(cost.session.cost_usd)}
      {unpriced && "+"}
    </span>
  );
}
