// The session header's run figures: the step the run is at out of its limit, and the
// tokens it used out of its budget (when one is set). The limits are read once per view;
// an environment override wins over what is stored, as it does for the runs, and what the
// person raised for this task (continuing a paused run) is added, as the run adds it.
import { useEffect, useState } from "preact/hooks";
import { limits, settingOverrides } from "../../api/commands";
import type { TaskView } from "./useSession";
import { stepLimit, tokenLimit } from "./paused";

interface Caps {
  steps: number | null;
  tokens: number | null;
}

function useCaps(): Caps {
  const [caps, setCaps] = useState<Caps>({ steps: null, tokens: null });
  useEffect(() => {
    let live = true;
    Promise.all([limits(), settingOverrides()])
      .then(([l, overrides]) => {
        const over = (field: string) => {
          const o = overrides.find((x) => x.field === field);
          const n = o ? Number(o.value) : NaN;
          return Number.isFinite(n) ? n : null;
        };
        if (live) setCaps({ steps: over("max_steps") ?? l.max_steps, tokens: over("max_task_tokens") ?? l.max_task_tokens });
      })
      .catch(() => {
        // The figures are a hint: without the limits the counts still show.
      });
    return () => {
      live = false;
    };
  }, []);
  return caps;
}

const compact = (n: number) => (n >= 10_000 ? `${Math.round(n / 1000)}k` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n));

export function RunMeter({ view }: { view: TaskView }) {
  const caps = useCaps();
  const steps = stepLimit(caps.steps, view.task);
  const tokens = tokenLimit(caps.tokens, view.task);
  const running = view.live && !["completed", "failed", "cancelled", "budget_exceeded"].includes(view.task.status);
  return (
    <div class={running ? "run-meter running" : "run-meter"} data-testid="run-meter" data-steps={view.steps} data-step-limit={steps ?? ""}>
      <span title="Model turns this task has taken, out of its limit" data-testid="run-steps">
        Step {view.steps}
        {steps !== null && `/${steps}`}
      </span>
      <span title="Tokens this task has used" data-testid="run-tokens">
        {compact(view.tokens)}
        {tokens !== null ? ` / ${compact(tokens)}` : ""} tokens
      </span>
    </div>
  );
}
