// Narrowing for the JSON the runtime carries untyped (`Value`: an entry's content, a
// submission's content, a call's arguments). Type guards, never casts: a field that is
// not what the UI reads is absent.
import type { ToolCall, Value } from "./generated/bindings";

export type JsonObject = { [key in string]: Value };

export function objectOf(v: Value | undefined): JsonObject | null {
  return v !== null && v !== undefined && typeof v === "object" && !Array.isArray(v) ? v : null;
}

/** `v[key]` when it is text. */
export function textOf(v: Value | undefined, key: string): string | null {
  const f = objectOf(v)?.[key];
  return typeof f === "string" ? f : null;
}

/** `v[key]` when it is true or false. */
export function flagOf(v: Value | undefined, key: string): boolean | null {
  const f = objectOf(v)?.[key];
  return typeof f === "boolean" ? f : null;
}

function isToolCall(v: Value): v is ToolCall & JsonObject {
  const o = objectOf(v);
  return o !== null && typeof o.id === "string" && typeof o.name === "string" && typeof o.arguments === "string";
}

/** An assistant entry's tool calls (`content.tool_calls`), those of the right shape. */
export function toolCallsOf(v: Value | undefined): ToolCall[] {
  const list = objectOf(v)?.tool_calls;
  return Array.isArray(list) ? list.filter(isToolCall) : [];
}
