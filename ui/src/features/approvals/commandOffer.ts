// What a command approval offers to keep: the part the rules did not cover and the rules
// "Always allow" would add (one per uncovered part; none when the command is not plain).
import { useEffect, useState } from "preact/hooks";
import { commandOffer } from "../../api/commands";
import type { CommandAsk } from "../../api/generated/bindings";

export const SHELL_EXECUTE = "shell:execute";

/** The offer for a pending command approval; `null` for any other call or while loading. */
export function useCommandOffer(approvalId: number, capability: string | null): CommandAsk | null {
  const [offer, setOffer] = useState<CommandAsk | null>(null);
  useEffect(() => {
    setOffer(null);
    if (capability !== SHELL_EXECUTE) return;
    let live = true;
    commandOffer(approvalId)
      .then((o) => live && setOffer(o))
      .catch(() => live && setOffer(null));
    return () => {
      live = false;
    };
  }, [approvalId, capability]);
  return offer;
}

/** "`cargo test *`", "`cargo build *` and `cargo test *`", "`a`, `b` and `c`". */
export function ruleList(rules: string[]): string {
  const quoted = rules.map((r) => `\`${r}\``);
  if (quoted.length <= 1) return quoted.join("");
  return `${quoted.slice(0, -1).join(", ")} and ${quoted[quoted.length - 1]}`;
}

/** "added 2 Dec" (with the year when it is not this year's). */
export function addedOn(stamp: string, now: Date = new Date()): string {
  const t = new Date(stamp);
  if (Number.isNaN(t.getTime())) return `added ${stamp}`;
  const day = t.getUTCDate();
  const month = t.toLocaleString("en-GB", { month: "short", timeZone: "UTC" });
  const year = t.getUTCFullYear() === now.getUTCFullYear() ? "" : ` ${t.getUTCFullYear()}`;
  return `added ${day} ${month}${year}`;
}
