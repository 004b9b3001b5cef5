// Markdown for assistant answers, loaded lazily: marked, DOMPurify and highlight.js are
// most of the bundle and no start page needs them, so they live in their own chunk
// (markdown-render.ts) fetched after the first paint. Until it is there an answer is shown
// as plain text (the same text, unformatted).
//
// Rendering is memoised by text: a finished answer is rendered once, however often the
// view around it re-renders or the history is re-read from the store.
type Render = (text: string) => string;
type Split = (text: string) => { stable: string; tail: string };

let render: Render | null = null;
let split: Split | null = null;
let loading: Promise<Render> | null = null;

/** Starts loading the renderer (once); resolves when it can be used. */
export function loadMarkdown(): Promise<Render> {
  loading ??= import("./markdown-render").then((m) => {
    render = m.renderMarkdown;
    split = m.splitStable;
    return m.renderMarkdown;
  });
  return loading;
}

/**
 * For a streaming answer: the blocks of `text` that can no longer change (rendered), the
 * open block at the end (rendered, not cached: it changes every frame), and the length of
 * `text` the stable HTML stands for. Null while the renderer is not loaded.
 */
export function streamingHtml(text: string): { stableHtml: string; stableLength: number; tailHtml: string } | null {
  if (!render || !split) return null;
  const parts = split(text);
  return {
    stableHtml: parts.stable ? render(parts.stable) : "",
    stableLength: parts.stable.length,
    tailHtml: parts.tail ? render(parts.tail) : "",
  };
}

/** Rendered answers, most recently used last; bounded so a long session cannot grow it forever. */
const cache = new Map<string, string>();
const CACHE_MAX = 500;

/** Sanitised HTML of `text`, or null while the renderer is not loaded yet. */
export function markdownHtml(text: string): string | null {
  if (!render) return null;
  const hit = cache.get(text);
  if (hit !== undefined) {
    cache.delete(text);
    cache.set(text, hit);
    return hit;
  }
  const html = render(text);
  cache.set(text, html);
  if (cache.size > CACHE_MAX) cache.delete(cache.keys().next().value as string);
  return html;
}
