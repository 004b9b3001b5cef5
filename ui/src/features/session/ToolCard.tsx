import { useEffect, useState } from "preact/hooks";
import { Inline } from "../approvals/inline";
import { COLLAPSE_LINES, type ToolItem } from "../stream/items";
import { prettyJson } from "../../lib/format";
import { visible } from "../approvals/hidden";
import { CardApprovalButtons } from "../approvals/cardApproval";

const LABEL: Record<ToolItem["status"], string> = {
  planned: "planned",
  running: "running",
  waiting_approval: "waiting for approval",
  done: "done",
  failed: "failed",
  rejected: "rejected",
};

/** The argument a person recognises a call by: its path, command, URL or pattern. */
const SUBJECT_KEYS = ["command", "path", "url", "pattern", "query", "name"] as const;

export function subjectOf(rawArgs: string): string | null {
  let args: unknown;
  try {
    args = JSON.parse(rawArgs);
  } catch {
    return null;
  }
  if (!args || typeof args !== "object" || Array.isArray(args)) return null;
  const obj = args as Record<string, unknown>;
  for (const k of SUBJECT_KEYS) {
    const v = obj[k];
    if (typeof v === "string" && v) return v;
    if (Array.isArray(v) && v.every((x) => typeof x === "string") && v.length) return v.join(" ");
  }
  return null;
}

/** Seconds since `since`, ticking once a second while shown. */
function Elapsed({ since }: { since: string | undefined }) {
  const start = since ? Date.parse(since) : NaN;
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  const from = Number.isNaN(start) ? now : start;
  const s = Math.max(0, Math.floor((now - from) / 1000));
  const text = s < 60 ? `${s}s` : `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
  return <span class="elapsed" data-testid="tool-elapsed">{text}</span>;
}

function diffClass(line: string): string {
  if (line.startsWith("+++") || line.startsWith("---")) return "diff-file";
  if (line.startsWith("+")) return "diff-add";
  if (line.startsWith("-")) return "diff-del";
  if (line.startsWith("@@")) return "diff-hunk";
  return "";
}

export function ToolCard({ item }: { item: ToolItem }) {
  const output = item.output ?? "";
  const long = output.split("\n").length > COLLAPSE_LINES || output.length > 2000;
  const subject = subjectOf(item.arguments);
  return (
    <div
      class={`tool-card status-${item.status}`}
      data-testid="tool-card"
      data-status={item.status}
      data-tool={item.name}
      data-call-id={item.callId}
    >
      <div class="tool-head">
        <span class="tool-title">
          <span class="tool-name">{visible(item.name)}</span>
          {subject && (
            <code class="tool-subject" data-testid="tool-subject" title={visible(subject)}>
              {visible(subject)}
            </code>
          )}
        </span>
        <span class="tool-state">
          {item.status === "running" && (
            <>
              <span class="spinner" aria-hidden="true" data-testid="tool-spinner" />
              <Elapsed since={item.startedAt} />
            </>
          )}
          <span class={`badge ${item.status}`} data-testid="tool-status">
            {LABEL[item.status]}
          </span>
        </span>
      </div>
      {item.allowedBy && (
        <div class="muted tool-rule" data-testid="tool-allowed-by">
          <Inline text={`allowed by rule ${item.allowedBy}`} />
        </div>
      )}
      {item.diff && (
        <details class="tool-diff" open data-testid="tool-diff">
          <summary>changes</summary>
          <pre class="diff">
            {item.diff.split("\n").map((line, i) => (
              <span key={i} class={diffClass(line)}>
                {visible(line)}
                {"\n"}
              </span>
            ))}
          </pre>
        </details>
      )}
      {item.status === "waiting_approval" && <CardApprovalButtons callId={item.callId} />}
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
