// A new session: a workspace folder (native picker, typed path, or a recent one) and the
// first goal.
import { useEffect, useState } from "preact/hooks";
import { createTask, errorMessage, getTask, pickFolder } from "../../api/commands";
import { navigate } from "../../lib/route";
import { Composer } from "../session/Composer";
import { recentWorkspaces, rememberWorkspace } from "./recent";
import { exampleGoals } from "./examples";

interface Props {
  knownWorkspaces: string[];
  onCreated: () => void;
  /** Why nothing can be sent yet (no model set up), or null. */
  blocked: string | null;
}

export function NewSession({ knownWorkspaces, onCreated, blocked }: Props) {
  const recent = recentWorkspaces(knownWorkspaces);
  const [workspace, setWorkspace] = useState(recent[0] ?? "");
  const [error, setError] = useState<string | null>(null);
  const [touched, setTouched] = useState(false);
  const [draft, setDraft] = useState<{ text: string; n: number } | null>(null);
  const examples = exampleGoals(workspace);
  // Plan mode for this first goal: the agent only reads and proposes a plan.
  const [plan, setPlan] = useState(false);
  // The sessions (and so the recent list) may arrive after the first render.
  useEffect(() => {
    if (!touched && !workspace && recent[0]) setWorkspace(recent[0]);
  }, [recent[0]]);

  const choose = async () => {
    try {
      const dir = await pickFolder();
      if (dir) {
        setTouched(true);
        setWorkspace(dir);
      }
    } catch (e) {
      setError(errorMessage(e));
    }
  };
  const send = async (goal: string) => {
    setError(null);
    if (!workspace.trim()) {
      setError("Choose a workspace folder first.");
      return;
    }
    try {
      const id = await createTask(goal, workspace.trim(), plan);
      rememberWorkspace(workspace.trim());
      const task = await getTask(id);
      onCreated();
      navigate({ name: "session", id: task.session_id });
    } catch (e) {
      setError(errorMessage(e));
    }
  };

  return (
    <main class="session-view" data-testid="new-session-view">
      <header class="view-head">
        <h1>New session</h1>
      </header>
      <div class="scroll">
        <label class="field">
          Workspace folder — the agent works only inside it
          <div class="row">
            <input
              data-testid="workspace-input"
              value={workspace}
              placeholder="/path/to/folder"
              onInput={(e) => {
                setTouched(true);
                setWorkspace((e.target as HTMLInputElement).value);
              }}
            />
            <button type="button" data-testid="pick-folder" onClick={choose}>
              Choose folder…
            </button>
          </div>
        </label>
        {recent.length > 0 && (
          <div class="recent">
            <span class="muted">Recent:</span>
            {recent.map((w) => (
              <button
                type="button"
                class="link"
                key={w}
                onClick={() => {
                  setTouched(true);
                  setWorkspace(w);
                }}
              >
                {w}
              </button>
            ))}
          </div>
        )}
        {examples.length > 0 && (
          <div class="examples" data-testid="example-goals">
            <p class="muted">For example:</p>
            {examples.map((goal) => (
              <button
                type="button"
                class="example-goal"
                key={goal}
                data-testid="example-goal"
                onClick={() => setDraft({ text: goal, n: (draft?.n ?? 0) + 1 })}
              >
                {goal}
              </button>
            ))}
          </div>
        )}
        {error && <div class="notice error" role="alert" data-testid="error">{error}</div>}
      </div>
      <Composer
        onSend={send}
        blocked={blocked}
        draft={draft}
        placeholder="What should the agent do in this folder? (Enter sends)"
        planMode={plan}
        onPlanMode={setPlan}
      />
    </main>
  );
}
