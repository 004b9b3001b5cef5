import { memo } from "preact/compat";
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import {
  cancelTask,
  errorMessage,
  resolveApproval,
  say,
  sessionPlanMode,
  setSessionPlanMode,
  stopTask,
} from "../../api/commands";
import type { Session, WhenBusy } from "../../api/generated/bindings";
import { navigate, useRoute } from "../../lib/route";
import { useShortcut } from "../../lib/shortcuts";
import { ComposerContext, type ComposerActions } from "./composerDraft";
import { itemKeyOf } from "./found";
import { useSnapshot } from "../../store/useStore";
import { ActionsContext, type TranscriptActions } from "./Notice";
import { ApprovalDialog } from "../approvals/ApprovalDialog";
import { CardApprovalContext, type ApprovalStep, type CardApproval } from "../approvals/cardApproval";
import { PausedCard } from "./PausedCard";
import { SessionHeader } from "./SessionHeader";
import { PlanCard, usePlans } from "../plan/PlanCard";
import { stopLabel } from "./paused";
import { Composer } from "./Composer";
import { Inbox } from "./Inbox";
import { useInbox } from "./useInbox";
import { Transcript } from "./Transcript";
import { useSession } from "./useSession";
import { useChanges } from "../../store/useStore";
import { EntriesContext } from "../context/CompactionDivider";
import { placeMarks } from "../context/marks";
import { contextRevision } from "../context/meter";
import { useContextState } from "../context/useContextState";
import { useTaskChanges } from "../changes/useTaskChanges";

interface Props {
  session: Session | undefined;
  sessionId: number;
  onChanged: () => void;
  /** Why nothing can be sent yet (no model set up), or null. */
  blocked?: string | null;
}

// Neither changes while an answer streams: skipped when the view re-renders per frame.
const MemoInbox = memo(Inbox);
const MemoComposer = memo(Composer);

export function SessionView({ session, sessionId, onChanged, blocked = null }: Props) {
  const s = useSession(sessionId);
  const { approvals } = useSnapshot();
  // The approval the person closed with Esc: it stays pending, the dialog stays away.
  const [dismissed, setDismissed] = useState<number | null>(null);
  const [step, setStep] = useState<ApprovalStep>("ask");
  const busy = s.busyTask !== null;
  const inbox = useInbox(sessionId, () => void s.refresh());
  const changes = useTaskChanges(sessionId);
  // A run of this session started, waited or ended (here or in another process): re-read
  // its history, which also follows a run it did not know of.
  useChanges(
    (c) => {
      if ((c.kind === "task" && (c.session_id === sessionId || c.session_id === null)) || c.kind === "refresh") {
        void s.refresh();
      }
    },
    [sessionId, s.refresh],
  );
  const [actionError, setActionError] = useState<string | null>(null);
  // issue 13: the context meter and the dividers between tasks.
  const ctx = useContextState(sessionId, contextRevision(s.views));
  const taskIds = s.views.map((v) => v.task.id).join(",");
  const placed = useMemo(() => placeMarks(s.views.map((v) => v.task.id), ctx.marks), [taskIds, ctx.marks]);
  const entriesById = useMemo(() => new Map(s.entries.map((e) => [e.id, e])), [s.entries]);
  const afterContextAction = () => {
    void ctx.reload();
    void s.refresh();
  };
  const scroller = useRef<HTMLDivElement>(null);
  const last = s.views[s.views.length - 1];
  const paused = s.views.find((v) => v.task.status === "paused")?.task ?? null;
  // Also when the newest task is handed from its live run to the store's history (its
  // actions come): a view at the end stays there.
  const tail = `${s.views.length}:${last?.items.length ?? 0}:${last?.streaming?.length ?? 0}:${last?.live ?? ""}`;
  const leaveBottom = useStickToBottom(scroller, tail);
  // Plan mode: the session's newest plan, read again as the transcript moves (a step ticked
  // comes with its tool call), and the composer's toggle (the session's setting).
  const plans = usePlans(sessionId, `${tail}:${last?.task.status ?? ""}`);
  const [planMode, setPlanMode] = useState(false);
  useEffect(() => {
    let live = true;
    sessionPlanMode(sessionId)
      .then((on) => live && setPlanMode(on))
      .catch(() => {
        // Unknown: the toggle shows off until the person sets it.
      });
    return () => {
      live = false;
    };
  }, [sessionId]);
  const onPlanMode = useCallback(
    (on: boolean) => {
      setPlanMode(on);
      setSessionPlanMode(sessionId, on).catch((e) => setActionError(errorMessage(e)));
    },
    [sessionId],
  );
  useScrollToFound(s, scroller, leaveBottom);

  // The latest closures, behind stable callbacks (so the memoised children stay skipped).
  const latest = useRef({
    send: (_t: string, _w: WhenBusy) => Promise.resolve(),
    withdraw: (_id: number) => {},
    stop: () => Promise.resolve(),
  });
  const onSend = useCallback((text: string, whenBusy: WhenBusy) => latest.current.send(text, whenBusy), []);
  const onWithdraw = useCallback((id: number) => latest.current.withdraw(id), []);

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
  latest.current = { send, withdraw: (id) => void inbox.withdraw(id), stop: () => stop() };
  // Edit and send again puts a message in the box; Regenerate sends it at once.
  const [draft, setDraft] = useState<{ text: string; n: number } | null>(null);
  const composerActions = useMemo<ComposerActions>(
    () => ({
      put: (text) => setDraft((d) => ({ text, n: (d?.n ?? 0) + 1 })),
      send: (text) => latest.current.send(text, "followUp"),
    }),
    [],
  );
  const actions = useRef<TranscriptActions>({
    retry: (text) => latest.current.send(text, "followUp"),
    openSettings: () => navigate({ name: "settings" }),
  }).current;
  // Older tasks go in above: the person keeps seeing what they were reading.
  const showEarlier = async () => {
    const el = scroller.current;
    const fromEnd = el ? el.scrollHeight - el.scrollTop : 0;
    await s.showEarlier();
    requestAnimationFrame(() => {
      if (!el) return;
      // The person is reading older tasks: new text below must not pull the view down.
      leaveBottom();
      el.scrollTop = el.scrollHeight - fromEnd;
    });
  };
  const onStop = useCallback(() => void latest.current.stop(), []);
  // Ctrl+Shift+Backspace (lib/shortcuts.ts): as the Stop button, when there is a run.
  useShortcut("stop", onStop);
  const stop = async () => {
    if (s.busyTask === null) return;
    try {
      // A paused run is stopped as its card stops it (ended for its budget).
      if (paused && paused.id === s.busyTask) {
        await stopTask(paused.id);
        void s.refresh();
        onChanged();
      } else await cancelTask(s.busyTask);
    } catch (e) {
      setActionError(errorMessage(e));
    }
  };

  const current = s.views[s.views.length - 1];
  const approval = s.approval && s.approval.approvalId !== dismissed ? s.approval : null;
  const pending = s.approval;
  // The same answers from the waiting call's card (cardApproval.tsx).
  const cardApproval = useMemo<CardApproval | null>(
    () =>
      pending && {
        callId: pending.callId,
        approve: async () => {
          try {
            await resolveApproval(pending.approvalId, {
              approve: true,
              edited_arguments: null,
              session_grant: false,
              note: null,
            });
            void s.refresh();
            onChanged();
          } catch (e) {
            setActionError(errorMessage(e));
          }
        },
        review: (step) => {
          setStep(step);
          setDismissed(null);
        },
      },
    [pending?.approvalId],
  );
  const othersWaiting = approvals.filter((a) => a.id !== s.approval?.approvalId);
  return (
    <main
      class="session-view"
      data-testid="session-view"
      data-session-id={sessionId}
      // Loaded: the transcript and the context meter have had their first answers.
      data-loaded={s.loaded && (ctx.use !== null || ctx.error !== null) ? "true" : "false"}
    >
      <SessionHeader
        sessionId={sessionId}
        session={session}
        current={current ?? null}
        last={last ?? null}
        costVersion={`${last?.task.status}:${last?.task.step_count}:${s.views.length}`}
        context={ctx}
        busy={busy}
        paused={paused !== null && paused.id === s.busyTask}
        onRenamed={onChanged}
        onContextChanged={afterContextAction}
        stop={
          s.busyTask !== null && (
            <button type="button" class="danger" data-testid="stop" data-paused={paused ? "true" : "false"} onClick={stop}>
              {stopLabel(paused ? "paused" : "working")}
            </button>
          )
        }
      />
      {(s.error || actionError || inbox.error) && (
        <div class="notice error" role="alert">{s.error ?? actionError ?? inbox.error}</div>
      )}
      {s.approval && !approval && (
        <div class="notice info approval-waiting" data-testid="approval-waiting">
          An approval is waiting for you.{" "}
          <button type="button" class="link" data-testid="reopen-approval" onClick={() => setDismissed(null)}>
            Review it
          </button>
        </div>
      )}
      <div class="scroll" ref={scroller}>
        {s.earlier && (
          <button type="button" class="link earlier" data-testid="show-earlier" onClick={showEarlier}>
            Show earlier tasks
          </button>
        )}
        {s.loaded && s.views.length === 0 && <p class="muted">No tasks in this session yet.</p>}
        <EntriesContext.Provider value={entriesById}>
          <ActionsContext.Provider value={actions}>
            <CardApprovalContext.Provider value={cardApproval}>
              <ComposerContext.Provider value={composerActions}>
                <Transcript views={s.views} marks={placed} changes={changes.byTask} />
              </ComposerContext.Provider>
            </CardApprovalContext.Provider>
          </ActionsContext.Provider>
        </EntriesContext.Provider>
      </div>
      {paused && (
        <PausedCard
          key={paused.id}
          task={paused}
          onDone={() => {
            void s.refresh();
            onChanged();
          }}
        />
      )}
      {plans.plan && (
        <PlanCard
          key={`${plans.plan.id}:${plans.plan.status}`}
          plan={plans.plan}
          onDecided={(run) => {
            if (run !== null) s.watch(run);
            plans.reload();
            void s.refresh();
            onChanged();
          }}
        />
      )}
      <MemoInbox items={inbox.items} onWithdraw={onWithdraw} />
      <MemoComposer
        onSend={onSend}
        draft={draft}
        busy={busy}
        paused={paused !== null}
        blocked={blocked}
        onStop={onStop}
        planMode={planMode}
        onPlanMode={onPlanMode}
      />
      {approval && (
        <ApprovalDialog
          key={`${approval.approvalId}:${step}`}
          approval={approval}
          waiting={othersWaiting}
          step={step}
          onClose={() => {
            setDismissed(approval.approvalId);
            setStep("ask");
            // Back to the card it waits on, whose buttons answer it too; nothing covers
            // the transcript.
            requestAnimationFrame(() =>
              document
                .querySelector<HTMLElement>(`[data-testid=tool-card][data-call-id="${CSS.escape(approval.callId)}"] [data-testid=card-approve]`)
                ?.focus(),
            );
          }}
          onDone={() => {
            void s.refresh();
            onChanged();
          }}
        />
      )}
    </main>
  );
}

/**
 * Opened from a search hit (`#/session/ID/entry/E`): scrolls to the item showing entry E
 * and marks it, loading older tasks until it is there. The view stays there (it no longer
 * follows the end) until the person scrolls back down.
 */
function useScrollToFound(
  s: ReturnType<typeof useSession>,
  scroller: { current: HTMLElement | null },
  leaveBottom: () => void,
) {
  const route = useRoute();
  const entry = route.name === "session" ? route.entry : undefined;
  const done = useRef<number | null>(null);
  useEffect(() => {
    if (entry === undefined || !s.loaded || done.current === entry) return;
    const key = itemKeyOf(s.entries, entry);
    if (key === null) {
      if (s.earlier) void s.showEarlier();
      else done.current = entry;
      return;
    }
    const anchor = scroller.current?.querySelector<HTMLElement>(`[data-item-key="${CSS.escape(key)}"]`);
    if (!anchor) return;
    done.current = entry;
    leaveBottom();
    scroller.current?.querySelectorAll(".item-anchor.found").forEach((el) => el.classList.remove("found"));
    anchor.classList.add("found");
    (anchor.firstElementChild as HTMLElement | null)?.scrollIntoView({ block: "center" });
  }, [entry, s.loaded, s.entries, s.earlier]);
}

/** Within this many pixels of the end, the view counts as "at the bottom". */
const STICK_PX = 48;

/**
 * Keeps the transcript scrolled to its end as it grows, but only while the person has not
 * scrolled up to read: the position is checked on their scrolls, and the view is moved at
 * most once per frame, however many renders that frame had.
 */
function useStickToBottom(ref: { current: HTMLElement | null }, tail: string): () => void {
  const atBottom = useRef(true);
  // Where this hook last put the view: a scroll event for that move (which may arrive
  // after more text was added below) is not the person scrolling away.
  const placed = useRef(-1);
  const pending = useRef<number | null>(null);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const onScroll = () => {
      atBottom.current =
        el.scrollTop >= placed.current - 1 || el.scrollHeight - el.scrollTop - el.clientHeight <= STICK_PX;
    };
    el.addEventListener("scroll", onScroll, { passive: true });
    return () => {
      el.removeEventListener("scroll", onScroll);
      if (pending.current !== null) cancelAnimationFrame(pending.current);
    };
  }, []);
  useLayoutEffect(() => {
    if (!atBottom.current || pending.current !== null) return;
    pending.current = requestAnimationFrame(() => {
      pending.current = null;
      const el = ref.current;
      if (!el || !atBottom.current) return;
      el.scrollTop = el.scrollHeight;
      placed.current = el.scrollTop;
    });
  }, [tail]);
  // For a move that is the person's, not this hook's (content inserted above them): until
  // they scroll back to the end, the view stays where they are.
  return useCallback(() => {
    atBottom.current = false;
    placed.current = Number.POSITIVE_INFINITY;
  }, []);
}

/** Identifies one send, so that a retried or double send is taken once. */
function requestId(): string {
  const c = globalThis.crypto;
  if (c && typeof c.randomUUID === "function") return c.randomUUID();
  return `${Date.now()}-${Math.random().toString(36).slice(2)}`;
}
