// The app's session store and the hooks views read it with.
import { createContext } from "preact";
import { useContext, useEffect, useState } from "preact/hooks";
import type { Change } from "../api/generated/bindings";
import type { SessionStore, Snapshot } from "./sessionStore";

export const StoreContext = createContext<SessionStore | null>(null);

export function useStoreInstance(): SessionStore {
  const store = useContext(StoreContext);
  if (!store) throw new Error("no session store: render inside <StoreContext.Provider>");
  return store;
}

/** The store's snapshot, re-rendering when it changes. */
export function useSnapshot(): Snapshot {
  const store = useStoreInstance();
  const [snap, setSnap] = useState(store.snapshot);
  useEffect(() => {
    setSnap(store.snapshot);
    return store.subscribe(() => setSnap(store.snapshot));
  }, [store]);
  return snap;
}

/** Runs `onChange` for every change the feed brings (the latest closure). */
export function useChanges(onChange: (c: Change) => void, deps: unknown[]) {
  const store = useStoreInstance();
  useEffect(() => store.onChange(onChange), [store, ...deps]);
}
