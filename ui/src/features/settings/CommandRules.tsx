// Settings → Command rules: a workspace's rules (`cargo test *`, allow or deny), with where
// each came from and when; add one, remove one. Commands every part of which an allow rule
// covers run without asking; a deny rule refuses a command wherever it appears in it.
import { useEffect, useState } from "preact/hooks";
import { addCommandRule, commandRules, errorMessage, removeCommandRule } from "../../api/commands";
import type { CommandRule, CommandRuleKind } from "../../api/generated/bindings";
import { addedOn } from "../approvals/commandOffer";
import { usePartLoaded } from "../../lib/loaded";
import { StatusLine, type Status } from "./fields";

const ORIGIN: Record<CommandRule["origin"], string> = {
  person: "you",
  session: "for one session",
  plan: "an approved plan",
};

export function CommandRulesSection({ workspaces }: { workspaces: string[] }) {
  const [workspace, setWorkspace] = useState(workspaces[0] ?? "");
  const [rules, setRules] = useState<CommandRule[] | null>(null);
  const [text, setText] = useState("");
  const [kind, setKind] = useState<CommandRuleKind>("allow");
  const [status, setStatus] = useState<Status>(null);
  useEffect(() => {
    if (!workspace && workspaces[0]) setWorkspace(workspaces[0]);
  }, [workspaces[0]]);
  const reload = (ws: string) =>
    commandRules(ws)
      .then(setRules)
      .catch((e) => setStatus({ tone: "error", text: errorMessage(e) }));
  useEffect(() => {
    if (!workspace) return;
    setRules(null);
    void reload(workspace);
  }, [workspace]);
  usePartLoaded(workspaces.length === 0 || rules !== null || status?.tone === "error");

  const add = async () => {
    if (!text.trim()) return;
    try {
      await addCommandRule(workspace, kind, text);
      setText("");
      setStatus({ tone: "ok", text: "Added." });
      await reload(workspace);
    } catch (e) {
      setStatus({ tone: "error", text: errorMessage(e) });
    }
  };
  const remove = async (id: number) => {
    try {
      await removeCommandRule(id);
      setStatus({ tone: "ok", text: "Removed." });
      await reload(workspace);
    } catch (e) {
      setStatus({ tone: "error", text: errorMessage(e) });
    }
  };

  return (
    <section class="card" data-testid="command-rules-settings">
      <h2>Command rules</h2>
      <p class="muted">
        A command runs without asking when every part of it is a plain command an allow rule covers
        (<code>cargo test *</code> covers <code>cargo test -p core</code>, not <code>cargo test; rm x</code>). A deny
        rule refuses a command wherever it appears in it, and always wins.
      </p>
      {workspaces.length === 0 ? (
        <p class="muted">Start a session first: rules belong to a workspace folder.</p>
      ) : (
        <>
          <label class="field">
            Workspace
            <select data-testid="command-rules-workspace" value={workspace} onChange={(e) => setWorkspace((e.target as HTMLSelectElement).value)}>
              {workspaces.map((w) => (
                <option key={w} value={w}>
                  {w}
                </option>
              ))}
            </select>
          </label>
          {rules && rules.length === 0 && <p class="muted">No command rules in this workspace.</p>}
          {rules && rules.length > 0 && (
            <table class="policy" data-testid="command-rules-table">
              <tbody>
                {rules.map((r) => (
                  <tr key={r.id} data-testid="command-rule" data-kind={r.kind} data-rule={r.rule}>
                    <td>{r.kind}</td>
                    <td>
                      <code>{r.rule}</code>
                    </td>
                    <td class="muted">
                      by {ORIGIN[r.origin]}, {addedOn(r.created_at)}
                      {r.session_id !== null && ` (session ${r.session_id})`}
                    </td>
                    <td>
                      <button type="button" data-testid="command-rule-remove" onClick={() => remove(r.id)}>
                        Remove
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <div class="row">
            <select data-testid="command-rule-kind" aria-label="Allow or deny" value={kind} onChange={(e) => setKind((e.target as HTMLSelectElement).value as CommandRuleKind)}>
              <option value="allow">Allow</option>
              <option value="deny">Deny</option>
            </select>
            <input
              data-testid="command-rule-text"
              placeholder="cargo test *"
              value={text}
              onInput={(e) => setText((e.target as HTMLInputElement).value)}
              onKeyDown={(e) => e.key === "Enter" && void add()}
            />
            <button type="button" data-testid="command-rule-add" onClick={add}>
              Add rule
            </button>
          </div>
        </>
      )}
      <StatusLine status={status} testid="command-rules-status" />
    </section>
  );
}
