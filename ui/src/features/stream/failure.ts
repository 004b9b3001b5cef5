// What a failure's buttons can do about it: Open Settings only where a setting is the
// cause or the cure (the model server, the key, the model, the built-in model).
import type { ErrorKind } from "../../api/generated/bindings";

const SETTINGS_HELP: ReadonlySet<ErrorKind> = new Set<ErrorKind>([
  "no_model",
  "local_model",
  "model_auth",
  "model_not_found",
  "model_connect",
  "model_timeout",
  "model_server",
  "model_request",
  "model_config",
  "model_invalid_response",
  "model_context_overflow",
  "keychain",
  "settings",
  "invalid_config",
]);

/** Whether Open Settings helps with a failure of this kind (unknown kind: it may). */
export function settingsHelp(kind: ErrorKind | undefined): boolean {
  return kind === undefined || SETTINGS_HELP.has(kind);
}
