// "Instructions in effect" for a session: its workspace's AGENTS.md files, the memories and
// the skills — everything runs are given besides the person's words, all as untrusted data.
import { Hooks } from "./Hooks";
import { Instructions } from "./Instructions";
import { Memories } from "./Memories";
import { Skills } from "./Skills";
import { useRules } from "./useRules";

export function RulesView({ sessionId, workspace }: { sessionId: number; workspace: string }) {
  const { rules, error, setError, reload } = useRules(workspace, sessionId);
  const changed = () => void reload();
  return (
    <main class="rules-view" data-testid="rules-view" data-loaded={rules !== null || error !== null ? "true" : "false"}>
      <header class="view-head">
        <div>
          <h1>Instructions in effect</h1>
          <div class="muted workspace">{workspace}</div>
        </div>
        <a class="button" href={`#/session/${sessionId}`}>
          Back to the session
        </a>
      </header>
      {error && <div class="notice error" role="alert">{error}</div>}
      {rules && (
        <div class="scroll">
          <Instructions files={rules.instructions} workspace={workspace} sessionId={sessionId} />
          <Memories
            memories={rules.memories}
            workspace={rules.workspace}
            autoAccept={rules.auto_accept_memories}
            onChanged={changed}
            onError={setError}
          />
          <Skills skills={rules.skills} problems={rules.problems} onChanged={changed} onError={setError} />
          <Hooks files={rules.hooks ?? []} workspace={rules.workspace} onChanged={changed} onError={setError} />
        </div>
      )}
    </main>
  );
}
