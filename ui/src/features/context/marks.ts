// The context's dividers in the transcript (issue 13), as pure data: a compaction (from
// its `context_compacted` event while a run is watched, or from its stored entry) and a
// fresh context. Where each goes:
// - a compaction the runtime made sits inside its task, where it happened (an item);
// - a compaction the person asked for ("Compact now") and a fresh context sit between
//   tasks, after the task they follow.
import type { CompactionCause, CompactionInfo, ContextMarks, ContextReset, Entry, Value } from "../../api/generated/bindings";
import { objectOf, textOf } from "../../api/json";

/** One compaction, whichever record it was read from. */
export interface CompactionMark {
  cause: CompactionCause | null;
  tokensBefore: number | null;
  tokensAfter: number | null;
  summary: string | null;
  fallback: boolean;
  /** Entries the summary stands for (they stay in the transcript above). */
  summarised: number[];
  /** Tool results cut to head and tail. */
  elided: number[];
  /** Person instructions replaced by a marker. */
  instructionsElided: number[];
}

/** The payload of a `context_compacted` event (the fields a divider shows). */
export interface CompactedPayload {
  cause: CompactionCause;
  tokens_before: number;
  tokens_after: number;
  elided: number[];
  summarised: number[];
  instructions_elided: number[];
  summary: string | null;
  fallback: boolean;
}

export function markFromEvent(p: CompactedPayload): CompactionMark {
  return {
    cause: p.cause,
    tokensBefore: p.tokens_before,
    tokensAfter: p.tokens_after,
    summary: p.summary,
    fallback: p.fallback,
    summarised: p.summarised,
    elided: p.elided,
    instructionsElided: p.instructions_elided,
  };
}

export function markFromInfo(c: CompactionInfo): CompactionMark {
  return {
    cause: c.cause,
    tokensBefore: c.tokens_before,
    tokensAfter: c.tokens_after,
    summary: c.summary,
    fallback: c.fallback,
    summarised: c.replaces,
    elided: c.elided,
    instructionsElided: c.instructions_elided,
  };
}

const CAUSES: readonly CompactionCause[] = ["before_request", "overflow", "manual"];

function idsOf(v: Value | undefined): number[] {
  return Array.isArray(v) ? v.filter((x): x is number => typeof x === "number") : [];
}

function numberOf(v: Value | undefined): number | null {
  return typeof v === "number" ? v : null;
}

/** A stored `compaction` entry as a mark; `null` for one the person asked for (drawn
 * between tasks from the session's marks instead). */
export function markFromEntry(e: Entry): CompactionMark | null {
  const c = objectOf(e.content);
  const causeText = textOf(e.content, "cause");
  const cause = CAUSES.find((k) => k === causeText) ?? null;
  if (cause === "manual") return null;
  return {
    cause,
    tokensBefore: numberOf(c?.tokens_before),
    tokensAfter: numberOf(c?.tokens_after),
    summary: textOf(e.content, "text"),
    fallback: c?.fallback === true,
    summarised: idsOf(c?.replaces),
    elided: idsOf(c?.elided),
    instructionsElided: idsOf(c?.instructions_elided),
  };
}

export function causeLabel(cause: CompactionCause | null): string {
  switch (cause) {
    case "before_request":
      return "the next request would not have fit";
    case "overflow":
      return "the server refused the request for length";
    case "manual":
      return "you asked (Compact now)";
    default:
      return "the context was full";
  }
}

/** A divider drawn between tasks. */
export type BetweenMark =
  | { kind: "compaction"; key: string; entryId: number; mark: CompactionMark }
  | { kind: "reset"; key: string; entryId: number; reset: ContextReset };

export interface PlacedMarks {
  /** Before the first task shown. */
  top: BetweenMark[];
  /** After the task with this id. */
  after: ReadonlyMap<number, BetweenMark[]>;
}

/**
 * Places the between-task dividers for the tasks shown (`taskIds`, oldest first): each
 * after its task; one after a task older than those shown (or before every task) goes on
 * top, and one after a task newer than all shown (one the view does not list yet) at the end.
 */
export function placeMarks(taskIds: number[], marks: ContextMarks): PlacedMarks {
  const list: { after: number | null; m: BetweenMark }[] = [];
  for (const c of marks.compactions) {
    if (c.cause !== "manual") continue;
    list.push({
      after: c.task_id,
      m: { kind: "compaction", key: `c${c.entry_id}`, entryId: c.entry_id, mark: markFromInfo(c) },
    });
  }
  for (const r of marks.resets) {
    list.push({ after: r.after_task, m: { kind: "reset", key: `r${r.entry_id}`, entryId: r.entry_id, reset: r } });
  }
  list.sort((a, b) => a.m.entryId - b.m.entryId);
  const shown = new Set(taskIds);
  const first = taskIds[0];
  const last = taskIds[taskIds.length - 1];
  const top: BetweenMark[] = [];
  const after = new Map<number, BetweenMark[]>();
  for (const { after: t, m } of list) {
    let at: number | null = t;
    if (at !== null && !shown.has(at)) {
      if (first === undefined || at < first) at = null;
      else if (at > last) at = last;
      else at = Math.max(...taskIds.filter((id) => id < (t ?? 0)));
    }
    if (at === null) top.push(m);
    else after.set(at, [...(after.get(at) ?? []), m]);
  }
  return { top, after };
}
