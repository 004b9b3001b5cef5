import { describe, expect, it } from "vitest";
import type { Entry } from "../../api/generated/bindings";
import type { JsonObject } from "../../api/json";
import { historyItems } from "../stream/history";
import { itemKeyOf } from "./found";

const entry = (id: number, kind: string, content: JsonObject): Entry => ({ id, session_id: 1, task_id: 7, kind, content, created_at: "" });
const entries = [
  entry(1, "user", { text: "run the tests" }),
  entry(2, "assistant", { text: "", tool_calls: [{ id: "c1", name: "run_command", arguments: '{"command":"cargo test"}' }] }),
  entry(3, "tool_result", { call_id: "c1", text: "test result: ok", is_error: false }),
  entry(4, "assistant", { text: "They pass." }),
];

describe("the item a search hit opens", () => {
  it("is the message itself, or for tool output the card of its call, as the transcript keys them", () => {
    const task = {
      id: 7, session_id: 1, goal: "", trigger: "chat" as const, provider: null, follow_up_of: null, status: "completed" as const,
      step_count: 2, prompt_tokens: 0, completion_tokens: 0, active_ms: 0, grants: [], mcp: [], final_answer: "They pass.",
      error: null, created_at: "", started_at: null, finished_at: null, extra: { steps: 0, seconds: 0, tokens: 0, usd: 0 }, pause: null,
    };
    const keys = historyItems(task, entries).map((i) => i.key);
    for (const id of [1, 3, 4]) {
      const key = itemKeyOf(entries, id);
      expect(key).not.toBeNull();
      expect(keys).toContain(key);
    }
    expect(itemKeyOf(entries, 3)).toBe("e2:c1");
    expect(itemKeyOf(entries, 99)).toBeNull();
  });
});
