import { useEffect, useRef, useState } from "preact/hooks";
import { cancelTask, errorMessage, say } from "../../api/commands";
import type { Session, WhenBusy } from "../../api/types";
import { ApprovalDialog } from "../approvals/ApprovalDialog";
import { Composer } from "./Composer";
import { Inbox } from "./Inbox";
import { useInbox } from "./useInbox";
import { Transcript } from "./Transcript";
import { useSession } from "./useSession";

interface Props {
  session: Session | undefined;
  sessionId: number;
  onChanged: () => void;
}

export function SessionView({ session, sessionId, onChanged }: Props) {
  const s = useSession(sessionId);
  const busy = s.busyTask !== null;
  const inbox = useInbox(sessionId, busy, () => void s.refresh());
  const [actionError, setActionError] = useState<string | null>(null);
  const bottom = useRef<HTMLDivElement>(null);
  const last = s.views[s.views.length - 1];
  const tail = `${s.views.length}:${last?.items.length ?? 0}:${last?.streaming?.length ?? 0}`;
  useEffect(() => bottom.current?.scrollIntoView({ block: "end" }), [tail]);

  const send = async (text: string, whenBusy: WhenBusy) => {
    setActionError(null);
    try {
      const admitted = await say(sessionId, text, whenBusy, requestId());
      if (admitted.started !== null) {
        s.watch(admitted.started);
        await s.refresh();
        onChanged();
      }
      await inbox.reload();
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
      {(s.error || actionError || inbox.error) && (
        <div class="notice error" role="alert">{s.error ?? actionError ?? inbox.error}</div>
      )}
      <div class="scroll">
        {s.loaded && s.views.length === 0 && <p class="muted">No tasks in this session yet.</p>}
        <Transcript views={s.views} />
        <div ref={bottom} />
      </div>
      <Inbox items={inbox.items} onWithdraw={(id) => void inbox.withdraw(id)} />
      <Composer onSend={send} busy={busy} />
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

/** Identifies one send, so that a retried or double send is taken once. */
function requestId(): string {
  const c = globalThis.crypto;
  if (c && typeof c.randomUUID === "function") return c.randomUUID();
  return `${Date.now()}-${Math.random().toString(36).slice(2)}`;
}
