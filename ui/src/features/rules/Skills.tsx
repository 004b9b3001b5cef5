// Skills found in the workspace's .agents/skills/ and the person's skills folder, each with
// an on/off switch (stored; a switched-off skill is neither listed to the model nor loadable).
import { errorMessage, setSkillEnabled } from "../../api/commands";
import type { SkillInfo } from "../../api/generated/bindings";

type Props = { skills: SkillInfo[]; problems: string[]; onChanged: () => void; onError: (e: string) => void };

export function Skills({ skills, problems, onChanged, onError }: Props) {
  const toggle = async (s: SkillInfo, on: boolean) => {
    try {
      await setSkillEnabled(s.dir, on);
      onChanged();
    } catch (e) {
      onError(errorMessage(e));
    }
  };
  return (
    <section class="card" data-testid="skills">
      <h2>Skills</h2>
      <p class="muted">
        Names and descriptions are listed to the model; it loads a skill's text only when it asks. A script in a skill
        runs only as a command, with your approval.
      </p>
      {skills.length === 0 && <p class="muted" data-testid="no-skills">No skills found.</p>}
      <ul>
        {skills.map((s) => (
          <li key={s.dir} data-testid="skill" data-skill={s.name} data-enabled={s.enabled ? "true" : "false"}>
            <label>
              <input
                type="checkbox"
                data-testid="skill-switch"
                checked={s.enabled}
                onChange={(e) => void toggle(s, (e.target as HTMLInputElement).checked)}
              />{" "}
              <strong>{s.name}</strong> <span class="muted">({s.source})</span> — {s.description}
            </label>
          </li>
        ))}
      </ul>
      {problems.map((p) => (
        <div key={p} class="notice" data-testid="skill-problem">
          {p}
        </div>
      ))}
    </section>
  );
}
