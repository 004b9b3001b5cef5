import { useEffect, useRef, useState } from "preact/hooks";
import type { Approval, Session } from "../../api/generated/bindings";
import { basename } from "../../lib/format";
import { relativeTime } from "../../lib/relative";
import { hrefOf, type Route } from "../../lib/route";
import type { Activity } from "../../store/sessionStore";
import { groupByDay, workspacesOf } from "./groups";
import { SearchResults } from "./SearchResults";
import { SearchInput } from "../../lib/inputs";
import { RenameField, SessionMenu } from "./SessionMenu";
import { isSearchShortcut } from "./search";

interface Props {
  sessions: Session[];
  approvals: Approval[];
  route: Route;
  onOpenApproval: (a: Approval) => void;
  needsSetup: boolean;
  /** False until the sessions were read the first time (the store may still be opening). */
  loaded: boolean;
  activity: ReadonlyMap<number, Activity>;
  /** Below the narrow breakpoint the sidebar is a drawer: open or not. */
  open: boolean;
  onClose: () => void;
  /** A session was renamed here: the lists are read again. */
  onChanged: () => void;
  onHelp: () => void;
}

const ACTIVITY_LABEL: Record<Activity, string> = { busy: "working", waiting: "waiting for you" };

export function Sidebar(props: Props) {
  const { sessions, approvals, route, onOpenApproval, needsSetup, loaded, activity, open, onClose, onChanged, onHelp } = props;
  const [query, setQuery] = useState("");
  const [folder, setFolder] = useState<string | null>(null);
  const [renaming, setRenaming] = useState<number | null>(null);
  const searchBox = useRef<HTMLInputElement>(null);
  // The first frame with the sessions read (tests/e2e/bench_ui.py: first paint to sessions).
  useEffect(() => {
    if (loaded && performance.getEntriesByName("pp-sessions-shown").length === 0) {
      requestAnimationFrame(() => performance.mark("pp-sessions-shown"));
    }
  }, [loaded]);
  // Ctrl+K from anywhere: to the search box (the drawer's too, when the sidebar is one).
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (!isSearchShortcut(e)) return;
      e.preventDefault();
      searchBox.current?.focus();
      searchBox.current?.select();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);
  const q = query.trim().toLowerCase();
  const folders = workspacesOf(sessions);
  // A folder no session uses any more (the last one was deleted) filters nothing.
  const inFolder = folder !== null && folders.includes(folder) ? sessions.filter((s) => s.workspace === folder) : sessions;
  const shown = q
    ? inFolder.filter((s) => s.title.toLowerCase().includes(q) || s.workspace.toLowerCase().includes(q))
    : inFolder;
  return (
    <nav class={open ? "sidebar open" : "sidebar"} aria-label="Sessions" data-testid="sidebar" onClick={(e) => {
      // A link followed in the drawer closes it.
      if ((e.target as HTMLElement).closest("a")) onClose();
    }}>
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
      <button type="button" class="link help-link" data-testid="open-shortcuts" onClick={onHelp}>
        Keyboard shortcuts
      </button>
      <h2>Sessions</h2>
      {sessions.length > 0 && (
        <SearchInput
          inputRef={searchBox}
          class="session-search"
          placeholder="Search (Ctrl+K)"
          label="Search sessions and messages"
          keyshortcuts="Control+K"
          testid="session-search"
          value={query}
          onValue={setQuery}
        />
      )}
      {folders.length > 1 && (
        <select
          class="session-folder"
          aria-label="Show the sessions of a folder"
          data-testid="session-folder"
          value={folder ?? ""}
          onChange={(e) => setFolder((e.target as HTMLSelectElement).value || null)}
        >
          <option value="">All folders</option>
          {folders.map((f) => (
            <option key={f} value={f} title={f}>
              {basename(f)}
            </option>
          ))}
        </select>
      )}
      {!loaded && (
        <p class="muted" data-testid="sessions-loading" role="status">
          Loading sessions…
        </p>
      )}
      {loaded && sessions.length === 0 && <p class="muted">No sessions yet.</p>}
      {sessions.length > 0 && q && shown.length === 0 && <p class="muted">No session title matches.</p>}
      <div class="session-list" data-testid="session-list">
        {groupByDay(shown).map((g) => (
          <section key={g.label} class="session-group" aria-label={g.label} data-testid="session-group">
            <h3 class="session-group-label" data-testid="session-group-label">{g.label}</h3>
            <ul>
              {g.sessions.map((s) => {
                const active = route.name === "session" && route.id === s.id;
                const doing = activity.get(s.id);
                if (renaming === s.id) {
                  return (
                    <li key={s.id}>
                      <RenameField
                        session={s}
                        onDone={(renamed) => {
                          setRenaming(null);
                          if (renamed) onChanged();
                        }}
                      />
                    </li>
                  );
                }
                return (
                  <li key={s.id} class="session-row">
                    <a
                      href={hrefOf({ name: "session", id: s.id })}
                      class={active ? "session-item active" : "session-item"}
                      data-testid="session-item"
                      data-session-id={s.id}
                      data-activity={doing ?? "idle"}
                      title={s.workspace}
                    >
                      <span class="session-line">
                        {doing && (
                          <span
                            class={`activity-dot ${doing}`}
                            data-testid="session-activity"
                            role="img"
                            aria-label={ACTIVITY_LABEL[doing]}
                            title={ACTIVITY_LABEL[doing]}
                          />
                        )}
                        <span class="session-title">{s.title}</span>
                      </span>
                      <span class="session-meta muted">
                        <span class="session-workspace">{basename(s.workspace)}</span>
                        <span class="session-date" title={s.updated_at}>{relativeTime(s.updated_at)}</span>
                      </span>
                      {s.last_failure && <span class="badge error session-failed">failed</span>}
                    </a>
                    <SessionMenu session={s} onRename={() => setRenaming(s.id)} />
                  </li>
                );
              })}
            </ul>
          </section>
        ))}
      </div>
      <SearchResults query={query} />
    </nav>
  );
}
