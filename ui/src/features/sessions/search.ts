// Full-text search from the sidebar: the runtime's hits (newest first) as the sidebar
// lists them, the matched words marked, each opening its session at that entry.
import type { SearchHit } from "../../api/generated/bindings";
import { hrefOf } from "../../lib/route";

/** Where the runtime marks the matched words in a snippet (control characters). */
const START = "\u0002";
const END = "\u0003";

export interface SnippetPart {
  text: string;
  mark: boolean;
}

/** A snippet as plain and marked runs, in order; the marks themselves are dropped. */
export function snippetParts(snippet: string): SnippetPart[] {
  const parts: SnippetPart[] = [];
  let mark = false;
  let run = "";
  const flush = () => {
    if (run) parts.push({ text: run, mark });
    run = "";
  };
  for (const ch of snippet) {
    if (ch === START || ch === END) {
      flush();
      mark = ch === START;
    } else run += ch;
  }
  flush();
  return parts;
}

/** The link that opens a hit's session scrolled to its entry. */
export const hitHref = (h: SearchHit): string => hrefOf({ name: "session", id: h.session_id, entry: h.entry_id });

const WHO: Record<string, string> = { user: "You", assistant: "Answer", tool_result: "Tool output" };

/** Who said it: "You", "Answer", "Tool output". */
export const hitSource = (h: SearchHit): string => WHO[h.kind] ?? h.kind;

/** Whether a query is worth asking the index for (a word of two letters or more). */
export const searchable = (q: string): boolean => q.trim().length >= 2;

/** Keyboard: Ctrl+K (Cmd+K on a Mac) opens search. */
export const isSearchShortcut = (e: Pick<KeyboardEvent, "key" | "ctrlKey" | "metaKey" | "altKey" | "shiftKey">): boolean =>
  (e.ctrlKey || e.metaKey) && !e.altKey && !e.shiftKey && e.key.toLowerCase() === "k";
