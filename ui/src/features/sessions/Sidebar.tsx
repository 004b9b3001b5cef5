import type { Approval, Session } from "../../api/generated/bindings";
import { basename } from "../../lib/format";
import { hrefOf, type Route } from "../../lib/route";

interface Props {
  sessions: Session[];
  approvals: Approval[];
  route: Route;
  onOpenApproval: (a: Approval) => void;
  needsSetup: boolean;
}

export function Sidebar({ sessions, approvals, route, onOpenApproval, needsSetup }: Props) {
  return (
    <nav class="sidebar" aria-label="Sessions">
      <a class="new-session" href={hrefOf({ name: "new" })} data-testid="new-session">
        + New session
      </a>
      {approvals.length > 0 && (
        <section class="pending" data-testid="pending-approvals">
          <h2>Waiting for you ({approvals.length})</h2>
          {approvals.map((a) => (
            <button type="button" class="pending-item" key={a.id} onClick={() => onOpenApproval(a)}>
              <span class="tool-name">{a.tool}</span> <span class="muted">task {a.task_id}</span>
            </button>
          ))}
        </section>
      )}
      <a
        class={route.name === "settings" ? "settings-link active" : "settings-link"}
        href={hrefOf({ name: "settings" })}
        data-testid="settings-link"
      >
        Settings{needsSetup && <span class="badge error">set up a model</span>}
      </a>
      <h2>Sessions</h2>
      {sessions.length === 0 && <p class="muted">No sessions yet.</p>}
      <ul class="session-list" data-testid="session-list">
        {sessions.map((s) => {
          const active = route.name === "session" && route.id === s.id;
          return (
            <li key={s.id}>
              <a
                href={hrefOf({ name: "session", id: s.id })}
                class={active ? "session-item active" : "session-item"}
                data-testid="session-item"
                data-session-id={s.id}
                title={s.workspace}
              >
                <span class="session-title">{s.title}</span>
                <span class="session-workspace muted">{basename(s.workspace)}</span>
                {s.last_failure && <span class="badge error">failed</span>}
              </a>
            </li>
          );
        })}
      </ul>
    </nav>
  );
}
