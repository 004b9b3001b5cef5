// The session header's model: the model the latest run asked, and "on this computer" for
// the built-in one. Read from the run's `task_started` event once it has started.
import { useEffect, useState } from "preact/hooks";
import { localModels, taskEvents } from "../../api/commands";
import { displayNameOf, runModelOf } from "./describe";

interface Props {
  taskId: number | null;
  /** The task's status: a change (queued → running) is when its label appears. */
  status: string | null;
}

export function RunModel({ taskId, status }: Props) {
  const [label, setLabel] = useState<{ name: string; local: boolean } | null>(null);
  useEffect(() => {
    if (taskId === null || status === "queued") return;
    let live = true;
    (async () => {
      const events = await taskEvents(taskId);
      const started = [...events].reverse().find((e) => e.type === "task_started");
      const run = started && started.type === "task_started" ? runModelOf(started.payload.provider) : null;
      if (!run) return;
      const name = run.local ? displayNameOf(run.model, await localModels().catch(() => [])) : run.model;
      if (live) setLabel({ name, local: run.local });
    })().catch(() => {
      // The header's model is a hint: without it the rest of the header stands.
    });
    return () => {
      live = false;
    };
  }, [taskId, status]);
  if (!label) return null;
  return (
    <span class="run-model" data-testid="run-model" data-local={label.local ? "true" : "false"} title="The model this conversation's latest run used">
      {label.name}
      {label.local && <span class="on-device"> · on this computer</span>}
    </span>
  );
}
