// A task's audit record: every persisted event with its sequence, type, time, the time
// since the previous event and the tokens of model turns.
import { addedOn } from "../approvals/commandOffer";
import { Fragment } from "preact";
import { useEffect, useState } from "preact/hooks";
import { errorMessage, getTask, taskEvents } from "../../api/commands";
import type { EventKind, Task, TaskEvent } from "../../api/generated/bindings";
import { timeOf } from "../../lib/format";
import { hrefOf } from "../../lib/route";
import { visible } from "../approvals/hidden";

export function TaskDetails({ taskId }: { taskId: number }) {
  const [task, setTask] = useState<Task | null>(null);
  const [events, setEvents] = useState<TaskEvent[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [open, setOpen] = useState<ReadonlySet<number>>(new Set());
  const toggle = (seq: number) => {
    const next = new Set(open);
    if (next.has(seq)) next.delete(seq);
    else next.add(seq);
    setOpen(next);
  };
  useEffect(() => {
    Promise.all([getTask(taskId), taskEvents(taskId)])
      .then(([t, e]) => {
        setTask(t);
        setEvents(e);
      })
      .catch((e) => setError(errorMessage(e)));
  }, [taskId]);

  return (
    <main class="details" data-testid="task-details" data-loaded={task !== null || error !== null ? "true" : "false"}>
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
              <Fragment key={ev.sequence}>
                <tr
                  data-testid="timeline-row"
                  data-type={ev.type}
                  class={open.has(ev.sequence) ? "timeline-row open" : "timeline-row"}
                  aria-expanded={open.has(ev.sequence)}
                  tabIndex={0}
                  onClick={() => toggle(ev.sequence)}
                  onKeyDown={(e) => {
                    if (e.key === "Enter" || e.key === " ") {
                      e.preventDefault();
                      toggle(ev.sequence);
                    }
                  }}
                >
                  <td>{ev.sequence}</td>
                  <td>
                    <span class="event-name" title={ev.type}>{EVENT_NAMES[ev.type]}</span>
                    {ev.type === "hook_ran" && (
                      <span class="muted" data-testid="timeline-hook">
                        {" "}
                        {ev.payload.hook_event} {ev.payload.outcome.replace("_", " ")}: {visible(ev.payload.command)}
                      </span>
                    )}
                    {ev.type === "allowed_by_rule" && (
                      <span class="muted" data-testid="timeline-rule">
                        {" "}
                        {ev.payload.rules.map((r) => `${r.rule} (${addedOn(r.created_at)})`).join(", ")}
                      </span>
                    )}
                  </td>
                  <td>{timeOf(ev.at)}</td>
                  <td>{i === 0 ? "" : Math.max(0, Date.parse(ev.at) - Date.parse(events[i - 1].at))}</td>
                  <td>{tokensOf(ev)}</td>
                </tr>
                {open.has(ev.sequence) && (
                  <tr class="timeline-payload" data-testid="timeline-payload">
                    <td />
                    <td colSpan={4}>
                      <pre>{visible(JSON.stringify(ev.payload, null, 2))}</pre>
                    </td>
                  </tr>
                )}
              </Fragment>
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

/** Each event as a person would name it (the wire name stays in the row's tooltip). */
const EVENT_NAMES: Record<EventKind, string> = {
  assistant_delta: "Text streamed",
  stream_reset: "Stream restarted",
  task_created: "Task created",
  task_started: "Run started",
  model_turn_started: "Model asked",
  model_turn_completed: "Model answered",
  tool_call_started: "Tool started",
  tool_call_completed: "Tool finished",
  tool_call_failed: "Tool failed",
  tool_call_repaired: "Tool call read from text",
  allowed_by_rule: "Allowed by a command rule",
  approval_required: "Approval asked",
  approval_resolved: "Approval answered",
  input_placed: "Message placed",
  mcp_problem: "MCP server problem",
  context_compacted: "Context compacted",
  agent_completed: "Agent finished",
  task_completed: "Task completed",
  task_failed: "Task failed",
  task_cancelled: "Task cancelled",
  budget_exceeded: "Budget exceeded",
  run_paused: "Run paused",
  run_continued: "Run continued",
  hook_ran: "Hook ran",
  plan_proposed: "Plan proposed",
  plan_step_done: "Plan step done",
};
