import { COLLAPSE_LINES, type ToolItem } from "../stream/items";
import { prettyJson } from "../../lib/format";
import { visible } from "../approvals/hidden";

const LABEL: Record<ToolItem["status"], string> = {
  planned: "planned",
  running: "running",
  waiting_approval: "waiting for approval",
  done: "done",
  failed: "failed",
  rejected: "rejected",
};

export function ToolCard({ item }: { item: ToolItem }) {
  const output = item.output ?? "";
  const long = output.split("\n").length > COLLAPSE_LINES || output.length > 2000;
  return (
    <div class={`tool-card status-${item.status}`} data-testid="tool-card" data-status={item.status} data-tool={item.name}>
      <div class="tool-head">
        <span class="tool-name">{visible(item.name)}</span>
        <span class={`badge ${item.status}`} data-testid="tool-status">
          {LABEL[item.status]}
        </span>
      </div>
      <details class="tool-args">
        <summary>arguments</summary>
        <pre>{visible(prettyJson(item.arguments))}</pre>
      </details>
      {output &&
        (long ? (
          <details class="tool-output">
            <summary>output ({output.split("\n").length} lines)</summary>
            <pre>{visible(output)}</pre>
          </details>
        ) : (
          <pre class="tool-output">{visible(output)}</pre>
        ))}
    </div>
  );
}
