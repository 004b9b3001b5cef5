import { useCallback, useEffect, useMemo, useState } from "preact/hooks";
import {
  errorMessage,
  followChanges,
  listSessions,
  pendingApprovals,
  sessionInbox,
  setupStatus,
} from "./api/commands";
import type { Approval, Setup } from "./api/generated/bindings";
import { ApprovalDialog } from "./features/approvals/ApprovalDialog";
import { fromRecord } from "./features/approvals/fromRecord";
import { TaskDetails } from "./features/details/TaskDetails";
import { Sidebar } from "./features/sessions/Sidebar";
import { useLeaveDeleted } from "./features/sessions/useLeaveDeleted";
import { SessionView } from "./features/session/SessionView";
import { Settings } from "./features/settings/Settings";
import { NewSession } from "./features/workspace/NewSession";
import { RulesView } from "./features/rules/RulesView";
import { ModelsView } from "./features/models/ModelsView";
import { Welcome } from "./features/models/Welcome";
import { navigate, useRoute } from "./lib/route";
import { fireShortcut, shortcutOf } from "./lib/shortcuts";
import { ShortcutsHelp } from "./features/help/ShortcutsHelp";
import { SessionStore } from "./store/sessionStore";
import { StoreContext, useSnapshot } from "./store/useStore";

/** The app's one session store, fed by the runtime's change feed. */
export function App() {
  const store = useMemo(
    () =>
      new SessionStore({
        follow: followChanges,
        sessions: listSessions,
        approvals: pendingApprovals,
        inbox: sessionInbox,
        describe: errorMessage,
      }),
    [],
  );
  useEffect(() => {
    void store.start();
    return () => store.dispose();
  }, [store]);
  return (
    <StoreContext.Provider value={store}>
      <Shell store={store} />
    </StoreContext.Provider>
  );
}

function Shell({ store }: { store: SessionStore }) {
  const route = useRoute();
  const { sessions, approvals, loaded, activity, error: storeError } = useSnapshot();
  // The sidebar as a drawer in a narrow window (styles.css hides it below 800 px).
  const [drawer, setDrawer] = useState(false);
  const [open, setOpen] = useState<Approval | null>(null);
  const [setupError, setError] = useState<string | null>(null);
  const error = storeError ?? setupError;
  // null until known. No provider and no built-in model leads a first run to the settings
  // screen; no provider with the built-in model offers it first (the welcome).
  const [setup, setSetup] = useState<Setup | null>(null);
  const [welcomed, setWelcomed] = useState(false);
  const [help, setHelp] = useState(false);
  // The app-wide shortcuts (lib/shortcuts.ts); a dialog that is open keeps its own keys.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const id = shortcutOf(e);
      if (id === null || e.defaultPrevented) return;
      e.preventDefault();
      if (id === "new-session") navigate({ name: "new" });
      else if (id === "settings") navigate({ name: "settings" });
      else if (id === "help") setHelp(true);
      else fireShortcut(id);
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);
  const canRun = setup === null ? null : setup.provider_configured || setup.builtin !== null;
  const reload = useCallback(() => store.reloadLists(), [store]);
  useLeaveDeleted(route, sessions, loaded);

  const checkSetup = useCallback(async () => {
    try {
      const s = await setupStatus();
      setSetup(s);
      return s.provider_configured || s.builtin !== null;
    } catch (e) {
      setError(errorMessage(e));
      return true;
    }
  }, []);
  useEffect(() => {
    // A first run (no provider) opens on the welcome, which says which model answers.
    void checkSetup();
  }, []);

  // The models kept may have changed (the Models screen): the built-in model is read again.
  useEffect(() => {
    if (setup !== null) void checkSetup();
  }, [route.name]);

  const blocked = canRun === false ? "No model is set up yet, so nothing can answer." : null;
  // A first run (no conversation yet, no provider): the welcome offers the built-in model,
  // the servers running here, or a server to set up.
  const welcome =
    route.name === "new" && !welcomed && loaded && sessions.length === 0 && setup?.provider_configured === false
      ? setup
      : null;
  let view;
  if (route.name === "session") {
    view = (
      <SessionView
        key={route.id}
        sessionId={route.id}
        session={sessions.find((s) => s.id === route.id)}
        onChanged={() => void reload()}
        blocked={blocked}
      />
    );
  } else if (route.name === "settings") {
    view = (
      <Settings
        firstRun={canRun === false}
        workspaces={[...new Set(sessions.map((s) => s.workspace))]}
        onSaved={() => void checkSetup()}
      />
    );
  } else if (route.name === "rules") {
    const session = sessions.find((s) => s.id === route.id);
    view = session ? <RulesView key={route.id} sessionId={route.id} workspace={session.workspace} /> : null;
  } else if (route.name === "models") {
    view = <ModelsView onChanged={() => void checkSetup()} />;
  } else if (welcome) {
    view = (
      <Welcome
        builtin={welcome.builtin}
        onBuiltin={() => setWelcomed(true)}
        onServer={() => {
          setWelcomed(true);
          void checkSetup();
        }}
        onProvider={() => {
          setWelcomed(true);
          navigate({ name: "settings" });
        }}
      />
    );
  } else if (route.name === "task") {
    view = <TaskDetails key={route.id} taskId={route.id} />;
  } else {
    view = (
      <NewSession knownWorkspaces={sessions.map((s) => s.workspace)} onCreated={() => void reload()} blocked={blocked} />
    );
  }

  return (
    <div class="app" data-testid="app" data-loaded={loaded ? "true" : "false"}>
      <Sidebar
        sessions={sessions}
        approvals={approvals}
        route={route}
        onOpenApproval={(a) => {
          setDrawer(false);
          setOpen(a);
        }}
        needsSetup={canRun === false}
        loaded={loaded}
        activity={activity}
        open={drawer}
        onClose={() => setDrawer(false)}
        onChanged={() => void reload()}
        onHelp={() => setHelp(true)}
      />
      {drawer && <div class="drawer-scrim" data-testid="drawer-scrim" onClick={() => setDrawer(false)} />}
      <button
        type="button"
        class="sidebar-toggle"
        data-testid="sidebar-toggle"
        aria-label={drawer ? "Hide sessions" : "Show sessions"}
        aria-expanded={drawer}
        onClick={() => setDrawer(!drawer)}
      >
        <span aria-hidden="true">☰</span>
      </button>
      <div class="main">
        {error && <div class="notice error" role="alert">{error}</div>}
        {view}
      </div>
      {help && <ShortcutsHelp onClose={() => setHelp(false)} />}
      {open && (
        <ApprovalDialog
          approval={fromRecord(open)}
          waiting={approvals.filter((a) => a.id !== open.id)}
          onClose={() => setOpen(null)}
          onDone={() => {
            setOpen(null);
            void reload();
          }}
        />
      )}
    </div>
  );
}
