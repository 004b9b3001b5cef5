// The session header, one row: the title (renamed in place), the folder, the model, a
// small context ring, and "⋯" for the rest. The ring opens the context's figures with
// Compact now and Fresh context; "⋯" opens the run's steps, tokens and cost, and the
// session's actions (Export, Instructions in effect, Delete). At 640×480 the row keeps
// its height and the transcript keeps the window.
import "./header.css";
import type { ContextUse, Session } from "../../api/generated/bindings";
import { basename } from "../../lib/format";
import { RunModel } from "../models/RunModel";
import { DeleteSession } from "../sessions/DeleteSession";
import { ContextMeter } from "../context/ContextMeter";
import { ContextRing } from "../context/ContextRing";
import { meterPercent, meterText } from "../context/meter";
import { CostBadge } from "./CostBadge";
import { ExportSession } from "./ExportSession";
import { HeadPopover } from "./HeadPopover";
import { RunMeter } from "./RunMeter";
import { TitleEditor } from "./TitleEditor";
import type { TaskView } from "./useSession";
import type { ComponentChildren } from "preact";

interface Props {
  sessionId: number;
  session: Session | undefined;
  /** The run the figures are of (the newest task), and the newest task for the cost. */
  current: TaskView | null;
  last: TaskView | null;
  costVersion: string;
  context: { use: ContextUse | null; error: string | null };
  busy: boolean;
  /** The session's run is paused: it waits for the person, and compacting is allowed. */
  paused: boolean;
  onRenamed: () => void;
  onContextChanged: () => void;
  /** The Stop button while a run is going or paused. */
  stop: ComponentChildren;
}

export function SessionHeader(p: Props) {
  const { sessionId, session, current, last, context, busy } = p;
  // The ring's visible text (the percent, or "…") starts its accessible name.
  const ringLabel = context.use
    ? `${meterPercent(context.use)}% of the context: ${meterText(context.use)}`
    : "… the context is being read";
  return (
    <header class="view-head one-row" data-testid="session-header">
      <div class="head-title">
        <TitleEditor sessionId={sessionId} title={session?.title ?? `Session ${sessionId}`} onRenamed={p.onRenamed} />
        {session && (
          <span class="head-folder muted" data-testid="head-folder" title={session.workspace}>
            {basename(session.workspace)}
          </span>
        )}
      </div>
      <RunModel taskId={current?.task.id ?? null} status={current?.task.status ?? null} />
      <HeadPopover name="context" label={ringLabel} button={<ContextRing use={context.use} />}>
        <ContextMeter sessionId={sessionId} use={context.use} error={context.error} busy={busy} paused={p.paused} onChanged={p.onContextChanged} />
      </HeadPopover>
      <HeadPopover name="details" label="Run figures and session actions" button={<span aria-hidden="true">⋯</span>}>
        <div class="head-figures" data-testid="head-meters">
          {current ? <RunMeter view={current} /> : <span class="muted">No run yet.</span>}
          <CostBadge taskId={last?.task.id ?? null} version={p.costVersion} />
        </div>
        <div class="head-actions">
          {session && <ExportSession sessionId={sessionId} />}
          <a class="link" href={`#/rules/${sessionId}`} data-testid="open-rules">
            Instructions in effect
          </a>
          {session && <DeleteSession session={session} />}
        </div>
        {session && (
          <div class="muted head-path" data-testid="head-path" title={session.workspace}>
            {session.workspace}
          </div>
        )}
      </HeadPopover>
      {p.stop}
    </header>
  );
}
