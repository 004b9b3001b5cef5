import { describe, expect, it } from "vitest";
import { SHORTCUTS, shortcutOf } from "./shortcuts";

const key = (key: string, mods: Partial<Record<"ctrlKey" | "shiftKey" | "altKey" | "metaKey", boolean>> = {}) =>
  ({ key, ctrlKey: false, shiftKey: false, altKey: false, metaKey: false, target: null, ...mods }) as unknown as KeyboardEvent;

describe("keyboard shortcuts", () => {
  it("reads the app-wide ones", () => {
    expect(shortcutOf(key("n", { ctrlKey: true }))).toBe("new-session");
    expect(shortcutOf(key("N", { ctrlKey: true }))).toBe("new-session");
    expect(shortcutOf(key(",", { ctrlKey: true }))).toBe("settings");
    expect(shortcutOf(key("Backspace", { ctrlKey: true, shiftKey: true }))).toBe("stop");
    expect(shortcutOf(key("F1"))).toBe("help");
    expect(shortcutOf(key("?", { shiftKey: true }))).toBe("help");
  });

  it("leaves other keys and the views' own alone", () => {
    expect(shortcutOf(key("n"))).toBeNull();
    expect(shortcutOf(key("Backspace", { ctrlKey: true }))).toBeNull();
    expect(shortcutOf(key("n", { ctrlKey: true, altKey: true }))).toBeNull();
    expect(shortcutOf(key("k", { ctrlKey: true }))).toBeNull();
    expect(shortcutOf(key("Enter", { ctrlKey: true }))).toBeNull();
  });

  it("lists every shortcut once in Help", () => {
    const ids = SHORTCUTS.map((s) => s.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(expect.arrayContaining(["new-session", "search", "settings", "stop", "approve", "close", "help"]));
  });
});
