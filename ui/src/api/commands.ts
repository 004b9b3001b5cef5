// The only module that talks to the shell. Components call these functions, never the
// bindings or `invoke` directly. The commands and their types are generated from Rust
// (generated/bindings.ts) and used as they are; untyped JSON (`Value`) is narrowed where it
// is read (json.ts).
import { Channel } from "@tauri-apps/api/core";
import { listen } from "@tauri-apps/api/event";
import { commands } from "./generated/bindings";
import type * as Wire from "./generated/bindings";
import type {
  AboutInfo,
  Admitted,
  ApprovalAnswer,
  CreatedWebhook,
  DesktopSettings,
  LimitsForm,
  McpServer,
  NewMcpServer,
  NewSchedule,
  NewWatch,
  NewWebhook,
  PolicyRules,
  ProviderForm,
  Schedule,
  Session,
  Setup,
  Task,
  TaskEvent,
  TriggerStatus,
  Watch,
  Webhook,
  WhenBusy,
} from "./generated/bindings";

export const listSessions = (): Promise<Session[]> => commands.listSessions();

/** Renames a session; resolves with it as stored. */
export const renameSession = (sessionId: number, title: string): Promise<Session> =>
  commands.renameSession(sessionId, title);

/** Deletes a session and everything in it; refused (`session_active`) while it works. */
export const deleteSession = (sessionId: number): Promise<null> => commands.deleteSession(sessionId);

/** Asks where (the system's save dialog) and writes the session there: Markdown, or JSON
 *  for a `.json` name. Resolves with the path written, or null when the person cancelled. */
export const exportSession = (sessionId: number): Promise<string | null> => commands.exportSession(sessionId);

export const sessionHistory = (sessionId: number, tasks: number) => commands.sessionHistory(sessionId, tasks);

export const taskEvents = (taskId: number) => commands.taskEvents(taskId);

export const pendingApprovals = () => commands.pendingApprovals();

export const cancelTask = (taskId: number) => commands.cancelTask(taskId).then(() => undefined);

/** Continues a paused task with more budget (and, optionally, a steer for the agent). */
export const continueTask = (taskId: number, raise: Wire.Raise, steer: string | null) =>
  commands.continueTask(taskId, raise, steer).then(() => undefined);

/** What a paused task's card says (what ran out, how much was used) and the raise it proposes. */
export const pauseOffer = (taskId: number): Promise<Wire.PauseOffer> => commands.pauseOffer(taskId);

/** The newest transcript entries matching what was typed, in `workspace` only when given. */
export const searchEntries = (query: string, workspace: string | null, limit: number): Promise<Wire.SearchHit[]> =>
  commands.searchEntries(query, workspace, limit);

/** Stops a paused task: `budget_exceeded`, or `cancelled` after the agent repeated itself. */
export const stopTask = (taskId: number) => commands.stopTask(taskId);

export const taskCost = (taskId: number) => commands.taskCost(taskId);

export const getTask = (taskId: number): Promise<Task> => commands.getTask(taskId);

/** Creates and starts a task in a new session; resolves with its id before the model is asked anything. */
export function createTask(goal: string, workspace: string, plan = false): Promise<number> {
  return commands.createTask({ goal, workspace, session_id: null, follow_up_of: null, plan });
}

/**
 * Says something in a session: an idle session starts a run (`started`), a busy one
 * queues it as a follow-up or a steer.
 */
export function say(sessionId: number, text: string, whenBusy: WhenBusy, requestId: string): Promise<Admitted> {
  return commands.say({ session_id: sessionId, text, when_busy: whenBusy, request_id: requestId });
}

export const sessionInbox = (sessionId: number) => commands.sessionInbox(sessionId);

export const withdrawSubmission = (submissionId: number) => commands.withdrawSubmission(submissionId);

export function resolveApproval(approvalId: number, answer: ApprovalAnswer): Promise<number> {
  return commands.resolveApproval(approvalId, answer);
}

/**
 * Streams a task's events: the persisted ones after `afterSequence`, then live ones
 * (deltas coalesced by the runtime) until a terminal event. Returns a function that stops
 * delivering to `onEvent`.
 */
export async function subscribeTask(
  taskId: number,
  afterSequence: number,
  onEvent: (ev: TaskEvent) => void,
): Promise<() => void> {
  let active = true;
  const channel = new Channel<TaskEvent>();
  channel.onmessage = (ev) => {
    if (active) onEvent(ev);
  };
  await commands.subscribeTask(taskId, afterSequence, channel);
  return () => {
    active = false;
  };
}

/**
 * Follows the runtime's change feed (tasks, inboxes, approvals, triggers; `refresh` for
 * another process's commits). Returns a function that stops delivering to `onChange`.
 */
export async function followChanges(onChange: (c: Wire.Change) => void): Promise<() => void> {
  let active = true;
  const channel = new Channel<Wire.Change>();
  channel.onmessage = (c) => {
    if (active) onChange(c);
  };
  await commands.followChanges(channel);
  return () => {
    active = false;
  };
}

// The context window (issue 13).
/** Used / window tokens of the session's next request, and where the window came from. */
export const contextUse = (sessionId: number) => commands.contextUse(sessionId);
/** The session's compactions and fresh contexts: the transcript's dividers. */
export const contextMarks = (sessionId: number) => commands.contextMarks(sessionId);
/** Compacts an idle session's context now; rejects with `conversation_busy` while it runs. */
export const compactNow = (sessionId: number) => commands.compactNow(sessionId);
/** Starts a new model view for the session; the transcript keeps what came before. */
export const freshContext = (sessionId: number) => commands.freshContext(sessionId);

// Settings.
export const setupStatus = (): Promise<Setup> => commands.setupStatus();
export const providerSettings = (): Promise<ProviderForm> => commands.providerSettings();
/** The provider and limit fields an environment variable overrides (never saved). */
export const settingOverrides = (): Promise<Wire.EnvOverride[]> => commands.settingOverrides();
/** Model servers already running on this computer (the first-run welcome). */
export const localServers = (): Promise<Wire.FoundServer[]> => commands.localServers();

export const setProviderSettings = (s: ProviderForm) => commands.setProviderSettings(s).then(() => undefined);
/** Files the key in the OS keychain. There is no way to read it back. */
export const setApiKey = (key: string) => commands.setApiKey(key).then(() => undefined);
export const deleteApiKey = (): Promise<boolean> => commands.deleteApiKey();
export const apiKeyStored = (): Promise<boolean> => commands.apiKeyStored();
export const testConnection = (): Promise<string> => commands.testConnection();
/** The models the server at `baseUrl` lists (`GET /models`), asked with the stored key. */
export const listModels = (baseUrl: string): Promise<string[]> => commands.listModels(baseUrl);
/** The secret variables the MCP servers declare, each with whether a value is stored. */
export const mcpSecrets = (): Promise<Wire.McpSecret[]> => commands.mcpSecrets();
/** Files an MCP server's secret in the OS keychain. There is no way to read it back. */
export const setMcpSecret = (server: string, variable: string, value: string) =>
  commands.setMcpSecret(server, variable, value).then(() => undefined);
export const limits = (): Promise<LimitsForm> => commands.limits();
export const setLimits = (l: LimitsForm) => commands.setLimits(l).then(() => undefined);
export const sessionTitles = (): Promise<Wire.SessionTitles> => commands.sessionTitles();
export const setSessionTitles = (t: Wire.SessionTitles) => commands.setSessionTitles(t).then(() => undefined);
/** Prices, the money budgets as stored, and today's spend against the budgets runs use. */
export const moneySettings = (): Promise<Wire.MoneySettings> => commands.moneySettings();
/** Sets one model's prices from the text typed; the runtime refuses a bad figure and saves nothing. */
export const setPrice = (price: Wire.PriceForm): Promise<Wire.PriceRow> => commands.setPrice(price);
export const deletePrice = (model: string): Promise<boolean> => commands.deletePrice(model);
/** Saves the three money budgets from the text typed (blank: none). */
export const setMoneyBudgets = (b: Wire.MoneyBudgetsForm) => commands.setMoneyBudgets(b).then(() => undefined);
export const policyRules = (workspace: string): Promise<PolicyRules> => commands.policyRules(workspace);
export const setPolicyRules = (workspace: string, rules: PolicyRules) =>
  commands.setPolicyRules(workspace, rules).then(() => undefined);

// The built-in model: the models kept on this computer, its server, its settings.
/** Every model kept on this computer, the one runs use marked. */
export const localModels = (): Promise<Wire.ModelRow[]> => commands.localModels();
/** Adds a GGUF file; refused (with the runtime's sentence) when it is not GGUF or too large. */
export const importModel = (path: string): Promise<Wire.ModelRow> => commands.importModel(path);
/**
 * Downloads a model from `url`, calling `onProgress` as it goes; resolves with the model
 * once it is checked and kept, or null when `cancelPull(url)` stopped it.
 */
export function pullModel(
  url: string,
  sha256: string | null,
  onProgress: (p: Wire.PullProgressEvent) => void,
): Promise<Wire.ModelRow | null> {
  const channel = new Channel<Wire.PullProgressEvent>();
  channel.onmessage = onProgress;
  return commands.pullModel(url, sha256, null, channel);
}
export const cancelPull = (url: string): Promise<boolean> => commands.cancelPull(url);
export const chooseModel = (name: string) => commands.useModel(name).then(() => undefined);
export const removeModel = (name: string) => commands.removeModel(name).then(() => undefined);
export const localServerStatus = (): Promise<Wire.LocalServerStatus> => commands.localServerStatus();
export const localModelForm = (): Promise<Wire.LocalModelForm> => commands.localModelForm();
export const saveLocalModelForm = (f: Wire.LocalModelForm) => commands.saveLocalModelForm(f).then(() => undefined);

/** Follows the built-in model's server (`local-server-status`, src-tauri/shell/models.rs). */
export async function followLocalServer(onStatus: (s: Wire.LocalServerStatus) => void): Promise<() => void> {
  return listen<Wire.LocalServerStatus>("local-server-status", (e) => onStatus(e.payload));
}

/** The native file picker for a GGUF model; null when the person cancels. */
export async function pickModelFile(): Promise<string | null> {
  const { open } = await import("@tauri-apps/plugin-dialog");
  const picked = await open({
    directory: false,
    multiple: false,
    title: "Choose a GGUF model file",
    filters: [{ name: "GGUF model", extensions: ["gguf"] }],
  });
  return typeof picked === "string" ? picked : null;
}

// Triggers (webhooks, schedules, file watches) and MCP servers.
/** Where the webhook listener runs (null while it does not) and whether all triggers are paused. */
export const triggerStatus = (): Promise<TriggerStatus> => commands.triggerStatus();
export const setTriggersPaused = (paused: boolean) => commands.setTriggersPaused(paused).then(() => undefined);
export const listWebhooks = (): Promise<Webhook[]> => commands.listWebhooks();
/** The answer carries the hook's token: it is shown this once and cannot be read back. */
export const createWebhook = (hook: NewWebhook): Promise<CreatedWebhook> => commands.createWebhook(hook);
export const setWebhookPaused = (name: string, paused: boolean) =>
  commands.setWebhookPaused(name, paused).then(() => undefined);
export const deleteWebhook = (name: string) => commands.deleteWebhook(name).then(() => undefined);
export const listSchedules = (): Promise<Schedule[]> => commands.listSchedules();
export const createSchedule = (s: NewSchedule): Promise<Schedule> => commands.createSchedule(s);
export const setSchedulePaused = (id: number, paused: boolean) =>
  commands.setSchedulePaused(id, paused).then(() => undefined);
export const deleteSchedule = (id: number) => commands.deleteSchedule(id).then(() => undefined);
export const listWatches = (): Promise<Watch[]> => commands.listWatches();
export const createWatch = (w: NewWatch): Promise<Watch> => commands.createWatch(w);
export const setWatchPaused = (id: number, paused: boolean) => commands.setWatchPaused(id, paused).then(() => undefined);
export const deleteWatch = (id: number) => commands.deleteWatch(id).then(() => undefined);
export const listMcpServers = (): Promise<McpServer[]> => commands.listMcpServers();
export const addMcpServer = (s: NewMcpServer): Promise<McpServer> => commands.addMcpServer(s);
export const deleteMcpServer = (name: string, workspace: string | null) =>
  commands.deleteMcpServer(name, workspace).then(() => undefined);

// The workspace's rules: instructions in effect, memories, skills (issue 18).
export const rulesInEffect = (workspace: string, session: number | null): Promise<Wire.RulesInEffect> =>
  commands.rulesInEffect(workspace, session);

/** One instruction file in effect, read now; any path not in that list is refused. */
export const instructionText = (workspace: string, session: number | null, path: string): Promise<Wire.InstructionText> =>
  commands.instructionText(workspace, session, path);

/** Opens one instruction file in effect in the desktop's default app. */
export const openInstruction = (workspace: string, session: number | null, path: string) =>
  commands.openInstruction(workspace, session, path);
export const addMemory = (scope: Wire.MemoryScope, workspace: string | null, text: string): Promise<Wire.Memory> =>
  commands.addMemory(scope, workspace, text);
export const editMemory = (id: number, text: string): Promise<Wire.Memory> => commands.editMemory(id, text);
export const deleteMemory = (id: number) => commands.deleteMemory(id).then(() => undefined);
export const setSkillEnabled = (dir: string, enabled: boolean) =>
  commands.setSkillEnabled(dir, enabled).then(() => undefined);
export const setMemoryAutoAccept = (on: boolean) => commands.setMemoryAutoAccept(on).then(() => undefined);
export const consentHooks = (workspace: string, hash: string): Promise<Wire.HooksFileInfo> =>
  commands.consentHooks(workspace, hash);
export const revokeHooks = (workspace: string) => commands.revokeHooks(workspace).then(() => undefined);

// Running in the background (start at login, keep in tray) and About.
export const desktopSettings = (): Promise<DesktopSettings> => commands.desktopSettings();
/** Writes or removes the XDG autostart entry; answers with the state as stored. */
export const setStartAtLogin = (on: boolean): Promise<DesktopSettings> => commands.setStartAtLogin(on);
export const setKeepInTray = (on: boolean): Promise<DesktopSettings> => commands.setKeepInTray(on);
export const aboutApp = (): Promise<AboutInfo> => commands.aboutApp();

/** The message of a rejected command, whatever shape the rejection has. */
export function errorMessage(e: unknown): string {
  if (e && typeof e === "object" && "message" in e) return String(e.message);
  return String(e);
}

/** The underlying error of a rejected command (a model server's own), if it carries one. */
export function errorDetail(e: unknown): string | null {
  if (e && typeof e === "object" && "detail" in e && typeof e.detail === "string") return e.detail;
  return null;
}

/** The stable kind of a rejected command (`conversation_busy`, `not_queued`, …), if any. */
export function errorKind(e: unknown): string | null {
  if (e && typeof e === "object" && "kind" in e) return String(e.kind);
  return null;
}

/** The native folder picker; null when the person cancels. */
export async function pickFolder(): Promise<string | null> {
  const { open } = await import("@tauri-apps/plugin-dialog");
  const picked = await open({ directory: true, multiple: false, title: "Choose a workspace folder" });
  return typeof picked === "string" ? picked : null;
}

// Issue 16: what each task changed, its review, undo and redo.
export const sessionChanges = (sessionId: number) => commands.sessionChanges(sessionId);

export const taskChanges = (taskId: number) => commands.taskChanges(taskId);

export const undoTask = (taskId: number, keepTheirs: boolean) => commands.undoTask(taskId, keepTheirs);

export const redoUndo = (undoId: number) => commands.redoUndo(undoId);

/** Undoes what a task did to these files only (paths as its change list names them). */
export const undoFiles = (taskId: number, paths: string[], keepTheirs: boolean) =>
  commands.undoFiles(taskId, paths, keepTheirs);

/** Opens a file of the task's workspace in the desktop's default app (checked in Rust). */
export const openTaskFile = (taskId: number, path: string) => commands.openTaskFile(taskId, path);

// Back to one of the person's messages: rewind the session there (conversation and files),
// or fork a new session from there. A fork with no place is placed by the runtime (a git
// worktree for a workspace in a git work tree, else a copy); its reply says which.
export const rewindSession = (sessionId: number, toEntry: number, keepTheirs: boolean) =>
  commands.rewindSession(sessionId, toEntry, keepTheirs);

export const forkSession = (sessionId: number, atEntry: number, place: Wire.ForkPlace | null = null) =>
  commands.forkSession(sessionId, atEntry, place);

export const changeSettings = () => commands.changeSettings();

export const setChangeSettings = (s: Wire.ChangeSettings) => commands.setChangeSettings(s).then(() => undefined);

// Command rules (`cargo test *`): Settings' list, the approval card's offer, and an
// approval answered keeping rules for the workspace or the session.
export const commandRules = (workspace: string | null) => commands.commandRules(workspace);
export const addCommandRule = (workspace: string, kind: Wire.CommandRuleKind, rule: string) =>
  commands.addCommandRule(workspace, kind, rule);
export const removeCommandRule = (id: number) => commands.removeCommandRule(id);
export const commandOffer = (approvalId: number) => commands.commandOffer(approvalId);
export function resolveApprovalKeeping(approvalId: number, answer: ApprovalAnswer, keep: Wire.KeepRules | null): Promise<number> {
  return commands.resolveApprovalKeeping(approvalId, answer, keep);
}

// Settings → Data: backups of the store (src-tauri/shell/data.rs).
/** Why the window must show the recovery screen (a damaged or newer store), or null. */
export const storeProblem = (): Promise<Wire.StoreProblem | null> => commands.storeProblem();

/** Puts a backup back from the recovery screen; the app's work starts once it is open. */
export const recoverStore = (name: string): Promise<Wire.Recovered> => commands.recoverStore(name);

export const dataView = (): Promise<Wire.DataView> => commands.dataView();
/** Copies the store now; resolves with the section as it is after. */
export const backupNow = (): Promise<Wire.DataView> => commands.backupNow();
export const setBackupSettings = (s: Wire.BackupSettings): Promise<Wire.DataView> => commands.setBackupSettings(s);
/** Schedules the backup to be put back and restarts the app (the current store is kept). */
export const restoreBackup = (name: string): Promise<Wire.BackupFile> => commands.restoreBackup(name);

// Plan mode: a session's plans, the person's decision on one, and the session's setting.
export const sessionPlans = (sessionId: number): Promise<Wire.Plan[]> => commands.sessionPlans(sessionId);
export const approvePlan = (taskId: number, edited: Wire.PlanContent | null): Promise<number> =>
  commands.approvePlan(taskId, edited);
export const rejectPlan = (taskId: number, reason: string | null): Promise<Wire.Plan> => commands.rejectPlan(taskId, reason);
export const sessionPlanMode = (sessionId: number): Promise<boolean> => commands.sessionPlanMode(sessionId);
export const setSessionPlanMode = (sessionId: number, on: boolean): Promise<null> =>
  commands.setSessionPlanMode(sessionId, on);
