// What the window says about the built-in model: its server's state, a download's
// progress, a run's model. Pure, so the wording is tested without a window.
import type { BuiltinModel, LocalServerStatus, ModelRow, PullProgressEvent } from "../../api/generated/bindings";

/** The provider name runs with the built-in model carry (`local:<model name>`). */
export const LOCAL_PROVIDER = "local";

/** The model a run's provider label names, and whether it ran on this computer. */
export function runModelOf(label: string | null | undefined): { model: string; local: boolean } | null {
  if (!label) return null;
  const colon = label.indexOf(":");
  if (colon < 0) return { model: label, local: false };
  const provider = label.slice(0, colon);
  const model = label.slice(colon + 1);
  if (!model) return null;
  return { model, local: provider === LOCAL_PROVIDER };
}

/** "SmolLM2 135M": the display name, with the parameters when it does not say them already. */
export function builtinName(b: Pick<BuiltinModel, "display_name" | "parameters">): string {
  const p = b.parameters;
  if (!p || b.display_name.toLowerCase().includes(p.toLowerCase())) return b.display_name;
  return `${b.display_name} ${p}`;
}

/** The name a person reads for a kept model, when the list knows it. */
export function displayNameOf(model: string, rows: ModelRow[]): string {
  const row = rows.find((r) => r.name === model);
  return row ? builtinName(row) : model;
}

/** One line for the server's state. */
export function describeServer(s: LocalServerStatus): string {
  switch (s.state) {
    case "stopped":
      return "Stopped — it starts when a conversation needs it.";
    case "starting":
      return `Starting ${s.model}…`;
    case "ready":
      return `Ready: ${s.model} on port ${s.port}, using ${s.memory_mib} MiB of memory, ${s.context.toLocaleString("en-US")}-token context.`;
    case "crashed":
      return `${s.model} stopped unexpectedly: ${s.reason}`;
  }
}

/** How far a download is, 0–100, or null while its size is unknown. */
export function percentOf(p: PullProgressEvent): number | null {
  if (p.total_mib === null || p.total_mib <= 0) return null;
  return Math.min(100, Math.max(0, ((p.done_mib ?? 0) / p.total_mib) * 100));
}

const mib = (n: number) => (n >= 1024 ? `${(n / 1024).toFixed(1)} GiB` : n >= 10 ? `${Math.round(n)} MiB` : `${n.toFixed(1)} MiB`);

/** "12 MiB of 98 MiB · 3.1 MiB/s · about 28 s left". */
// A figure that is not a number (serde writes NaN as null) reads as none.
export function describeProgress(p: PullProgressEvent): string {
  const done = p.done_mib ?? 0;
  const parts = [p.total_mib !== null ? `${mib(done)} of ${mib(p.total_mib)}` : `${mib(done)}`];
  if (p.rate_mib_s !== null && p.rate_mib_s > 0) parts.push(`${mib(p.rate_mib_s)}/s`);
  if (p.eta_secs !== null && Number.isFinite(p.eta_secs)) parts.push(`about ${duration(p.eta_secs)} left`);
  return parts.join(" · ");
}

function duration(secs: number): string {
  const s = Math.max(0, Math.round(secs));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

/** "98 MiB" or "4.1 GiB". */
export const sizeOf = (mibs: number): string => mib(mibs);
