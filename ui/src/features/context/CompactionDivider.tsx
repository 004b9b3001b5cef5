// A compaction or a fresh context as a divider in the transcript (issue 13). The
// original messages stay above it; opened, it shows what the model sees instead of them:
// the summary, which entries it stands for, which tool outputs were cut to head and tail.
import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { ContextReset, Entry } from "../../api/generated/bindings";
import { textOf } from "../../api/json";
import { causeLabel, type CompactionMark } from "./marks";
import "./context.css";

/** The session's entries by id, for naming what a compaction stood for. */
export const EntriesContext = createContext<ReadonlyMap<number, Entry>>(new Map());

const fmt = new Intl.NumberFormat("en-US");
const EXCERPT = 90;

function excerpt(e: Entry | undefined, id: number): string {
  if (!e) return `entry ${id}`;
  const text = (textOf(e.content, "text") ?? "").replace(/\s+/g, " ").trim();
  const who = e.kind === "user" ? "you" : e.kind === "assistant" ? "agent" : e.kind === "tool_result" ? "tool output" : e.kind;
  const short = text.length > EXCERPT ? `${text.slice(0, EXCERPT)}…` : text;
  return `${who}: ${short || "(no text)"}`;
}

function EntryList({ ids, testid }: { ids: number[]; testid: string }) {
  const entries = useContext(EntriesContext);
  return (
    <ul class="compaction-entries" data-testid={testid}>
      {ids.map((id) => (
        <li key={id} data-entry-id={id}>
          {excerpt(entries.get(id), id)}
        </li>
      ))}
    </ul>
  );
}

export function CompactionDivider({ mark }: { mark: CompactionMark }) {
  const tokens =
    mark.tokensBefore !== null && mark.tokensAfter !== null
      ? `${fmt.format(mark.tokensBefore)} → ${fmt.format(mark.tokensAfter)} tokens`
      : "";
  const what = [
    mark.summarised.length > 0 ? `${mark.summarised.length} summarised` : "",
    mark.elided.length > 0 ? `${mark.elided.length} tool output${mark.elided.length === 1 ? "" : "s"} cut` : "",
    mark.instructionsElided.length > 0 ? `${mark.instructionsElided.length} of your messages cut` : "",
  ].filter(Boolean);
  return (
    <details class="context-divider compaction" data-testid="compaction-divider" data-cause={mark.cause ?? ""}>
      <summary>
        <span class="divider-label">Context compacted</span>
        {tokens && <span data-testid="compaction-tokens"> · {tokens}</span>}
        {what.length > 0 && <span> · {what.join(", ")}</span>}
      </summary>
      <div class="divider-body" data-testid="compaction-details">
        <p class="muted">Why: {causeLabel(mark.cause)}. The messages above stay as they were; the model sees this instead of them.</p>
        {mark.summary !== null && (
          <>
            <div class="effect-label">{mark.fallback ? "Marker (the summary call failed)" : "Summary the model sees"}</div>
            <pre data-testid="compaction-summary">{mark.summary}</pre>
          </>
        )}
        {mark.summarised.length > 0 && (
          <>
            <div class="effect-label">Summarised</div>
            <EntryList ids={mark.summarised} testid="compaction-summarised" />
          </>
        )}
        {mark.elided.length > 0 && (
          <>
            <div class="effect-label">Tool output cut to head and tail (read the file or run the command again to see it all)</div>
            <EntryList ids={mark.elided} testid="compaction-elided" />
          </>
        )}
        {mark.instructionsElided.length > 0 && (
          <>
            <div class="effect-label">Your oldest messages, replaced by a marker (they alone exceeded the window)</div>
            <EntryList ids={mark.instructionsElided} testid="compaction-instructions-elided" />
          </>
        )}
      </div>
    </details>
  );
}

export function ResetDivider({ reset }: { reset: ContextReset }) {
  return (
    <div class="context-divider reset" data-testid="reset-divider" data-entry-id={reset.entry_id}>
      <span class="divider-label">Fresh context</span>
      <span class="muted"> · the model sees nothing above this line{reset.text ? `; it starts from: ${reset.text}` : ""}</span>
    </div>
  );
}
