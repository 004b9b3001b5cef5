// A task's audit record: every persisted event with its sequence, type, time, the time
// since the previous event and the tokens of model turns.
import { useEffect, useState } from "preact/hooks";
import { errorMessage, getTask, taskEvents } from "../../api/commands";
import type { Task, TaskEvent } from "../../api/generated/bindings";
import { timeOf } from "../../lib/format";
import { hrefOf } from "../../lib/route";

export function TaskDetails({ taskId }: { taskId: number }) {
  const [task, setTask] = useState<Task | null>(null);
  const [events, setEvents] = useState<TaskEvent[]>([]);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    Promise.all([getTask(taskId), taskEvents(taskId)])
      .then(([t, e]) => {
        setTask(t);
        setEvents(e);
      })
      .catch((e) => setError(errorMessage(e)));
  }, [taskId]);

  return (
    <main class="details" data-testid="task-details">
      <header class="view-head">
        <div>
          <h1>Task {taskId}</h1>
          {task && (
            <div class="muted">
              {task.status.replace("_", " ")} · {task.step_count} steps · {task.prompt_tokens + task.completion_tokens} tokens
              {" · "}
              <a href={hrefOf({ name: "session", id: task.session_id })}>back to the session</a>
            </div>
          )}
        </div>
      </header>
      {error && <div class="notice error">{error}</div>}
      <div class="scroll">
        {task && <p class="goal">{task.goal}</p>}
        <table class="timeline" data-testid="timeline">
          <thead>
            <tr>
              <th>#</th>
              <th>event</th>
              <th>time</th>
              <th>+ms</th>
              <th>tokens</th>
            </tr>
          </thead>
          <tbody>
            {events.map((ev, i) => (
              <tr key={ev.sequence} data-testid="timeline-row" data-type={ev.type}>
                <td>{ev.sequence}</td>
                <td>
                  <code>{ev.type}</code>
                </td>
                <td>{timeOf(ev.at)}</td>
                <td>{i === 0 ? "" : Math.max(0, Date.parse(ev.at) - Date.parse(events[i - 1].at))}</td>
                <td>{tokensOf(ev)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </main>
  );
}

function tokensOf(ev: TaskEvent): string {
  if (ev.type !== "model_turn_completed" || !ev.payload.usage) return "";
  const u = ev.payload.usage;
  return `${u.prompt_tokens} + ${u.completion_tokens}`;
}
