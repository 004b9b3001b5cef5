// The header's context ring: how full the model's window is for the next request, at a
// glance. It never shows more than the window (a full ring is full, red); the figures and
// the actions are in the popover it opens.
import type { ContextUse } from "../../api/generated/bindings";
import { meterLevel, meterPercent } from "./meter";

const R = 7;
const CIRCUMFERENCE = 2 * Math.PI * R;

export function ContextRing({ use }: { use: ContextUse | null }) {
  const percent = use ? meterPercent(use) : 0;
  const level = use ? meterLevel(use) : "ok";
  return (
    <span class={`context-ring level-${level}`} data-testid="context-ring" data-percent={use ? percent : ""}>
      <svg width="18" height="18" viewBox="0 0 18 18" aria-hidden="true">
        <circle class="ring-track" cx="9" cy="9" r={R} />
        <circle
          class="ring-fill"
          cx="9"
          cy="9"
          r={R}
          stroke-dasharray={`${(CIRCUMFERENCE * percent) / 100} ${CIRCUMFERENCE}`}
          transform="rotate(-90 9 9)"
        />
      </svg>
      <span class="ring-text">{use ? `${percent}%` : "…"}</span>
    </span>
  );
}
