// Per-capability policy as the settings screen shows it: allow, deny, or the default
// (read/list allowed, the rest asks). Other rules in the workspace's list (areas like
// `shell`, or `*`) are kept as they are.
import type { PolicyRules } from "../../api/generated/bindings";

export const CAPABILITIES = [
  { id: "fs:read", label: "Read files" },
  { id: "fs:list", label: "List folders" },
  { id: "fs:write", label: "Write files" },
  { id: "fs:delete", label: "Delete files" },
  { id: "shell:execute", label: "Run commands" },
  { id: "net:network", label: "Use the network" },
  { id: "mcp", label: "MCP tools (all)" },
] as const;

export type Choice = "allow" | "default" | "deny";

export function choiceOf(rules: PolicyRules, capability: string): Choice {
  if (rules.deny.includes(capability)) return "deny";
  if (rules.allow.includes(capability)) return "allow";
  return "default";
}

export function withChoice(rules: PolicyRules, capability: string, choice: Choice): PolicyRules {
  const allow = rules.allow.filter((r) => r !== capability);
  const deny = rules.deny.filter((r) => r !== capability);
  if (choice === "allow") allow.push(capability);
  if (choice === "deny") deny.push(capability);
  return { allow, deny };
}

/** What the default does for a capability without a rule. */
export function defaultOf(capability: string): string {
  return capability === "fs:read" || capability === "fs:list" ? "allowed" : "asks first";
}
