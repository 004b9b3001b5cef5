// The instruction files in effect, root first and nearest last (the later one wins).
import type { InstructionFile } from "../../api/generated/bindings";

export function Instructions({ files }: { files: InstructionFile[] }) {
  return (
    <section class="card" data-testid="instructions">
      <h2>Instructions in effect</h2>
      <p class="muted">
        AGENTS.md of the workspace and of the folders the agent worked in, root first and nearest last: where they
        disagree, the nearer one wins. They shape how the agent works, never its tools, permissions or approvals.
      </p>
      {files.length === 0 ? (
        <p class="muted" data-testid="no-instructions">No AGENTS.md applies.</p>
      ) : (
        <ul>
          {files.map((f) => (
            <li key={f.path} data-testid="instruction-file" data-path={f.path}>
              <code>{f.path}</code> <span class="muted">{f.bytes} bytes{f.truncated ? ", cut at the size cap" : ""}</span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
