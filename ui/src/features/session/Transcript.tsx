// The transcript: one section per task. While an answer streams the view re-renders once
// per frame, so everything that did not change is skipped: a task section whose items,
// status and bubble are the same, and an item whose fields are the same (history items
// are re-derived from the store after a run ends, with equal content). Only the streaming
// bubble changes per frame, and it appends text to its node instead of re-rendering.
import { Fragment } from "preact";
import { memo } from "preact/compat";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import type { Item } from "../stream/items";
import type { TaskView } from "./useSession";
import { ToolCard } from "./ToolCard";
import { AnswerActions, Regenerate } from "./MessageActions";
import { RewindActions, RewindSpace } from "./RewindActions";
import { Notice } from "./Notice";
import type { TaskChanges } from "../../api/generated/bindings";
import { ChangesLine } from "../changes/ChangesLine";
import { hrefOf } from "../../lib/route";
import { ThinkingLabel } from "../models/ThinkingLabel";
import { loadMarkdown, markdownHtml, streamingHtml } from "../../lib/markdown";
import { CompactionDivider, ResetDivider } from "../context/CompactionDivider";
import type { BetweenMark, PlacedMarks } from "../context/marks";

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

/** `rewindable`: the session this item is in, when the person may go back to it now (the
 *  session is not working); `null` otherwise. */
function ItemView({ item, retryText, rewindable }: { item: Item; retryText: string | null; rewindable: number | null }) {
  switch (item.kind) {
    case "user":
      if (item.rewound) {
        return (
          <>
            <div class="msg user rewound" data-testid="user-message" data-rewound="true" title="Set aside by a rewind: no longer sent to the model">
              {item.text}
            </div>
            <div class="msg-actions muted" data-testid="rewound-note">
              Set aside by a rewind: the files are as they were before it. Send it again, edited, below.
            </div>
          </>
        );
      }
      return (
        <>
          <div class="msg user" data-testid="user-message">{item.text}</div>
          {rewindable !== null && item.entryId !== undefined ? (
            <RewindActions sessionId={rewindable} entryId={item.entryId} text={item.text} />
          ) : (
            <RewindSpace />
          )}
        </>
      );
    case "assistant":
      if (item.rewound) {
        return (
          <div class="msg assistant rewound" data-testid="assistant-message" data-rewound="true" title="Set aside by a rewind: no longer sent to the model">
            {item.text}
          </div>
        );
      }
      return (
        <div class="msg-with-actions">
          <AssistantMessage text={item.text} />
          <AnswerActions text={item.text} />
        </div>
      );
    case "tool":
      return <ToolCard item={item} />;
    case "notice":
      return <Notice item={item} retryText={retryText} />;
    case "compaction":
      return <CompactionDivider mark={item.mark} />;
  }
}

/** Items are plain data: equal fields draw the same thing. */
function sameItem(a: Item, b: Item): boolean {
  if (a === b) return true;
  const ka = Object.keys(a) as (keyof Item)[];
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => a[k] === b[k]);
}

const MemoItem = memo(
  ItemView,
  (prev, next) => sameItem(prev.item, next.item) && prev.retryText === next.retryText && prev.rewindable === next.rewindable,
);

/**
 * The answer being generated, formatted as it arrives. The blocks that later text cannot
 * change (a finished paragraph, list or code block) are rendered once and appended; only
 * the open block at the end is rendered again per frame, so the cost per frame does not
 * grow with the answer. The nodes are owned here, not by Preact. Until the renderer is
 * loaded the text is shown plain.
 */
function StreamingBubble({ text }: { text: string }) {
  const stableRef = useRef<HTMLDivElement>(null);
  const tailRef = useRef<HTMLDivElement>(null);
  // The part of the text the stable blocks on screen stand for.
  const drawn = useRef("");
  // The open block as last drawn, and whether its DOM text ends exactly where it does.
  const tailDrawn = useRef({ text: "", exact: false });
  const [ready, setReady] = useState(0);
  useEffect(() => {
    void loadMarkdown().then(() => setReady((n) => n + 1));
  }, []);
  useLayoutEffect(() => {
    const stable = stableRef.current;
    const tail = tailRef.current;
    if (!stable || !tail) return;
    if (!text.startsWith(drawn.current)) {
      // A stream reset replaced the text: start over.
      stable.replaceChildren();
      drawn.current = "";
      tailDrawn.current = { text: "", exact: false };
    }
    const rest = text.slice(drawn.current.length);
    if (appendPlain(tail, tailDrawn.current, rest)) return;
    const html = streamingHtml(rest);
    if (html === null) {
      tail.className = "stream-tail plain";
      tail.textContent = rest;
      return;
    }
    if (html.stableHtml) {
      // Sanitised by DOMPurify in lib/markdown-render.ts.
      stable.insertAdjacentHTML("beforeend", html.stableHtml);
      drawn.current += rest.slice(0, html.stableLength);
    }
    tail.className = "stream-tail";
    tail.innerHTML = html.tailHtml;
    const open = rest.slice(html.stableLength);
    tailDrawn.current = { text: open, exact: open !== "" && !/\s$/.test(open) && endsInText(tail) };
  }, [text, ready]);
  return (
    <div class="msg assistant streaming markdown" data-testid="streaming-message">
      <div ref={stableRef} />
      <div ref={tailRef} />
      <span class="cursor" aria-hidden="true" />
    </div>
  );
}

/** Characters that can change how the text before them is formatted (emphasis, code,
 * links, breaks, HTML, autolinks): text without any is appended as it is. */
const MARKUP = /[*_`[\]()<>!#|~\\&:@.\n\r]/;

function endsInText(el: HTMLElement): boolean {
  let node: Node | null = el.lastChild;
  while (node && node.nodeType === Node.ELEMENT_NODE && (node as Element).tagName !== "PRE") node = node.lastChild;
  return node instanceof Text;
}

/**
 * Most deltas are plain words added to the open paragraph: those are appended to its last
 * text node instead of rendering the block again (which would cost more per frame the
 * longer the paragraph grows). Anything that could change the formatting renders it.
 */
function appendPlain(tail: HTMLElement, drawn: { text: string; exact: boolean }, rest: string): boolean {
  if (!drawn.exact || !rest.startsWith(drawn.text) || rest.length === drawn.text.length) return false;
  const added = rest.slice(drawn.text.length);
  if (MARKUP.test(added)) return false;
  let node: Node | null = tail.lastChild;
  while (node && node.nodeType === Node.ELEMENT_NODE) node = node.lastChild;
  if (!(node instanceof Text)) return false;
  node.appendData(added);
  drawn.text = rest;
  return true;
}

/** `last`: the session's newest task, whose answer can be regenerated. */
function TaskSection({ view, changes, last }: { view: TaskView; changes: TaskChanges | undefined; last: boolean }) {
  const { task, items, streaming } = view;
  // What Retry says again: the last thing the person said in this task.
  const users = items.filter((i) => i.kind === "user");
  const lastUser = users[users.length - 1];
  const retryText = lastUser && lastUser.kind === "user" ? lastUser.text : task.goal || null;
  const active = task.status === "queued" || task.status === "running";
  const toolBusy = items.some((i) => i.kind === "tool" && (i.status === "running" || i.status === "waiting_approval"));
  // Going back is offered on a finished task's messages (the runtime refuses it while any
  // task of the session is open, and says so).
  const done = ["completed", "failed", "cancelled", "budget_exceeded"].includes(task.status);
  const rewindable = done && !view.live ? task.session_id : null;
  const asked = items.find((i) => i.kind === "user" && !i.rewound && i.entryId !== undefined);
  const again =
    last && rewindable !== null && asked?.kind === "user" && asked.entryId !== undefined
      ? { entryId: asked.entryId, text: asked.text }
      : null;
  return (
    <section class="task" data-testid="task" data-task-id={task.id} data-status={task.status}>
      {items.map((item, at) => (
        // An anchor without a box: a search hit scrolls to the item by its key. Keyed by
        // place, not by that key: a task's items only ever grow at the end, and the same
        // item is drawn first by the live run, then by the store's history under another
        // key once the run ends; by place its nodes stay (an opened output, a copy's
        // "Copied"), and nothing is drawn twice over.
        <div class="item-anchor" data-item-key={item.key} key={at}>
          <MemoItem item={item} retryText={retryText} rewindable={rewindable} />
        </div>
      ))}
      {streaming !== null && <StreamingBubble text={streaming} />}
      {view.live && active && streaming === null && !toolBusy && (
        <div class="thinking" data-testid="thinking" role="status">
          <span class="spinner" aria-hidden="true" />
          <ThinkingLabel />
        </div>
      )}
      <div class="task-foot muted">
        <span data-testid="task-status">{task.status.replace("_", " ")}</span>
        {" · "}
        <a href={hrefOf({ name: "task", id: task.id })} data-testid="task-details-link">
          details
        </a>
        {again && rewindable !== null && <Regenerate sessionId={rewindable} entryId={again.entryId} text={again.text} />}
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
    prev.view.live === next.view.live &&
    prev.changes === next.changes &&
    prev.last === next.last,
);

function Between({ marks }: { marks: BetweenMark[] | undefined }) {
  if (!marks) return null;
  return (
    <>
      {marks.map((m) =>
        m.kind === "reset" ? <ResetDivider reset={m.reset} key={m.key} /> : <CompactionDivider mark={m.mark} key={m.key} />,
      )}
    </>
  );
}

/** `marks`: the dividers between tasks (a compaction asked for, a fresh context). */
export function Transcript({
  views,
  marks,
  changes,
}: {
  views: TaskView[];
  marks?: PlacedMarks;
  changes?: Map<number, TaskChanges>;
}) {
  return (
    <div class="transcript" data-testid="transcript">
      <Between marks={marks?.top} />
      {views.map((v) => (
        <Fragment key={v.task.id}>
          <MemoTask view={v} changes={changes?.get(v.task.id)} last={v === views[views.length - 1]} />
          <Between marks={marks?.after.get(v.task.id)} />
        </Fragment>
      ))}
    </div>
  );
}
