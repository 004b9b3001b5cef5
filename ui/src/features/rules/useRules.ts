// Loads what a session's workspace gives its runs, and reloads it after a change the
// window made or the runtime announced (a memory accepted from an approval, the CLI).
import { useCallback, useEffect, useState } from "preact/hooks";
import { errorMessage, followChanges, rulesInEffect } from "../../api/commands";
import type { RulesInEffect } from "../../api/generated/bindings";

export function useRules(workspace: string, sessionId: number) {
  const [rules, setRules] = useState<RulesInEffect | null>(null);
  const [error, setError] = useState<string | null>(null);
  const reload = useCallback(async () => {
    try {
      setRules(await rulesInEffect(workspace, sessionId));
      setError(null);
    } catch (e) {
      setError(errorMessage(e));
    }
  }, [workspace, sessionId]);
  useEffect(() => {
    void reload();
    let stop: (() => void) | null = null;
    let gone = false;
    void followChanges(() => void reload()).then((s) => {
      if (gone) s();
      else stop = s;
    });
    return () => {
      gone = true;
      stop?.();
    };
  }, [reload]);
  return { rules, error, setError, reload };
}
