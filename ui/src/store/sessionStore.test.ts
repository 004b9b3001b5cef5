import { describe, expect, it } from "vitest";
import type { Approval, Change, Session, Submission } from "../api/generated/bindings";
import { SessionStore, activityAfter, type Source } from "./sessionStore";

/** A runtime stand-in: lists the test edits, a feed the test pushes, and a count of reads. */
function fakeRuntime() {
  const state = {
    sessions: [] as Session[],
    approvals: [] as Approval[],
    inboxes: new Map<number, Submission[]>(),
  };
  const reads = { sessions: 0, approvals: 0, inbox: 0 };
  let push: ((c: Change) => void) | null = null;
  // Reads resolve when the test lets them, to show coalescing.
  let gate: Promise<void> = Promise.resolve();
  const source: Source = {
    follow: async (onChange) => {
      push = onChange;
      return () => {
        push = null;
      };
    },
    sessions: async () => {
      reads.sessions++;
      await gate;
      return [...state.sessions];
    },
    approvals: async () => {
      reads.approvals++;
      await gate;
      return [...state.approvals];
    },
    inbox: async (id) => {
      reads.inbox++;
      await gate;
      return [...(state.inboxes.get(id) ?? [])];
    },
    describe: (e) => String(e),
  };
  return {
    state,
    reads,
    source,
    push: (c: Change) => push?.(c),
    following: () => push !== null,
    hold: () => {
      let open!: () => void;
      gate = new Promise((r) => (open = r));
      return () => {
        gate = Promise.resolve();
        open();
      };
    },
  };
}

const settle = () => new Promise((r) => setTimeout(r, 0));

function session(id: number, title: string): Session {
  return {
    id,
    title,
    workspace: "/w",
    steering_mode: "one-at-a-time",
    follow_up_mode: "one-at-a-time",
    last_failure: null,
    created_at: "",
    updated_at: "",
  };
}

function queued(id: number, sessionId: number, text: string): Submission {
  return {
    id,
    session_id: sessionId,
    kind: "input",
    mode: "followUp",
    status: "queued",
    reason: null,
    request_id: null,
    content: { text },
    task_id: null,
    entry_id: null,
    answer_id: null,
    created_at: "",
  };
}

describe("the session store", () => {
  it("reads once at start and then only when the feed says something changed", async () => {
    const rt = fakeRuntime();
    rt.state.sessions = [session(1, "one")];
    const store = new SessionStore(rt.source);
    await store.start();
    expect(rt.following()).toBe(true);
    expect(store.snapshot.loaded).toBe(true);
    expect(store.snapshot.sessions.map((s) => s.title)).toEqual(["one"]);

    // Nothing pushed: nothing read, however long the window stays open.
    const before = { ...rt.reads };
    await settle();
    expect(rt.reads).toEqual(before);

    rt.state.sessions = [session(2, "two"), session(1, "one")];
    rt.push({ kind: "task", task_id: 9, session_id: 2, event: "task_created" });
    await settle();
    expect(store.snapshot.sessions.map((s) => s.title)).toEqual(["two", "one"]);
  });

  it("drops a deleted session at once, then reads the list again", async () => {
    const rt = fakeRuntime();
    rt.state.sessions = [session(1, "one"), session(2, "two")];
    const store = new SessionStore(rt.source);
    await store.start();
    const reads = rt.reads.sessions;
    const open = rt.hold();
    rt.state.sessions = [session(2, "two")];
    rt.push({ kind: "session_deleted", session_id: 1 });
    // Before the re-read answers, the list no longer shows it.
    expect(store.snapshot.sessions.map((s) => s.title)).toEqual(["two"]);
    open();
    await settle();
    expect(rt.reads.sessions).toBe(reads + 1);
    expect(store.snapshot.sessions.map((s) => s.title)).toEqual(["two"]);
  });

  it("keeps a watched inbox current from inbox changes and ignores other sessions'", async () => {
    const rt = fakeRuntime();
    const store = new SessionStore(rt.source);
    await store.start();
    const unwatch = store.watchInbox(1);
    await settle();
    expect(store.snapshot.inboxes.get(1)).toEqual([]);

    rt.state.inboxes.set(1, [queued(5, 1, "later")]);
    rt.push({ kind: "inbox", session_id: 1 });
    await settle();
    expect(store.snapshot.inboxes.get(1)?.map((s) => s.content)).toEqual([{ text: "later" }]);

    const reads = rt.reads.inbox;
    rt.push({ kind: "inbox", session_id: 2 });
    await settle();
    expect(rt.reads.inbox).toBe(reads);

    // A run in the session took the item (a task change), as another process may have.
    rt.state.inboxes.set(1, []);
    rt.push({ kind: "task", task_id: 3, session_id: 1, event: "task_started" });
    await settle();
    expect(store.snapshot.inboxes.get(1)).toEqual([]);

    unwatch();
    expect(store.snapshot.inboxes.has(1)).toBe(false);
  });

  it("re-reads everything on refresh (another process committed)", async () => {
    const rt = fakeRuntime();
    const store = new SessionStore(rt.source);
    await store.start();
    store.watchInbox(4);
    await settle();
    rt.state.sessions = [session(4, "from the CLI")];
    rt.state.inboxes.set(4, [queued(1, 4, "said by the CLI")]);
    rt.push({ kind: "refresh" });
    await settle();
    expect(store.snapshot.sessions.map((s) => s.title)).toEqual(["from the CLI"]);
    expect(store.snapshot.inboxes.get(4)?.length).toBe(1);
  });

  it("coalesces a burst of changes into one more read, whose answer is kept", async () => {
    const rt = fakeRuntime();
    const store = new SessionStore(rt.source);
    await store.start();
    const start = rt.reads.sessions;
    const release = rt.hold();
    for (let i = 0; i < 20; i++) {
      rt.state.sessions = [session(i, `s${i}`)];
      rt.push({ kind: "task", task_id: i, session_id: i, event: "task_created" });
    }
    release();
    await settle();
    await settle();
    expect(rt.reads.sessions - start).toBe(2);
    expect(store.snapshot.sessions.map((s) => s.title)).toEqual(["s19"]);
  });

  it("hands every change to the views that follow them", async () => {
    const rt = fakeRuntime();
    const store = new SessionStore(rt.source);
    await store.start();
    const seen: Change[] = [];
    const off = store.onChange((c) => seen.push(c));
    rt.push({ kind: "triggers" });
    off();
    rt.push({ kind: "refresh" });
    expect(seen).toEqual([{ kind: "triggers" }]);
  });
});

describe("a session's activity after a task change", () => {
  it("waits for the person on an approval or a pause, is busy otherwise, ends on a terminal event", () => {
    expect(activityAfter("approval_required")).toBe("waiting");
    expect(activityAfter("run_paused")).toBe("waiting");
    expect(activityAfter("run_continued")).toBe("busy");
    expect(activityAfter("model_turn_started")).toBe("busy");
    for (const e of ["task_completed", "task_failed", "task_cancelled", "budget_exceeded"] as const) {
      expect(activityAfter(e)).toBeNull();
    }
  });
});
