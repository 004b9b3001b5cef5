// The settings screen's sections: General, Models, Limits & money, Sandbox, Triggers,
// Background, Data, Advanced (MCP servers and their keys), About. The side list scrolls to
// a section (every section stays on the page); "Models on this computer", under Models,
// opens the Models screen. The search box hides every card that does not mention what was
// typed (its labels, values and help text), and the sections left empty.
import { Fragment, type ComponentChildren, type RefObject } from "preact";
import { useEffect, useState } from "preact/hooks";
import { navigate } from "../../lib/route";

export const GROUPS = [
  { id: "general", label: "General" },
  { id: "models", label: "Models" },
  { id: "limits", label: "Limits & money" },
  { id: "sandbox", label: "Sandbox" },
  { id: "triggers", label: "Triggers" },
  { id: "background", label: "Background" },
  { id: "data", label: "Data" },
  { id: "advanced", label: "Advanced" },
  { id: "about", label: "About" },
] as const;

export type GroupId = (typeof GROUPS)[number]["id"];

export function SettingsGroup({ id, children }: { id: GroupId; children: ComponentChildren }) {
  const label = GROUPS.find((g) => g.id === id)?.label ?? id;
  return (
    <section class="settings-group" data-testid={`settings-group-${id}`} data-settings-group={id} aria-label={label}>
      <h2 class="settings-group-title">{label}</h2>
      {children}
    </section>
  );
}

export function SettingsNav() {
  return (
    <nav class="settings-nav" aria-label="Settings sections" data-testid="settings-nav">
      {GROUPS.map((g) => (
        <Fragment key={g.id}>
          <button
            type="button"
            data-testid={`nav-section-${g.id}`}
            onClick={() =>
              document.querySelector(`[data-settings-group="${g.id}"]`)?.scrollIntoView({ block: "start" })
            }
          >
            {g.label}
          </button>
          {g.id === "models" && (
            <button type="button" class="nav-sub" data-testid="nav-models" onClick={() => navigate({ name: "models" })}>
              Models on this computer
            </button>
          )}
        </Fragment>
      ))}
    </nav>
  );
}

/** What a card says, fields included: its text, and its inputs' values and placeholders. */
function cardText(card: HTMLElement): string {
  const fields = [...card.querySelectorAll<HTMLInputElement>("input, textarea, select")].map(
    (f) => `${f.value ?? ""} ${f.placeholder ?? ""}`,
  );
  return `${card.textContent ?? ""} ${fields.join(" ")}`.toLowerCase();
}

/** Hides the cards (and sections) under `root` that do not mention `query`; kept while the
 *  cards load and change. True when nothing matches. */
export function useSettingsFilter(root: RefObject<HTMLElement>, query: string): boolean {
  const [nothing, setNothing] = useState(false);
  useEffect(() => {
    const el = root.current;
    if (!el) return;
    const q = query.trim().toLowerCase();
    const apply = () => {
      let any = false;
      for (const group of el.querySelectorAll<HTMLElement>("[data-settings-group]")) {
        let shown = 0;
        const title = (group.querySelector(".settings-group-title")?.textContent ?? "").toLowerCase();
        for (const card of group.querySelectorAll<HTMLElement>(":scope > .card, :scope > * > .card")) {
          const show = q === "" || title.includes(q) || cardText(card).includes(q);
          if (card.hidden === show) card.hidden = !show;
          if (show) shown++;
        }
        const showGroup = q === "" || shown > 0;
        if (group.hidden === showGroup) group.hidden = !showGroup;
        any ||= showGroup;
      }
      setNothing(q !== "" && !any);
    };
    apply();
    if (q === "") return;
    // Sections finish loading after the query is typed: look again when they change.
    const seen = new MutationObserver(apply);
    seen.observe(el, { childList: true, subtree: true, characterData: true });
    return () => seen.disconnect();
  }, [root, query]);
  return nothing;
}
