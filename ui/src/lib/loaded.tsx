// "Loaded" markers for a screen that loads in parts (Settings: each section reads its own
// settings). Each part says whether its first answer (data or an error) has come; the
// screen's root carries `data-loaded="true"` once every part mounted in it has. Nothing is
// drawn differently: the attribute is what the end-to-end tests wait on before they read
// the screen, so a section still loading is never taken for one that is missing
// (tests/e2e/README.md, "Waiting").
//
// A new screen in parts: `const [loaded, report] = useLoadedParts()`, render its root with
// `data-loaded={loaded ? "true" : "false"}` inside `<PartsContext.Provider value={report}>`,
// and call `usePartLoaded(ready)` in each part.
import { createContext } from "preact";
import { useCallback, useContext, useEffect, useLayoutEffect, useState } from "preact/hooks";

/** One part's news: still loading (`false`) or done (`true`). */
export type ReportPart = (part: object, ready: boolean) => void;

export const PartsContext = createContext<ReportPart | null>(null);

/** The parts still loading after `part` says `ready`; the same set when nothing changed. */
export function nextPending(pending: ReadonlySet<object>, part: object, ready: boolean): ReadonlySet<object> {
  if (pending.has(part) !== ready) return pending;
  const next = new Set(pending);
  if (ready) next.delete(part);
  else next.add(part);
  return next;
}

/** For the screen: whether every part has loaded, and what its parts report to. */
export function useLoadedParts(): [boolean, ReportPart] {
  const [pending, setPending] = useState<ReadonlySet<object>>(() => new Set());
  const [mounted, setMounted] = useState(false);
  const report = useCallback<ReportPart>((part, ready) => setPending((p) => nextPending(p, part, ready)), []);
  // The parts report from layout effects, which all run before this effect: once it has
  // run, every part mounted with the screen has said whether it is still loading.
  useEffect(() => setMounted(true), []);
  return [mounted && pending.size === 0, report];
}

/** For a part: `ready` once its first answer (data or an error) has come. */
export function usePartLoaded(ready: boolean): void {
  const report = useContext(PartsContext);
  const [part] = useState(() => ({}));
  useLayoutEffect(() => report?.(part, ready), [report, part, ready]);
  // A part that leaves while loading holds nothing up.
  useLayoutEffect(() => () => report?.(part, true), [report, part]);
}
