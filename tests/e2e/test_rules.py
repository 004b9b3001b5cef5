"""Issue 18: the Instructions in effect screen names the AGENTS.md files a session's agent
works under, lists the memories (edited and deleted here) and the skills (switched off
here); a memory the agent proposes reaches the person as an approval of its own kind and is
kept only once accepted from the window."""
from __future__ import annotations

import json

from conftest import App, AppEnv

PROPOSED = "The person likes short answers."


def skill(name: str, description: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\nSteps for {name}.\n"


def rules_json(app_env: AppEnv, ws) -> dict:
    return json.loads(app_env.cli("rules", "show", "--workspace", str(ws), "--session", "1", "--json").stdout)


def test_rules_screen_and_a_memory_accepted_from_the_window(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("site")
    (ws / "AGENTS.md").write_text("Run the tests with make check.\n")
    (ws / "docs").mkdir()
    (ws / "docs" / "AGENTS.md").write_text("In docs/, write British English.\n")
    (ws / "docs" / "intro.md").write_text("# Intro\n")
    (ws / "lib").mkdir()
    (ws / "lib" / "AGENTS.md").write_text("Never shown: the agent did not work here.\n")
    deploy = ws / ".agents" / "skills" / "deploy"
    deploy.mkdir(parents=True)
    (deploy / "SKILL.md").write_text(skill("deploy", "Deploys the site"))
    personal = app_env.root / "home" / ".config" / "pocketpilot" / "skills" / "greet"
    personal.mkdir(parents=True)
    (personal / "SKILL.md").write_text(skill("greet", "Greets people warmly"))
    app_env.cli("memory", "add", "--global", "Answers in British English.")
    script = app_env.script(
        "rules",
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "docs/intro.md"}}]},
            {"tool_calls": [{"name": "remember", "arguments": {"text": PROPOSED}}]},
            {"text": "Noted."},
        ],
    )
    left = app_env.cli(
        "run", "--workspace", str(ws), "--goal", "Tidy the docs", "--provider", f"scripted:{script}", check=False
    )
    assert left.returncode == 3, left.stderr

    app: App = launch()
    app.wait("the pending approval", lambda: app.css("[data-testid=pending-approvals] .pending-item"))
    app.by_text("[data-testid=session-item]", "Tidy the docs").click()
    # The proposal: an approval of its own kind, showing the note; nothing kept yet.
    app.wait("the approval dialog", lambda: app.css("[data-testid=approval-dialog] [data-kind=memory]"))
    app.wait_texts("[data-testid=effect-memory]", [PROPOSED])
    assert [m["text"] for m in rules_json(app_env, ws)["memories"]] == ["Answers in British English."]
    app.screenshot("memory-proposed")
    app.css("[data-testid=approve]")[0].click()
    app.wait("the task to complete", lambda: app.css("[data-testid=task][data-status=completed]"))

    app.open_header("details")
    app.wait_css("[data-testid=open-rules]").click()
    app.wait_loaded("rules-view")
    app.wait_equal(
        "the instruction files",
        lambda: [e.get_attribute("data-path") for e in app.css("[data-testid=instruction-file]")],
        ["AGENTS.md", "docs/AGENTS.md"],
    )
    app.wait_count("[data-testid=memory]", 2)
    app.wait("the accepted memory", lambda: PROPOSED in app.texts("[data-testid=memory-text]"))
    app.wait_equal(
        "the skills",
        lambda: {e.get_attribute("data-skill"): e.get_attribute("data-enabled") for e in app.css("[data-testid=skill]")},
        {"deploy": "true", "greet": "true"},
    )
    app.screenshot("instructions-in-effect")

    # A skill switched off here is off for the runs (the stored setting the CLI reads).
    app.css("[data-testid=skill][data-skill=deploy] [data-testid=skill-switch]")[0].click()
    app.wait("deploy off", lambda: app.css("[data-testid=skill][data-skill=deploy][data-enabled=false]"))
    assert {s["name"]: s["enabled"] for s in rules_json(app_env, ws)["skills"]} == {"deploy": False, "greet": True}

    # Edited, then deleted, from the window.
    row = app.by_text("[data-testid=memory]", PROPOSED)
    row.find_element("css selector", "[data-testid=memory-edit]").click()
    field = app.wait_css("[data-testid=memory-edit-text]")
    app.clear(field)
    app.type_into(field, "Short answers, please.")
    app.css("[data-testid=memory-save]")[0].click()
    app.wait("the edit", lambda: "Short answers, please." in app.texts("[data-testid=memory-text]"))
    assert "Short answers, please." in [m["text"] for m in rules_json(app_env, ws)["memories"]]
    app.screenshot("memory-edited")
    app.by_text("[data-testid=memory]", "Short answers, please.").find_element(
        "css selector", "[data-testid=memory-delete]"
    ).click()
    app.wait("the delete", lambda: len(app.css("[data-testid=memory]")) == 1)
    assert [m["text"] for m in rules_json(app_env, ws)["memories"]] == ["Answers in British English."]
    app.screenshot("memory-deleted")
