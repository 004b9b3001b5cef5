import { describe, expect, it } from "vitest";
import type { Entry, Task } from "../../api/generated/bindings";
import { historyItems } from "./history";

const task: Task = {
  id: 3, session_id: 1, goal: "write it", trigger: "chat", provider: null, follow_up_of: null,
  status: "completed", step_count: 1, prompt_tokens: 0, completion_tokens: 0, active_ms: 0, grants: [], mcp: [],
  final_answer: "Done.", error: null, created_at: "",
  started_at: null, finished_at: null, extra: { steps: 0, seconds: 0, tokens: 0, usd: 0 }, pause: null,
};

describe("a rewound task read back from the store", () => {
  it("keeps the person's message with its entry, marked as set aside, and so its answer", () => {
    const entries: Entry[] = [
      { id: 7, session_id: 1, task_id: 3, kind: "user", content: { text: "write it" }, created_at: "", rewound_by: 12 },
      { id: 8, session_id: 1, task_id: 3, kind: "assistant", content: { text: "Done." }, created_at: "", rewound_by: 12 },
    ];
    const items = historyItems(task, entries);
    expect(items[0]).toMatchObject({ kind: "user", entryId: 7, rewound: true, text: "write it" });
    expect(items[1]).toMatchObject({ kind: "assistant", rewound: true });
  });

  it("offers the entry of a message that is still in the conversation", () => {
    const entries: Entry[] = [{ id: 7, session_id: 1, task_id: 3, kind: "user", content: { text: "write it" }, created_at: "" }];
    expect(historyItems(task, entries)[0]).toMatchObject({ kind: "user", entryId: 7, rewound: false });
  });
});
