// Model-controlled text made visible before a person approves it (issue 15), with the
// same rules as the CLI (`src-tauri/protocol/src/visible.rs`): C0, DEL and C1 controls
// as `\x1b`, `\r`, `\0`…; bidi controls and invisible format characters as `\u{202e}`.
// Newlines and tabs stay.
import type { Effect } from "../../api/generated/bindings";

function invisible(c: number): boolean {
  return (
    c === 0x00ad || c === 0x034f || c === 0x061c || c === 0x115f || c === 0x1160 ||
    c === 0x17b4 || c === 0x17b5 || (c >= 0x180b && c <= 0x180f) ||
    (c >= 0x200b && c <= 0x200f) || (c >= 0x2028 && c <= 0x202e) ||
    (c >= 0x2060 && c <= 0x206f) || c === 0x3164 || c === 0xfeff || c === 0xffa0 ||
    (c >= 0xfff9 && c <= 0xfffb) || (c >= 0xe0000 && c <= 0xe007f)
  );
}

function hidden(c: number): boolean {
  const control = c < 0x20 || (c >= 0x7f && c <= 0x9f);
  return (control && c !== 0x0a && c !== 0x09) || invisible(c);
}

export function hasHidden(s: string): boolean {
  for (const ch of s) if (hidden(ch.codePointAt(0) ?? 0)) return true;
  return false;
}

export function visible(s: string): string {
  if (!hasHidden(s)) return s;
  let out = "";
  for (const ch of s) {
    const c = ch.codePointAt(0) ?? 0;
    if (!hidden(c)) out += ch;
    else if (c === 0x0d) out += "\\r";
    else if (c === 0) out += "\\0";
    else if (c < 0x100) out += `\\x${c.toString(16).padStart(2, "0")}`;
    else out += `\\u{${c.toString(16).padStart(4, "0")}}`;
  }
  return out;
}

/**
 * `value` as JSON a person edits: every hidden character written as a JSON `\uXXXX`
 * escape, so the text shows no raw control or bidi character and parses back to the same
 * value (hidden characters only occur inside JSON strings, where an escape means them).
 */
export function visibleJson(value: unknown): string {
  const json = JSON.stringify(value, null, 2) ?? "";
  if (!hasHidden(json)) return json;
  let out = "";
  for (const ch of json) {
    if (!hidden(ch.codePointAt(0) ?? 0)) out += ch;
    else for (let i = 0; i < ch.length; i++) out += `\\u${ch.charCodeAt(i).toString(16).padStart(4, "0")}`;
  }
  return out;
}

/** The text of an effect a person reads: what `hasHidden` is asked about. */
export function effectText(effect: Effect): string {
  switch (effect.kind) {
    case "diff":
      return `${effect.path}\n${effect.diff}`;
    case "command":
      return `${effect.command}\n${effect.cwd}`;
    case "fetch":
      return effect.url;
    case "delete":
      return effect.path;
    default:
      return "";
  }
}

export function HiddenWarning({ texts }: { texts: string[] }) {
  if (!texts.some(hasHidden)) return null;
  return (
    <p class="notice error" role="alert" data-testid="hidden-characters">
      This command contains hidden characters (control, bidi or zero-width). They are shown
      escaped, as <code>\x1b</code> or <code>{"\\u{202e}"}</code>.
    </p>
  );
}
