// The session title in the header, renamed in place: Rename (or a double click) turns it
// into a field; Enter saves, Esc leaves it as it was.
import { useState } from "preact/hooks";
import { renameSession } from "../../api/commands";
import { TitleInput } from "../../lib/inputs";

interface Props {
  sessionId: number;
  title: string;
  onRenamed: () => void;
}

export function TitleEditor({ sessionId, title, onRenamed }: Props) {
  const [editing, setEditing] = useState(false);
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
          onClick={() => setEditing(true)}
        >
          Rename
        </button>
      </div>
    );
  }
  return (
    <div class="title-row">
      <TitleInput
        initial={title}
        testid="rename-input"
        save={(title) => renameSession(sessionId, title)}
        done={(saved) => {
          setEditing(false);
          if (saved) onRenamed();
        }}
      />
    </div>
  );
}
