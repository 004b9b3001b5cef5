import { describe, expect, it } from "vitest";
import type { SearchHit } from "../../api/generated/bindings";
import { parseRoute } from "../../lib/route";
import { hitHref, hitSource, isSearchShortcut, searchable, snippetParts } from "./search";

const hit: SearchHit = {
  entry_id: 42,
  session_id: 7,
  task_id: 9,
  kind: "tool_result",
  session_title: "Fix the build",
  workspace: "/w",
  created_at: "",
  snippet: "…cannot find \u0002frobnicate\u0003 in this scope",
};

describe("a search hit", () => {
  it("shows the matching line with the match marked", () => {
    expect(snippetParts(hit.snippet)).toEqual([
      { text: "…cannot find ", mark: false },
      { text: "frobnicate", mark: true },
      { text: " in this scope", mark: false },
    ]);
    expect(snippetParts("no marks")).toEqual([{ text: "no marks", mark: false }]);
  });

  it("opens its session at that entry", () => {
    expect(hitHref(hit)).toBe("#/session/7/entry/42");
    expect(parseRoute(hitHref(hit))).toEqual({ name: "session", id: 7, entry: 42 });
    expect(parseRoute("#/session/7")).toEqual({ name: "session", id: 7 });
    expect(hitSource(hit)).toBe("Tool output");
  });

  it("is asked for from two letters, and Ctrl+K opens search", () => {
    expect(searchable(" c ")).toBe(false);
    expect(searchable("ca")).toBe(true);
    const key = { key: "k", ctrlKey: true, metaKey: false, altKey: false, shiftKey: false };
    expect(isSearchShortcut(key)).toBe(true);
    expect(isSearchShortcut({ ...key, key: "K" })).toBe(true);
    expect(isSearchShortcut({ ...key, ctrlKey: false })).toBe(false);
    expect(isSearchShortcut({ ...key, shiftKey: true })).toBe(false);
  });
});
