import { describe, expect, it } from "vitest";
import type { Entry, Task } from "../../api/generated/bindings";
import { historyItems } from "./history";
import { settingsHelp } from "./failure";

const task: Task = {
  id: 3, session_id: 1, goal: "say hi", trigger: "chat", provider: null, follow_up_of: null,
  status: "failed", step_count: 1, prompt_tokens: 0, completion_tokens: 0, active_ms: 0, grants: [], mcp: [],
  final_answer: null, error: "model server rejected the API key (401): invalid api key", created_at: "",
  started_at: null, finished_at: null, extra: { steps: 0, seconds: 0, tokens: 0, usd: 0 }, pause: null,
};
const entries: Entry[] = [{ id: 1, session_id: 1, task_id: 3, kind: "user", content: { text: "say hi" }, created_at: "" }];

describe("a failed task read back from the store", () => {
  it("keeps its words: the recorded sentence, kind and detail, not a general line", () => {
    const items = historyItems(task, entries, {
      task_id: 3,
      kind: "model_auth",
      summary: "The model server at 127.0.0.1:9 did not accept the API key.",
      error: "model server rejected the API key (401): invalid api key",
    });
    const end = items[items.length - 1];
    expect(end).toMatchObject({
      kind: "notice",
      tone: "error",
      text: "The model server at 127.0.0.1:9 did not accept the API key.",
      errorKind: "model_auth",
      detail: "model server rejected the API key (401): invalid api key",
      failed: true,
    });
    expect(items.some((i) => "text" in i && i.text === "The task failed.")).toBe(false);
  });

  it("says it generally only when no failure was recorded", () => {
    const end = historyItems(task, entries).at(-1);
    expect(end).toMatchObject({ text: "The task failed.", failed: true });
  });
});

describe("Open Settings on a failure", () => {
  it("is offered where a setting helps, not for a failure no setting cures", () => {
    expect(settingsHelp("model_auth")).toBe(true);
    expect(settingsHelp("model_connect")).toBe(true);
    expect(settingsHelp("no_model")).toBe(true);
    expect(settingsHelp("record")).toBe(false);
    expect(settingsHelp("lease_lost")).toBe(false);
    expect(settingsHelp(undefined)).toBe(true);
  });
});
