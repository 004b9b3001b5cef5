// The approval a run waits for, answered from its tool card too: Approve, Reject… and
// Edit… sit in the card, so a person who closed the dialog (Esc) keeps the transcript in
// view and answers from where they read. Reject… and Edit… open the dialog at that step.
import { createContext } from "preact";
import { useContext, useState } from "preact/hooks";

export type ApprovalStep = "ask" | "edit" | "reject";

export interface CardApproval {
  /** The call the run waits on. */
  callId: string;
  approve: () => Promise<void>;
  review: (step: ApprovalStep) => void;
}

export const CardApprovalContext = createContext<CardApproval | null>(null);

export function CardApprovalButtons({ callId }: { callId: string }) {
  const pending = useContext(CardApprovalContext);
  const [busy, setBusy] = useState(false);
  if (!pending || pending.callId !== callId) return null;
  const approve = async () => {
    setBusy(true);
    try {
      await pending.approve();
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="card-approval" role="group" aria-label="Answer this approval" data-testid="card-approval">
      <button type="button" class="primary" data-testid="card-approve" disabled={busy} onClick={() => void approve()}>
        Approve
      </button>
      <button type="button" data-testid="card-edit" disabled={busy} onClick={() => pending.review("edit")}>
        Edit…
      </button>
      <button type="button" class="danger" data-testid="card-reject" disabled={busy} onClick={() => pending.review("reject")}>
        Reject…
      </button>
      <button type="button" class="link" data-testid="card-review" disabled={busy} onClick={() => pending.review("ask")}>
        Review
      </button>
    </div>
  );
}
