// The actions under a message: an answer is copied as its markdown or as plain text (what
// it reads like once rendered). A short "Copied" says it worked.
import { useState } from "preact/hooks";
import { writeClipboard } from "../../lib/copy";
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
