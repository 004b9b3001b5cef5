// What a session view draws: a flat list of transcript items. Both the live reducer
// (events of a running task) and the history mapping (stored entries) produce these, so a
// task's rendering does not depend on whether it was watched live or read back later.
import type { Effect, ErrorKind } from "../../api/generated/bindings";
import type { JsonObject } from "../../api/json";
import type { CompactionMark } from "../context/marks";

export type ToolStatus =
  | "planned"
  | "running"
  | "waiting_approval"
  | "done"
  | "failed"
  | "rejected";

export type Item =
  /** `entryId`: the stored entry (history only), the place a rewind or fork goes back to;
   *  `rewound`: a rewind set it aside (shown, never sent to the model again). */
  | { kind: "user"; key: string; text: string; entryId?: number; rewound?: boolean }
  | { kind: "assistant"; key: string; text: string; rewound?: boolean }
  | {
      kind: "tool";
      key: string;
      callId: string;
      name: string;
      arguments: string;
      status: ToolStatus;
      output: string | null;
      /** When the call started running (its event's time), for the elapsed time. */
      startedAt?: string;
      /** The diff of a write, from its approval request. */
      diff?: string;
      /** The command rules that let it run without asking ("`cargo test *`, added 2 Dec"). */
      allowedBy?: string;
    }
  | {
      kind: "notice";
      key: string;
      tone: "error" | "info";
      /** A plain sentence (for a failure: the runtime's, from its typed error). */
      text: string;
      /** For a failure: the full error, behind a disclosure. */
      detail?: string;
      /** For a failure: its kind, when the event says it (history does not). */
      errorKind?: ErrorKind;
      /** The run failed: the view offers Retry and Open Settings. */
      failed?: boolean;
    }
  /** The model's view was compacted here (the messages above stay shown). */
  | { kind: "compaction"; key: string; mark: CompactionMark };

export type ToolItem = Extract<Item, { kind: "tool" }>;

/** An approval the run is waiting for, as carried by `approval_required`. */
export interface PendingApproval {
  approvalId: number;
  taskId: number;
  callId: string;
  name: string;
  arguments: JsonObject;
  capability: string | null;
  effect: Effect;
  reason: string;
  /** How the process behind the call is confined ("sandboxed: …" / "NOT sandboxed: …");
   * `null` when the call starts none, `undefined` when the record does not say (a stored
   * approval: the dialog reads it from the task's `approval_required` event). */
  sandbox?: string | null;
}

/** Tool output longer than this many lines is shown collapsed. */
export const COLLAPSE_LINES = 12;
