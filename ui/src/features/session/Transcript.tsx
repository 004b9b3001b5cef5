// The transcript: one section per task. While an answer streams the view re-renders once
// per frame, so everything that did not change is skipped: a task section whose items,
// status and bubble are the same, and an item whose fields are the same (history items
// are re-derived from the store after a run ends, with equal content). Only the streaming
// bubble changes per frame, and it appends text to its node instead of re-rendering.
import { memo } from "preact/compat";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import type { Item } from "../stream/items";
import type { TaskView } from "./useSession";
import { ToolCard } from "./ToolCard";
import type { TaskChanges } from "../../api/generated/bindings";
import { ChangesLine } from "../changes/ChangesLine";
import { hrefOf } from "../../lib/route";
import { loadMarkdown, markdownHtml } from "../../lib/markdown";

/** A finished answer: markdown + highlighting, rendered once per text (see lib/markdown). */
function AssistantMessage({ text }: { text: string }) {
  const html = markdownHtml(text);
  const [, loaded] = useState(0);
  useEffect(() => {
    if (html === null) void loadMarkdown().then(() => loaded((n) => n + 1));
  }, [html === null]);
  if (html === null) {
    // The renderer is still loading (only just after start): the same text, plain.
    return <div class="msg assistant" data-testid="assistant-message">{text}</div>;
  }
  return (
    <div
      class="msg assistant markdown"
      data-testid="assistant-message"
      // Sanitised by DOMPurify in lib/markdown-render.ts.
      dangerouslySetInnerHTML={{ __html: html }}
    />
  );
}

function ItemView({ item }: { item: Item }) {
  switch (item.kind) {
    case "user":
      return <div class="msg user" data-testid="user-message">{item.text}</div>;
    case "assistant":
      return <AssistantMessage text={item.text} />;
    case "tool":
      return <ToolCard item={item} />;
    case "notice":
      return <div class={`notice ${item.tone}`} data-testid="notice">{item.text}</div>;
  }
}

/** Items are plain data: equal fields draw the same thing. */
function sameItem(a: Item, b: Item): boolean {
  if (a === b) return true;
  const ka = Object.keys(a) as (keyof Item)[];
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => a[k] === b[k]);
}

const MemoItem = memo(ItemView, (prev, next) => sameItem(prev.item, next.item));

/**
 * The answer being generated, as plain text (markdown is rendered once the turn
 * completes). The text node is owned here, not by Preact: a delta appends to it.
 */
function StreamingBubble({ text }: { text: string }) {
  const node = useRef<HTMLSpanElement>(null);
  const shown = useRef("");
  useLayoutEffect(() => {
    const el = node.current;
    if (!el) return;
    const before = shown.current;
    const tail = el.firstChild;
    if (text.startsWith(before) && tail instanceof Text && tail.data === before) {
      if (text.length > before.length) tail.appendData(text.slice(before.length));
    } else {
      el.textContent = text;
    }
    shown.current = text;
  }, [text]);
  return (
    <div class="msg assistant streaming" data-testid="streaming-message">
      <span ref={node} />
      <span class="cursor" aria-hidden="true" />
    </div>
  );
}

function TaskSection({ view, changes }: { view: TaskView; changes: TaskChanges | undefined }) {
  const { task, items, streaming } = view;
  return (
    <section class="task" data-testid="task" data-task-id={task.id} data-status={task.status}>
      {items.map((item) => (
        <MemoItem item={item} key={item.key} />
      ))}
      {streaming !== null && <StreamingBubble text={streaming} />}
      <div class="task-foot muted">
        <span data-testid="task-status">{task.status.replace("_", " ")}</span>
        {" · "}
        <a href={hrefOf({ name: "task", id: task.id })} data-testid="task-details-link">
          details
        </a>
        {changes && <ChangesLine changes={changes} />}
      </div>
    </section>
  );
}

const MemoTask = memo(
  TaskSection,
  (prev, next) =>
    prev.view.task.id === next.view.task.id &&
    prev.view.task.status === next.view.task.status &&
    prev.view.items === next.view.items &&
    prev.view.streaming === next.view.streaming &&
    prev.changes === next.changes,
);

export function Transcript({ views, changes }: { views: TaskView[]; changes?: Map<number, TaskChanges> }) {
  return (
    <div class="transcript" data-testid="transcript">
      {views.map((v) => (
        <MemoTask view={v} key={v.task.id} changes={changes?.get(v.task.id)} />
      ))}
    </div>
  );
}
