// A notice in the transcript. A failure reads as a plain sentence (the runtime's, from its
// typed error), with the full error behind a disclosure and the two things a person can do
// about it: try again, or fix the model settings.
import { createContext } from "preact";
import { useContext, useState } from "preact/hooks";
import type { Item } from "../stream/items";
import { settingsHelp } from "../stream/failure";

type NoticeItem = Extract<Item, { kind: "notice" }>;

/** What a failure's buttons do; the session view provides them. */
export interface TranscriptActions {
  /** Says `text` again in the session (a new run). */
  retry: (text: string) => Promise<void>;
  openSettings: () => void;
}

export const ActionsContext = createContext<TranscriptActions | null>(null);

export function Notice({ item, retryText }: { item: NoticeItem; retryText: string | null }) {
  const actions = useContext(ActionsContext);
  const [retrying, setRetrying] = useState(false);
  if (!item.failed) {
    return <div class={`notice ${item.tone}`} data-testid="notice">{item.text}</div>;
  }
  const retry = async () => {
    if (!actions || retryText === null) return;
    setRetrying(true);
    try {
      await actions.retry(retryText);
    } finally {
      setRetrying(false);
    }
  };
  return (
    <div class="notice error failure" role="alert" data-testid="notice" data-error-kind={item.errorKind ?? ""}>
      <div class="failure-text" data-testid="failure-sentence">{item.text}</div>
      {item.detail && (
        <details class="failure-detail" data-testid="failure-detail">
          <summary>Details</summary>
          <pre>{item.detail}</pre>
        </details>
      )}
      {actions && (
        <div class="failure-actions">
          {retryText !== null && (
            <button type="button" class="primary" data-testid="retry" disabled={retrying} onClick={() => void retry()}>
              Retry
            </button>
          )}
          {settingsHelp(item.errorKind) && (
            <button type="button" data-testid="open-settings" onClick={actions.openSettings}>
              Open Settings
            </button>
          )}
        </div>
      )}
    </div>
  );
}
