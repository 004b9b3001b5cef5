// Help → Keyboard shortcuts: the table from lib/shortcuts.ts in a dialog. Focus starts on
// Close; Tab stays inside; Esc closes; focus goes back where it was.
import { useEffect, useRef } from "preact/hooks";
import { modalKeyDown } from "../../lib/dialogKeys";
import { SHORTCUTS } from "../../lib/shortcuts";

export function ShortcutsHelp({ onClose }: { onClose: () => void }) {
  const dialog = useRef<HTMLDivElement>(null);
  const close = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    const before = document.activeElement as HTMLElement | null;
    close.current?.focus();
    return () => before?.focus();
  }, []);
  return (
    <div class="overlay" onClick={(e) => e.target === e.currentTarget && onClose()}>
      <div
        class="dialog shortcuts-help"
        role="dialog"
        aria-modal="true"
        aria-labelledby="shortcuts-title"
        data-testid="shortcuts-help"
        ref={dialog}
        onKeyDown={(e) => modalKeyDown(e, dialog.current, onClose)}
      >
        <h2 id="shortcuts-title">Keyboard shortcuts</h2>
        <table>
          <tbody>
            {SHORTCUTS.map((s) => (
              <tr key={s.id} data-testid="shortcut-row">
                <td>
                  <kbd>{s.keys}</kbd>
                </td>
                <td>{s.what}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <div class="dialog-buttons">
          <button type="button" ref={close} data-testid="shortcuts-close" onClick={onClose}>
            Close
          </button>
        </div>
      </div>
    </div>
  );
}
