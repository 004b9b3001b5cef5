// Three goals to start from in an empty session, named for the chosen folder: a person
// new to agents sees what to ask; a click puts one in the box to edit before sending.
import { basename } from "../../lib/format";

export function exampleGoals(workspace: string): string[] {
  const path = workspace.trim();
  if (!path) return [];
  const name = basename(path);
  return [
    `Summarize what is in ${name} and how it is organized`,
    `Find the TODO and FIXME notes in ${name} and list them by file`,
    `Look through ${name} for anything broken or out of date and say what you would fix`,
  ];
}
