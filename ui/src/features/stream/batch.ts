// Batching channel events: a delta arrives every few milliseconds while a model streams,
// far more often than the screen can show. Events are queued as they arrive and handed
// over once per animation frame, in arrival order, so the view re-renders at most once per
// frame however fast the stream is. Pure apart from the scheduler, which is injected
// (tested in batch.test.ts).
import type { TaskEvent } from "../../api/generated/bindings";
import { reduceLive, type LiveState } from "./reducer";

/** Folds events in order: the same result as calling `reduceLive` once per event. */
export function reduceBatch(state: LiveState, events: readonly TaskEvent[]): LiveState {
  let next = state;
  for (const ev of events) next = reduceLive(next, ev);
  return next;
}

export interface Scheduler {
  /** Runs `fn` before the next frame; returns a cancel function. */
  frame: (fn: () => void) => () => void;
  /** Runs `fn` after `ms` milliseconds; returns a cancel function. */
  timeout: (fn: () => void, ms: number) => () => void;
}

/** The browser's scheduler: `requestAnimationFrame`, and timers. */
export const browserScheduler: Scheduler = {
  frame: (fn) => {
    const id = requestAnimationFrame(() => fn());
    return () => cancelAnimationFrame(id);
  },
  timeout: (fn, ms) => {
    const id = setTimeout(fn, ms);
    return () => clearTimeout(id);
  },
};

/**
 * A hidden window (minimised, or closed to the tray while a run goes on) gets no
 * animation frames: a timer flushes the queue then, so it never grows without bound.
 */
export const FALLBACK_MS = 100;

export interface Batcher<T> {
  push: (item: T) => void;
  /** Hands over what is queued now (e.g. before the view goes away). */
  flush: () => void;
  /** Drops what is queued and stops: nothing is handed over afterwards. */
  dispose: () => void;
}

/** Queues items and hands them to `deliver` in one call per frame, in arrival order. */
export function frameBatcher<T>(
  deliver: (items: T[]) => void,
  scheduler: Scheduler = browserScheduler,
): Batcher<T> {
  let queue: T[] = [];
  let cancels: (() => void)[] = [];
  let disposed = false;

  const flush = () => {
    for (const cancel of cancels) cancel();
    cancels = [];
    if (queue.length === 0 || disposed) return;
    const items = queue;
    queue = [];
    deliver(items);
  };

  return {
    push(item) {
      if (disposed) return;
      queue.push(item);
      if (cancels.length === 0) {
        cancels = [scheduler.frame(flush), scheduler.timeout(flush, FALLBACK_MS)];
      }
    },
    flush,
    dispose() {
      for (const cancel of cancels) cancel();
      cancels = [];
      queue = [];
      disposed = true;
    },
  };
}
