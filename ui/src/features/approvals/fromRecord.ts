import type { Approval } from "../../api/generated/bindings";
import { objectOf } from "../../api/json";
import type { PendingApproval } from "../stream/items";

/** A stored pending approval (listed after a restart) in the dialog's shape. */
export function fromRecord(a: Approval): PendingApproval {
  return {
    approvalId: a.id,
    taskId: a.task_id,
    callId: a.call_id,
    name: a.tool,
    arguments: objectOf(a.arguments) ?? {},
    capability: a.capability,
    effect: a.effect,
    reason: a.reason,
  };
}
