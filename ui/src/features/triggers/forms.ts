// What the trigger and MCP forms turn into before they go to the shell: a command line
// split into a program and its arguments, `NAME=value` lines into an environment, a hook's
// URL, and when a schedule fires next, in words. The runtime validates everything again;
// these only catch what the form itself can tell.
import type { NewMcpServer } from "../../api/generated/bindings";

/**
 * Splits a command line the way a POSIX shell would split words: whitespace separates,
 * single quotes keep everything literally, double quotes keep spaces (a backslash escapes
 * `"` and `\` inside them), a backslash outside quotes escapes the next character.
 * Throws on an unterminated quote.
 */
export function splitArgs(line: string): string[] {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  let i = 0;
  while (i < line.length) {
    const c = line[i];
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw new Error("a single quote is not closed");
      word += line.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (c === '"') {
      i++;
      let closed = false;
      while (i < line.length) {
        const d = line[i];
        if (d === '"') {
          closed = true;
          i++;
          break;
        }
        if (d === "\\" && (line[i + 1] === '"' || line[i + 1] === "\\")) {
          word += line[i + 1];
          i += 2;
        } else {
          word += d;
          i++;
        }
      }
      if (!closed) throw new Error("a double quote is not closed");
      inWord = true;
    } else if (c === "\\" && i + 1 < line.length) {
      word += line[i + 1];
      inWord = true;
      i += 2;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
      i++;
    } else {
      word += c;
      inWord = true;
      i++;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/** `NAME=value` lines (blank lines ignored) into pairs; throws on a line without `=`. */
export function parseEnv(text: string): [string, string][] {
  const pairs: [string, string][] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line) continue;
    const eq = line.indexOf("=");
    if (eq <= 0) throw new Error(`an environment line must be NAME=value, got "${line}"`);
    pairs.push([line.slice(0, eq).trim(), line.slice(eq + 1)]);
  }
  return pairs;
}

export interface McpForm {
  name: string;
  /** "" for every workspace. */
  workspace: string;
  kind: "stdio" | "http";
  /** The program and its arguments, as typed (split by `splitArgs`). */
  commandLine: string;
  env: string;
  url: string;
  capability: string;
  allowReadOnly: boolean;
  startupTimeout: string;
  callTimeout: string;
}

export const EMPTY_MCP_FORM: McpForm = {
  name: "",
  workspace: "",
  kind: "stdio",
  commandLine: "",
  env: "",
  url: "",
  capability: "",
  allowReadOnly: false,
  startupTimeout: "",
  callTimeout: "",
};

function seconds(label: string, raw: string): number | null {
  const t = raw.trim();
  if (!t) return null;
  const n = Number(t);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${label} must be a whole number of seconds`);
  return n;
}

/** The form as the shell takes it; throws with a message for what the form can tell is wrong. */
export function toNewMcpServer(f: McpForm): NewMcpServer {
  const name = f.name.trim();
  if (!name) throw new Error("give the server a name");
  let command: string | null = null;
  let args: string[] = [];
  let env: [string, string][] = [];
  let url: string | null = null;
  if (f.kind === "stdio") {
    const words = splitArgs(f.commandLine);
    if (words.length === 0) throw new Error("give the command that starts the server");
    [command, ...args] = words;
    env = parseEnv(f.env);
  } else {
    url = f.url.trim();
    if (!url) throw new Error("give the server's URL");
  }
  return {
    name,
    workspace: f.workspace.trim() || null,
    command,
    args,
    env,
    url,
    capability: f.capability.trim() || null,
    allow_read_only: f.allowReadOnly,
    startup_timeout_secs: seconds("The startup timeout", f.startupTimeout),
    call_timeout_secs: seconds("The call timeout", f.callTimeout),
  };
}

/** A server's command line for display, quoting what `splitArgs` would otherwise split. */
export function commandLineOf(command: string, args: string[]): string {
  const quote = (w: string) => (w === "" || /[\s'"\\]/.test(w) ? `'${w.replace(/'/g, `'\\''`)}'` : w);
  return [command, ...args].map(quote).join(" ");
}

/** Where a hook listens: `http://127.0.0.1:PORT/hooks/NAME`. */
export function hookUrl(base: string, name: string): string {
  return `${base.replace(/\/+$/, "")}/hooks/${encodeURIComponent(name)}`;
}

/** "in 5 min", "in 3 h 20 min", "in 2 days", "now". */
export function relativeTime(at: Date, now: Date): string {
  const mins = Math.round((at.getTime() - now.getTime()) / 60000);
  if (mins <= 0) return "now";
  if (mins < 60) return `in ${mins} min`;
  const hours = Math.floor(mins / 60);
  if (hours < 48) {
    const rest = mins % 60;
    return rest ? `in ${hours} h ${rest} min` : `in ${hours} h`;
  }
  return `in ${Math.round(hours / 24)} days`;
}

/** When a schedule fires next, for its row: the UTC time and how soon. */
export function describeNextFire(iso: string | null, paused: boolean, now: Date): string {
  if (paused) return "paused";
  if (!iso) return "never";
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return iso;
  const utc = at.toISOString().slice(0, 16).replace("T", " ");
  return `${utc} UTC (${relativeTime(at, now)})`;
}
