// The built-in model's server as the window knows it: read once, then kept current by the
// `local-server-status` event the shell sends on every change. One listener for the whole
// window, however many parts show the state.
import { useEffect, useState } from "preact/hooks";
import { followLocalServer, localServerStatus } from "../../api/commands";
import type { LocalServerStatus } from "../../api/generated/bindings";

type Listener = (s: LocalServerStatus | null) => void;

let current: LocalServerStatus | null = null;
let started: Promise<void> | null = null;
const listeners = new Set<Listener>();

function set(s: LocalServerStatus) {
  current = s;
  for (const l of listeners) l(s);
}

function start(): Promise<void> {
  if (!started) {
    started = (async () => {
      // Listen first: a change between the read and the listener would otherwise be lost.
      let changed = false;
      await followLocalServer((s) => {
        changed = true;
        set(s);
      });
      const now = await localServerStatus();
      if (!changed) set(now);
    })().catch(() => {
      // Outside the app (tests, a reload mid-quit) there is no server to follow.
      started = null;
    });
  }
  return started;
}

/** Reads the state again now (its memory figure is read anew). */
export async function refreshLocalServer(): Promise<void> {
  await start();
  set(await localServerStatus());
}

/** The server's state; null until first known. */
export function useLocalServer(): LocalServerStatus | null {
  const [s, setS] = useState<LocalServerStatus | null>(current);
  useEffect(() => {
    listeners.add(setS);
    void start();
    if (current !== s) setS(current);
    return () => {
      listeners.delete(setS);
    };
  }, []);
  return s;
}
