// An approval's title in words a person reads at a glance: what will happen and where
// ("Run a command in api", "Change notes.txt", "Fetch a page from example.com"). The exact
// command, diff or URL sits below it; the tool and capability under Details.
import type { Effect } from "../../api/generated/bindings";
import { basename } from "../../lib/format";

/** The host of `url`, or the URL itself when it does not parse. */
export function hostOf(url: string): string {
  try {
    return new URL(url).host || url;
  } catch {
    return url;
  }
}

export function approvalTitle(effect: Effect, tool: string): string {
  switch (effect.kind) {
    case "command":
      return `Run a command in ${basename(effect.cwd)}`;
    case "diff":
      return `Change ${basename(effect.path)}`;
    case "delete":
      return `Delete ${basename(effect.path)}`;
    case "fetch":
      return `Fetch a page from ${hostOf(effect.url)}`;
    case "memory":
      return effect.scope === "global" ? "Remember a note for every workspace" : "Remember a note for this workspace";
    default:
      return `Use ${tool}`;
  }
}
