// The actions under a message: an answer is copied as its markdown or as plain text (what
// it reads like once rendered), and the last one regenerated.
import { useContext, useState } from "preact/hooks";
import { errorMessage, rewindSession } from "../../api/commands";
import { writeClipboard } from "../../lib/copy";
import { ComposerContext } from "./composerDraft";
import { markdownHtml } from "../../lib/markdown";

/** The answer as a person reads it: the rendered markdown's text, or the text itself while
 *  the renderer is not loaded. */
export function plainOf(markdown: string): string {
  const html = markdownHtml(markdown);
  if (html === null || typeof DOMParser === "undefined") return markdown;
  const doc = new DOMParser().parseFromString(html, "text/html");
  // Code blocks carry a "Copy" button of their own: not part of the answer.
  doc.querySelectorAll(".code-copy, .code-lang").forEach((n) => n.remove());
  return (doc.body.textContent ?? markdown).replace(/\n{3,}/g, "\n\n").trim();
}

export function AnswerActions({ text }: { text: string }) {
  const [said, setSaid] = useState<string | null>(null);
  const copy = (what: string, label: string) =>
    writeClipboard(what).then(
      () => setSaid(label),
      () => setSaid("Copy failed"),
    );
  return (
    <div class="msg-actions" data-testid="answer-actions">
      <button type="button" class="link" data-testid="copy-answer" onClick={() => void copy(text, "Copied as markdown")}>
        Copy
      </button>
      <button type="button" class="link" data-testid="copy-answer-plain" onClick={() => void copy(plainOf(text), "Copied as text")}>
        Copy as text
      </button>
      {said && (
        <span class="muted" role="status" data-testid="copy-status">
          {said}
        </span>
      )}
    </div>
  );
}

/** The last answer again: the task's message is rewound (its files put back with it) and
 *  sent once more. Files changed since are named and nothing is rewound. */
export function Regenerate({ sessionId, entryId, text }: { sessionId: number; entryId: number; text: string }) {
  const composer = useContext(ComposerContext);
  const [busy, setBusy] = useState(false);
  const [said, setSaid] = useState<string | null>(null);
  if (!composer) return null;
  const again = async () => {
    setBusy(true);
    setSaid(null);
    try {
      const r = await rewindSession(sessionId, entryId, false);
      if (r.files.id === null && r.files.conflicts.length > 0) {
        setSaid(`Not regenerated: changed since the answer: ${r.files.conflicts.map((c) => c.path).join(", ")}.`);
        return;
      }
      await composer.send(text);
    } catch (e) {
      setSaid(errorMessage(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      {" · "}
      <button type="button" class="link" data-testid="regenerate" disabled={busy} onClick={() => void again()}>
        Regenerate
      </button>
      {said && (
        <span role="alert" data-testid="regenerate-status">
          {" "}
          {said}
        </span>
      )}
    </>
  );
}
