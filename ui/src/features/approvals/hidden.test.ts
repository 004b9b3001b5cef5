import { describe, expect, it } from "vitest";
import { effectText, hasHidden, visible, visibleJson } from "./hidden";

describe("visible", () => {
  it("escapes controls, bidi and zero-width characters as the CLI does", () => {
    expect(visible("ls -la\nmake\tall")).toBe("ls -la\nmake\tall");
    expect(visible("cp secret /tmp\r\x1b[2K$ ls -la")).toBe("cp secret /tmp\\r\\x1b[2K$ ls -la");
    expect(visible("\x1b]52;c;aGk=\x07")).toBe("\\x1b]52;c;aGk=\\x07");
    expect(visible("a\u009bb\u007f\0")).toBe("a\\x9bb\\x7f\\0");
    expect(visible("rm \u202etxt.exe")).toBe("rm \\u{202e}txt.exe");
    expect(visible("a\u200bb\ufeff")).toBe("a\\u{200b}b\\u{feff}");
    expect(visible("é ✓ 日本")).toBe("é ✓ 日本");
  });
  it("flags an effect with hidden characters", () => {
    expect(hasHidden(effectText({ kind: "command", command: "ls\r\x1b[2Kx", cwd: "/w" }))).toBe(true);
    expect(hasHidden(effectText({ kind: "command", command: "ls -la\necho", cwd: "/w" }))).toBe(false);
  });
  it("writes arguments to edit as JSON without a raw hidden character, parsing back the same", () => {
    const args = { command: "echo \x1b[2J\u202etxt.exe \u{e0041}", note: "é ✓" };
    const text = visibleJson(args);
    expect(hasHidden(text)).toBe(false);
    expect(text).toContain("\\u001b[2J\\u202etxt.exe \\udb40\\udc41");
    expect(text).toContain("é ✓");
    expect(JSON.parse(text)).toEqual(args);
    expect(visibleJson({ a: "plain" })).toBe(JSON.stringify({ a: "plain" }, null, 2));
  });
});
