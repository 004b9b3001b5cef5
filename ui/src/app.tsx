import { useCallback, useEffect, useState } from "preact/hooks";
import { errorMessage, listSessions, pendingApprovals, setupStatus } from "./api/commands";
import type { Approval, Session } from "./api/types";
import { ApprovalDialog } from "./features/approvals/ApprovalDialog";
import { fromRecord } from "./features/approvals/fromRecord";
import { TaskDetails } from "./features/details/TaskDetails";
import { Sidebar } from "./features/sessions/Sidebar";
import { SessionView } from "./features/session/SessionView";
import { Settings } from "./features/settings/Settings";
import { NewSession } from "./features/workspace/NewSession";
import { navigate, useRoute } from "./lib/route";

/** The sidebar has no push channel for "something changed elsewhere" yet: re-read it. */
const SIDEBAR_REFRESH_MS = 3000;

export function App() {
  const route = useRoute();
  const [sessions, setSessions] = useState<Session[]>([]);
  const [approvals, setApprovals] = useState<Approval[]>([]);
  const [open, setOpen] = useState<Approval | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loaded, setLoaded] = useState(false);
  // null until known; false leads a first run to the settings screen.
  const [configured, setConfigured] = useState<boolean | null>(null);

  const reload = useCallback(async () => {
    try {
      const [s, a] = await Promise.all([listSessions(), pendingApprovals()]);
      setSessions(s);
      setApprovals(a);
      setError(null);
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setLoaded(true);
    }
  }, []);

  useEffect(() => {
    void reload();
    const t = setInterval(() => void reload(), SIDEBAR_REFRESH_MS);
    return () => clearInterval(t);
  }, [reload]);
  useEffect(() => void reload(), [route]);

  const checkSetup = useCallback(async () => {
    try {
      const s = await setupStatus();
      setConfigured(s.provider_configured);
      return s.provider_configured;
    } catch (e) {
      setError(errorMessage(e));
      return true;
    }
  }, []);
  useEffect(() => {
    // First run: no model configured, so nothing could answer. Lead to the settings.
    void checkSetup().then((ok) => {
      if (!ok && parseRouteIsStart()) navigate({ name: "settings" });
    });
  }, []);

  let view;
  if (route.name === "session") {
    view = (
      <SessionView
        key={route.id}
        sessionId={route.id}
        session={sessions.find((s) => s.id === route.id)}
        onChanged={() => void reload()}
      />
    );
  } else if (route.name === "settings") {
    view = (
      <Settings
        firstRun={configured === false}
        workspaces={[...new Set(sessions.map((s) => s.workspace))]}
        onSaved={() => void checkSetup()}
      />
    );
  } else if (route.name === "task") {
    view = <TaskDetails key={route.id} taskId={route.id} />;
  } else {
    view = <NewSession knownWorkspaces={sessions.map((s) => s.workspace)} onCreated={() => void reload()} />;
  }

  return (
    <div class="app" data-testid="app" data-loaded={loaded ? "true" : "false"}>
      <Sidebar
        sessions={sessions}
        approvals={approvals}
        route={route}
        onOpenApproval={setOpen}
        needsSetup={configured === false}
      />
      <div class="main">
        {error && <div class="notice error" role="alert">{error}</div>}
        {view}
      </div>
      {open && (
        <ApprovalDialog
          approval={fromRecord(open)}
          onDone={() => {
            setOpen(null);
            void reload();
          }}
        />
      )}
    </div>
  );
}

/** The window opened on its start page (not a session or a task a reload kept). */
function parseRouteIsStart(): boolean {
  const h = window.location.hash;
  return h === "" || h === "#" || h === "#/" || h === "#/new";
}
