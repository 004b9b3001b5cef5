// Recent workspaces: the ones chosen in this window (kept in localStorage), then those of
// existing sessions.
const KEY = "pocketpilot.recentWorkspaces";
const MAX = 8;

function stored(): string[] {
  try {
    const v = JSON.parse(localStorage.getItem(KEY) ?? "[]");
    return Array.isArray(v) ? v.filter((x) => typeof x === "string") : [];
  } catch {
    return [];
  }
}

export function recentWorkspaces(fromSessions: string[]): string[] {
  return [...new Set([...stored(), ...fromSessions])].slice(0, MAX);
}

export function rememberWorkspace(path: string): void {
  const list = [path, ...stored().filter((p) => p !== path)].slice(0, MAX);
  try {
    localStorage.setItem(KEY, JSON.stringify(list));
  } catch {
    // Storage unavailable: the list from sessions still works.
  }
}
