// The session title in the header, renamed in place: Rename (or a double click) turns it
// into a field; Enter saves, Esc leaves it as it was.
import { useEffect, useRef, useState } from "preact/hooks";
import { errorMessage, renameSession } from "../../api/commands";

interface Props {
  sessionId: number;
  title: string;
  onRenamed: () => void;
}

export function TitleEditor({ sessionId, title, onRenamed }: Props) {
  const [editing, setEditing] = useState(false);
  const [value, setValue] = useState(title);
  const [error, setError] = useState<string | null>(null);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (editing) input.current?.select();
  }, [editing]);
  if (!editing) {
    return (
      <div class="title-row">
        <h1 data-testid="session-title" title={title} onDblClick={() => setEditing(true)}>
          {title}
        </h1>
        <button
          type="button"
          class="link rename"
          data-testid="rename-session"
          aria-label="Rename this session"
          onClick={() => {
            setValue(title);
            setError(null);
            setEditing(true);
          }}
        >
          Rename
        </button>
      </div>
    );
  }
  const save = async () => {
    try {
      await renameSession(sessionId, value);
      setEditing(false);
      onRenamed();
    } catch (e) {
      setError(errorMessage(e));
    }
  };
  return (
    <div class="title-row">
      <input
        ref={input}
        class="title-input"
        data-testid="rename-input"
        aria-label="Session title"
        value={value}
        onInput={(e) => setValue((e.target as HTMLInputElement).value)}
        onKeyDown={(e) => {
          if (e.key === "Enter") {
            e.preventDefault();
            void save();
          } else if (e.key === "Escape") {
            e.preventDefault();
            setEditing(false);
          }
        }}
        onBlur={() => setEditing(false)}
      />
      {error && <span class="composer-blocked" role="alert">{error}</span>}
    </div>
  );
}
