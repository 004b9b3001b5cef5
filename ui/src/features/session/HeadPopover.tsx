// A button in the session header that opens a small panel under it: the context ring's
// details and actions, the run's figures and the session's actions. Not modal: the
// transcript stays readable and usable beside it. Esc or a click outside closes it, and
// Esc gives focus back to the button; Tab moves through the panel and on to the page.
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";

interface Props {
  /** `head-<name>` is the button's test id, `head-<name>-panel` the panel's. */
  name: string;
  /** What the button opens, for screen readers and the tooltip. */
  label: string;
  button: ComponentChildren;
  children: ComponentChildren;
}

export function HeadPopover({ name, label, button, children }: Props) {
  const [open, setOpen] = useState(false);
  const opener = useRef<HTMLButtonElement>(null);
  const panel = useRef<HTMLDivElement>(null);
  const close = useCallback(() => {
    setOpen(false);
    opener.current?.focus();
  }, []);
  useEffect(() => {
    if (!open) return;
    // Focus goes to the panel itself, not its first button: opening it never arms an action.
    panel.current?.focus();
    const onDown = (e: MouseEvent) => {
      const target = e.target as Node;
      if (!panel.current?.contains(target) && !opener.current?.contains(target)) setOpen(false);
    };
    document.addEventListener("mousedown", onDown);
    return () => document.removeEventListener("mousedown", onDown);
  }, [open]);
  const id = `head-${name}-panel`;
  return (
    <div class="head-pop">
      <button
        ref={opener}
        type="button"
        class="head-pop-button"
        data-testid={`head-${name}`}
        aria-label={label}
        title={label}
        aria-expanded={open}
        aria-controls={open ? id : undefined}
        onClick={() => setOpen(!open)}
      >
        {button}
      </button>
      {open && (
        <div
          ref={panel}
          id={id}
          class="head-pop-panel"
          role="dialog"
          aria-label={label}
          data-testid={id}
          tabIndex={-1}
          onKeyDown={(e) => {
            if (e.key === "Escape" && !e.defaultPrevented) {
              e.preventDefault();
              e.stopPropagation();
              close();
            }
          }}
        >
          {children}
        </div>
      )}
    </div>
  );
}
