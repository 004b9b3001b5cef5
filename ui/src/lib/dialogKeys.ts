// Keyboard for a modal panel: Esc closes it, Tab stays inside it.
import { useEffect } from "preact/hooks";

/** The focusable elements of `root`, in tab order. */
export function focusables(root: HTMLElement): HTMLElement[] {
  const sel = "button:not([disabled]), textarea, input, select, summary, a[href], [tabindex]:not([tabindex='-1'])";
  return [...root.querySelectorAll<HTMLElement>(sel)].filter((e) => e.offsetParent !== null || e === document.activeElement);
}

/** A modal's keydown: Esc calls `onClose`; Tab and Shift+Tab cycle within `root`. */
export function modalKeyDown(e: KeyboardEvent, root: HTMLElement | null, onClose: () => void): void {
  if (!root) return;
  if (e.key === "Escape") {
    e.preventDefault();
    e.stopPropagation();
    onClose();
  } else if (e.key === "Tab" || e.keyCode === 9) {
    const items = focusables(root);
    if (items.length === 0) return;
    const at = items.indexOf(document.activeElement as HTMLElement);
    const next = e.shiftKey ? (at <= 0 ? items.length - 1 : at - 1) : at === items.length - 1 || at < 0 ? 0 : at + 1;
    e.preventDefault();
    items[next].focus();
  }
}

/**
 * While a modal is open, Esc closes it wherever focus is: a button that goes away after
 * an action (Undo this file, once done) leaves focus on the page body, outside the modal.
 */
export function useEscapeAnywhere(onClose: () => void): void {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape" && !e.defaultPrevented) {
        e.preventDefault();
        onClose();
      }
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [onClose]);
}
