// The window's keyboard shortcuts, declared once: the Help dialog lists this table and
// the app's one key handler reads `shortcutOf`. A view that owns an action (Stop is the
// session view's) listens with `useShortcut`.
import { useEffect } from "preact/hooks";

export type ShortcutId = "new-session" | "search" | "settings" | "stop" | "approve" | "close" | "help";

export interface Shortcut {
  id: ShortcutId;
  keys: string;
  what: string;
}

export const SHORTCUTS: readonly Shortcut[] = [
  { id: "new-session", keys: "Ctrl+N", what: "New session" },
  { id: "search", keys: "Ctrl+K", what: "Search sessions and messages" },
  { id: "settings", keys: "Ctrl+,", what: "Settings" },
  { id: "stop", keys: "Ctrl+Shift+Backspace", what: "Stop the open session's run" },
  { id: "approve", keys: "Ctrl+Enter", what: "Approve, in an approval" },
  { id: "close", keys: "Esc", what: "Close a panel or dialog" },
  { id: "help", keys: "F1 or ?", what: "These shortcuts" },
];

/** Whether keys typed now go into a field (then `?` is a question mark, not Help). */
export function typingIn(target: EventTarget | null): boolean {
  if (typeof HTMLElement === "undefined" || !(target instanceof HTMLElement)) return false;
  return target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName);
}

/** The app-wide shortcut `e` is, if any. Ctrl+K, Ctrl+Enter and Esc belong to the views
 *  they act in (the sidebar's search, the approval, each dialog), so they are not here. */
export function shortcutOf(e: KeyboardEvent): ShortcutId | null {
  const ctrl = e.ctrlKey || e.metaKey;
  if (e.altKey) return null;
  if (ctrl && !e.shiftKey && e.key.toLowerCase() === "n") return "new-session";
  if (ctrl && !e.shiftKey && e.key === ",") return "settings";
  if (ctrl && e.shiftKey && e.key === "Backspace") return "stop";
  if (!ctrl && e.key === "F1") return "help";
  if (!ctrl && e.key === "?" && !typingIn(e.target)) return "help";
  return null;
}

const EVENT = "pp-shortcut";

/** Hands a shortcut to the view that listens for it. */
export function fireShortcut(id: ShortcutId): void {
  window.dispatchEvent(new CustomEvent<ShortcutId>(EVENT, { detail: id }));
}

/** Runs `action` when the shortcut `id` is pressed while this view is shown. */
export function useShortcut(id: ShortcutId, action: () => void): void {
  useEffect(() => {
    const on = (e: Event) => {
      if ((e as CustomEvent<ShortcutId>).detail === id) action();
    };
    window.addEventListener(EVENT, on);
    return () => window.removeEventListener(EVENT, on);
  }, [id, action]);
}
