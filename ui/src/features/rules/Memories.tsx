// Memories: listed, added, edited and deleted by the person; the agent's proposals arrive
// as approvals and appear here once accepted.
import { useState } from "preact/hooks";
import { addMemory, deleteMemory, editMemory, errorMessage, setMemoryAutoAccept } from "../../api/commands";
import type { Memory } from "../../api/generated/bindings";

type Props = {
  memories: Memory[];
  workspace: string;
  autoAccept: boolean;
  onChanged: () => void;
  onError: (e: string) => void;
};

export function Memories({ memories, workspace, autoAccept, onChanged, onError }: Props) {
  const [text, setText] = useState("");
  const [global, setGlobal] = useState(false);
  const run = async (f: () => Promise<unknown>) => {
    try {
      await f();
      onChanged();
    } catch (e) {
      onError(errorMessage(e));
    }
  };
  return (
    <section class="card" data-testid="memories">
      <h2>Memories</h2>
      <p class="muted">Notes given to the model on every run, as untrusted data. Kept here, never in the workspace.</p>
      <ul>
        {memories.map((m) => (
          <MemoryRow key={m.id} memory={m} run={run} />
        ))}
      </ul>
      {memories.length === 0 && <p class="muted" data-testid="no-memories">No memories.</p>}
      <div class="row">
        <input
          data-testid="memory-new"
          placeholder="A note to remember"
          value={text}
          onInput={(e) => setText((e.target as HTMLInputElement).value)}
        />
        <label>
          <input type="checkbox" checked={global} onChange={(e) => setGlobal((e.target as HTMLInputElement).checked)} />{" "}
          every workspace
        </label>
        <button
          type="button"
          data-testid="memory-add"
          disabled={!text.trim()}
          onClick={() =>
            void run(async () => {
              await addMemory(global ? "global" : "workspace", global ? null : workspace, text);
              setText("");
            })
          }
        >
          Add
        </button>
      </div>
      <label class="field-inline">
        <input
          type="checkbox"
          data-testid="memory-auto-accept"
          checked={autoAccept}
          onChange={(e) => void run(() => setMemoryAutoAccept((e.target as HTMLInputElement).checked))}
        />{" "}
        Keep memories the agent proposes without asking me
      </label>
    </section>
  );
}

function MemoryRow({ memory, run }: { memory: Memory; run: (f: () => Promise<unknown>) => Promise<void> }) {
  const [editing, setEditing] = useState<string | null>(null);
  return (
    <li data-testid="memory" data-memory-id={memory.id}>
      <span class="muted">[{memory.scope === "global" ? "global" : "this workspace"}]</span>{" "}
      {editing === null ? (
        <>
          <span data-testid="memory-text">{memory.text}</span>{" "}
          <button type="button" data-testid="memory-edit" onClick={() => setEditing(memory.text)}>
            Edit
          </button>{" "}
          <button type="button" class="danger" data-testid="memory-delete" onClick={() => void run(() => deleteMemory(memory.id))}>
            Delete
          </button>
        </>
      ) : (
        <>
          <input data-testid="memory-edit-text" value={editing} onInput={(e) => setEditing((e.target as HTMLInputElement).value)} />{" "}
          <button
            type="button"
            data-testid="memory-save"
            onClick={() =>
              void run(async () => {
                await editMemory(memory.id, editing);
                setEditing(null);
              })
            }
          >
            Save
          </button>{" "}
          <button type="button" onClick={() => setEditing(null)}>
            Cancel
          </button>
        </>
      )}
    </li>
  );
}
