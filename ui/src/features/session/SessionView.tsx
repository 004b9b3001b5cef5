import { useEffect, useRef, useState } from "preact/hooks";
import { cancelTask, createTask, errorMessage } from "../../api/commands";
import type { Session } from "../../api/types";
import { ApprovalDialog } from "../approvals/ApprovalDialog";
import { Composer } from "./Composer";
import { Transcript } from "./Transcript";
import { useSession } from "./useSession";

interface Props {
  session: Session | undefined;
  sessionId: number;
  onChanged: () => void;
}

export function SessionView({ session, sessionId, onChanged }: Props) {
  const s = useSession(sessionId);
  const [actionError, setActionError] = useState<string | null>(null);
  const bottom = useRef<HTMLDivElement>(null);
  const last = s.views[s.views.length - 1];
  const tail = `${s.views.length}:${last?.items.length ?? 0}:${last?.streaming?.length ?? 0}`;
  useEffect(() => bottom.current?.scrollIntoView({ block: "end" }), [tail]);

  const send = async (goal: string) => {
    setActionError(null);
    try {
      const id = await createTask(goal, { sessionId });
      s.watch(id);
      await s.refresh();
      onChanged();
    } catch (e) {
      setActionError(errorMessage(e));
    }
  };
  const stop = async () => {
    if (s.busyTask === null) return;
    try {
      await cancelTask(s.busyTask);
    } catch (e) {
      setActionError(errorMessage(e));
    }
  };

  return (
    <main class="session-view" data-testid="session-view" data-session-id={sessionId}>
      <header class="view-head">
        <div>
          <h1 data-testid="session-title">{session?.title ?? `Session ${sessionId}`}</h1>
          {session && <div class="muted workspace" title="workspace">{session.workspace}</div>}
        </div>
        {s.busyTask !== null && (
          <button type="button" class="danger" data-testid="stop" onClick={stop}>
            Stop
          </button>
        )}
      </header>
      {(s.error || actionError) && <div class="notice error" role="alert">{s.error ?? actionError}</div>}
      <div class="scroll">
        {s.loaded && s.views.length === 0 && <p class="muted">No tasks in this session yet.</p>}
        <Transcript views={s.views} />
        <div ref={bottom} />
      </div>
      <Composer
        onSend={send}
        disabled={s.busyTask !== null}
        hint={s.busyTask !== null ? "The agent is working — wait for it to finish or press Stop." : undefined}
      />
      {s.approval && <ApprovalDialog
          approval={s.approval}
          onDone={() => {
            void s.refresh();
            onChanged();
          }}
        />}
    </main>
  );
}
