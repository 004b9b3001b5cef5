// The window's one store of what several views show: the sessions, the pending approvals
// and the inboxes of the sessions on screen. It is fed by the runtime's change feed
// (`follow_changes`): a change says *what* changed, and the store re-reads just that with
// the command it already has. Nothing here polls: without a change nothing is read. (The
// runtime itself looks at the store every ~750 ms for another process's commits, e.g. the
// CLI, and pushes `refresh`.)
//
// Re-reads coalesce: while one of a kind is in flight, further changes mark it stale and
// one more read runs when it returns, so a burst of changes costs two reads, not N, and
// the newest answer is the one kept.
import type { Approval, Change, EventKind, Session, Submission } from "../api/generated/bindings";
import { isTerminalEvent } from "../features/stream/terminal";

/** What a session's run is doing, as the sidebar marks it. */
export type Activity = "busy" | "waiting";

/** The activity a task change leaves its session in; null: the run ended. */
export function activityAfter(event: EventKind): Activity | null {
  // A pause (a budget, the repetition guard) waits for the person as an approval does.
  if (event === "approval_required" || event === "run_paused") return "waiting";
  if (isTerminalEvent(event)) return null;
  return "busy";
}

/** Where the store reads from and how it follows changes (commands.ts in the app). */
export interface Source {
  follow(onChange: (change: Change) => void): Promise<() => void>;
  sessions(): Promise<Session[]>;
  approvals(): Promise<Approval[]>;
  inbox(sessionId: number): Promise<Submission[]>;
  describe(e: unknown): string;
}

export interface Snapshot {
  sessions: Session[];
  approvals: Approval[];
  /** Queued submissions of each watched session, oldest first. */
  inboxes: ReadonlyMap<number, Submission[]>;
  /** Sessions whose run this window saw start and not yet end (from the feed). */
  activity: ReadonlyMap<number, Activity>;
  /** True once the sessions and approvals were read the first time. */
  loaded: boolean;
  error: string | null;
}

type Reader = { run: () => Promise<void> };

/** One re-read of a kind at a time; a change during it schedules exactly one more. */
function reader(read: () => Promise<void>): Reader {
  let running: Promise<void> | null = null;
  let stale = false;
  const run = (): Promise<void> => {
    if (running) {
      stale = true;
      return running;
    }
    running = (async () => {
      do {
        stale = false;
        await read();
      } while (stale);
    })().finally(() => {
      running = null;
    });
    return running;
  };
  return { run };
}

export class SessionStore {
  private snap: Snapshot = {
    sessions: [],
    approvals: [],
    inboxes: new Map(),
    activity: new Map(),
    loaded: false,
    error: null,
  };
  private listeners = new Set<() => void>();
  private changeListeners = new Set<(c: Change) => void>();
  private watched = new Map<number, { count: number; reader: Reader }>();
  private stop: (() => void) | null = null;
  private readonly lists: Reader;

  constructor(private readonly source: Source) {
    this.lists = reader(async () => {
      try {
        const [sessions, approvals] = await Promise.all([source.sessions(), source.approvals()]);
        this.set({ sessions, approvals, loaded: true, error: null });
      } catch (e) {
        this.set({ loaded: true, error: source.describe(e) });
      }
    });
  }

  /** Starts following the feed, then reads everything once. */
  async start(): Promise<void> {
    if (this.stop) return;
    this.stop = () => {};
    try {
      this.stop = await this.source.follow((c) => this.apply(c));
    } catch (e) {
      this.set({ error: this.source.describe(e) });
    }
    await this.refreshAll();
  }

  dispose() {
    this.stop?.();
    this.stop = null;
  }

  get snapshot(): Snapshot {
    return this.snap;
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Every change as it arrives, for views that re-read their own data (a session's history). */
  onChange(listener: (c: Change) => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  /** Keeps a session's inbox current while a view shows it. */
  watchInbox(sessionId: number): () => void {
    let w = this.watched.get(sessionId);
    if (!w) {
      w = { count: 0, reader: reader(() => this.readInbox(sessionId)) };
      this.watched.set(sessionId, w);
    }
    w.count += 1;
    void w.reader.run();
    return () => {
      const cur = this.watched.get(sessionId);
      if (!cur) return;
      cur.count -= 1;
      if (cur.count === 0) {
        this.watched.delete(sessionId);
        const inboxes = new Map(this.snap.inboxes);
        inboxes.delete(sessionId);
        this.set({ inboxes });
      }
    };
  }

  /** Re-reads the sessions and approvals now (after this window changed them itself). */
  reloadLists(): Promise<void> {
    return this.lists.run();
  }

  /** Re-reads a watched session's inbox now. */
  reloadInbox(sessionId: number): Promise<void> {
    return this.watched.get(sessionId)?.reader.run() ?? Promise.resolve();
  }

  apply(change: Change): void {
    switch (change.kind) {
      case "task":
        if (change.session_id !== null) this.markActivity(change.session_id, activityAfter(change.event));
        void this.lists.run();
        // A run that starts or ends places items of its session's inbox.
        if (change.session_id === null) this.reloadInboxes();
        else void this.reloadInbox(change.session_id);
        break;
      case "inbox":
        void this.reloadInbox(change.session_id);
        break;
      case "approvals":
        void this.lists.run();
        break;
      case "triggers":
        break;
      case "session_deleted":
        // Gone at once from the list (and its inbox), then the list is read again.
        this.set({ sessions: this.snap.sessions.filter((s) => s.id !== change.session_id) });
        void this.lists.run();
        break;
      case "refresh":
        void this.refreshAll();
        break;
    }
    for (const l of this.changeListeners) l(change);
  }

  private markActivity(sessionId: number, a: Activity | null) {
    if (this.snap.activity.get(sessionId) === (a ?? undefined)) return;
    const activity = new Map(this.snap.activity);
    if (a === null) activity.delete(sessionId);
    else activity.set(sessionId, a);
    this.set({ activity });
  }

  private refreshAll(): Promise<void> {
    this.reloadInboxes();
    return this.lists.run();
  }

  private reloadInboxes() {
    for (const w of this.watched.values()) void w.reader.run();
  }

  private async readInbox(sessionId: number) {
    try {
      const items = await this.source.inbox(sessionId);
      if (!this.watched.has(sessionId)) return;
      const inboxes = new Map(this.snap.inboxes);
      inboxes.set(sessionId, items);
      this.set({ inboxes, error: null });
    } catch (e) {
      this.set({ error: this.source.describe(e) });
    }
  }

  private set(patch: Partial<Snapshot>) {
    this.snap = { ...this.snap, ...patch };
    for (const l of this.listeners) l();
  }
}
