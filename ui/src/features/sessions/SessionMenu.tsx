// Each sidebar item's menu (⋯): Rename and Delete, as in the session's header. Keyboard:
// the button opens it with focus on the first item, arrows move, Esc closes it and gives
// focus back to the button.
import { useEffect, useRef, useState } from "preact/hooks";
import { renameSession } from "../../api/commands";
import { TitleInput } from "../../lib/inputs";
import type { Session } from "../../api/generated/bindings";
import { ConfirmDelete } from "./DeleteSession";

export function SessionMenu({ session, onRename }: { session: Session; onRename: () => void }) {
  const [open, setOpen] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  const menu = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!open) return;
    menu.current?.querySelector<HTMLElement>("[role=menuitem]")?.focus();
    const away = (e: MouseEvent) => {
      if (!menu.current?.contains(e.target as Node) && e.target !== button.current) setOpen(false);
    };
    document.addEventListener("mousedown", away);
    return () => document.removeEventListener("mousedown", away);
  }, [open]);
  const close = () => {
    setOpen(false);
    button.current?.focus();
  };
  const onKeyDown = (e: KeyboardEvent) => {
    const items = [...(menu.current?.querySelectorAll<HTMLElement>("[role=menuitem]") ?? [])];
    const at = items.indexOf(document.activeElement as HTMLElement);
    if (e.key === "Escape") {
      e.preventDefault();
      e.stopPropagation();
      close();
    } else if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      const step = e.key === "ArrowDown" ? 1 : -1;
      items[(at + step + items.length) % items.length]?.focus();
    }
  };
  return (
    <span class="session-menu">
      <button
        type="button"
        class="session-menu-button"
        ref={button}
        data-testid="session-menu"
        aria-label={`More for ${session.title}`}
        aria-haspopup="menu"
        aria-expanded={open}
        onClick={(e) => {
          e.preventDefault();
          e.stopPropagation();
          setOpen(!open);
        }}
      >
        ⋯
      </button>
      {open && (
        <div class="menu" role="menu" ref={menu} data-testid="session-menu-items" onKeyDown={onKeyDown}>
          <button
            type="button"
            role="menuitem"
            data-testid="session-menu-rename"
            onClick={(e) => {
              e.stopPropagation();
              setOpen(false);
              onRename();
            }}
          >
            Rename…
          </button>
          <button
            type="button"
            role="menuitem"
            class="danger-text"
            data-testid="session-menu-delete"
            onClick={(e) => {
              e.stopPropagation();
              setOpen(false);
              setDeleting(true);
            }}
          >
            Delete…
          </button>
        </div>
      )}
      {deleting && (
        <ConfirmDelete
          session={session}
          onClose={() => {
            setDeleting(false);
            button.current?.focus();
          }}
        />
      )}
    </span>
  );
}

/** The sidebar's title field: Enter saves, Esc or leaving it keeps the old title. */
export function RenameField({ session, onDone }: { session: Session; onDone: (renamed: boolean) => void }) {
  return (
    <div class="session-rename">
      <TitleInput
        initial={session.title}
        testid="sidebar-rename-input"
        save={(title) => renameSession(session.id, title)}
        done={onDone}
      />
    </div>
  );
}
