"""Issue 19: a scripted model that repeats a failing call is paused; the window shows the
paused card (what it repeated, continue, steer, stop) and the session's cost in its header;
continuing runs on to the answer. Prices and money budgets set in Settings (refused with
the runtime's message when bad) pause a run on its money, in the window and the CLI alike,
and Settings shows today's spend against the daily budget."""
from __future__ import annotations

import json

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

from conftest import App, AppEnv
from test_chat import assistant_texts, start_session

DONE = "missing.txt is not there; stopping."
FAIL = {
    "text": "",
    "delay_ms": 50,
    "tool_calls": [{"name": "read_file", "arguments": {"path": "missing.txt"}}],
    "usage": {"prompt_tokens": 1000, "completion_tokens": 500},
}


def test_a_repeating_agent_pauses_and_continues_from_the_card(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("repeat")
    app_env.cli("prices", "set", "scripted:*", "--input", "1000", "--output", "1000")
    script = app_env.script("repeat", [FAIL, FAIL, FAIL, {"text": DONE, "usage": {"prompt_tokens": 1000, "completion_tokens": 500}}])
    app: App = launch(script)
    start_session(app, ws, "Read missing.txt")

    card = app.wait_css("[data-testid=paused-card]")
    app.wait("the card to say why", lambda: "repeating itself" in card.text)
    app.wait_css("[data-testid=show-repeated]").click()
    message = app.wait("what it repeated", lambda: next((t for t in app.texts("[data-testid=paused-message]") if t), None))
    assert "read_file" in message and "3 times" in message, message
    # Three turns at $1.50 each.
    app.wait("the session's cost", lambda: app.open_header("details") and app.texts("[data-testid=session-cost]") == ["$4.50"])
    app.screenshot("paused-repeating")
    # Paused, the run asks nothing until continued: compacting is not held back by it (the
    # meter says why it is not offered here, a short talk, instead of waiting for idle).
    app.open_header("context")
    why = app.wait("why compacting is not offered", lambda: next(iter(app.texts("[data-testid=compact-why]")), None))
    assert str(why).startswith("Nothing worth compacting yet"), why
    ActionChains(app.driver).send_keys(Keys.ESCAPE).perform()
    app.wait("the popover to close", lambda: not app.css("[data-testid=head-context-panel]"))

    app.css("[data-testid=paused-continue]")[0].click()
    app.wait("the final answer", lambda: DONE in assistant_texts(app))
    app.wait("the task to complete", lambda: app.css("[data-testid=task][data-status=completed]"))
    app.wait("the paused card to go", lambda: not app.css("[data-testid=paused-card]"))
    app.wait("the session's cost", lambda: app.open_header("details") and app.texts("[data-testid=session-cost]") == ["$6.00"])
    app.screenshot("continued-completed")


def priced_call(path: str) -> dict:
    return {
        "text": "",
        "delay_ms": 50,
        "tool_calls": [{"name": "read_file", "arguments": {"path": path}}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 500},
    }


TASK_PAUSE = "the task cost $3.00 of its budget of $2.00"


def save_and_read(app: App, button: str, status: str) -> str:
    before = app.texts(f"[data-testid={status}]")
    app.css(f"[data-testid={button}]")[0].click()
    return app.wait(  # type: ignore[return-value]
        f"the {status}",
        lambda: next((t for t in app.texts(f"[data-testid={status}]") if [t] != before), None),
    )


def set_field(app: App, testid: str, value: str) -> None:
    field = app.wait_css(f"[data-testid={testid}]")
    app.clear(field)
    app.type_into(field, value)


def test_a_price_and_a_task_budget_set_in_settings_pause_a_run_on_its_money(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("money")
    # Each turn: 1000 + 500 tokens at $1000 per million = $1.50; after two, $3.00 ≥ $2.
    script = app_env.script("money", [priced_call("a.txt"), priced_call("b.txt"), {"text": "never asked"}])
    app: App = launch(script)
    app.open_settings()
    app.wait_css("[data-testid=nav-section-limits]").click()
    app.wait("today's spend", lambda: any("$0.00 (no daily budget)" in t for t in app.texts("[data-testid=spend-today]")))

    # A negative and a non-numeric price: the runtime's message, nothing saved.
    set_field(app, "price-model", "scripted:*")
    set_field(app, "price-input", "-5")
    set_field(app, "price-output", "1000")
    said = save_and_read(app, "save-price", "price-status")
    assert said == "the input price must be 0 or more dollars per million tokens, not -5", said
    set_field(app, "price-input", "lots")
    said = save_and_read(app, "save-price", "price-status")
    assert 'the input price must be a number of dollars per million tokens (like 2.5), not "lots"' == said, said
    assert json.loads(app_env.cli("prices", "show", "--json").stdout)["models"] == []
    app.wait_css("[data-testid=no-prices]")
    app.screenshot("price-refused")

    set_field(app, "price-input", "1000")
    assert save_and_read(app, "save-price", "price-status") == "Saved the prices of scripted:*."
    app.wait("the price row", lambda: app.css("[data-testid=price-row][data-model='scripted:*']"))
    stored = json.loads(app_env.cli("prices", "show", "--json").stdout)["models"]
    assert stored == [{"model": "scripted:*", "input_per_mtok": 1000.0, "output_per_mtok": 1000.0, "cached_input_per_mtok": None}]

    # A bad budget is refused whole; a good one is what the CLI reads back.
    set_field(app, "budget-task-usd", "2")
    set_field(app, "budget-day-usd", "-1")
    said = save_and_read(app, "save-budgets", "budgets-status")
    assert said == "the daily budget must be 0 or more dollars, not -1", said
    assert "task none" in app_env.cli("budget", "show").stdout
    set_field(app, "budget-day-usd", "10")
    assert save_and_read(app, "save-budgets", "budgets-status") == "Saved."
    assert "task $2.00  day $10.00  unattended day none" in app_env.cli("budget", "show").stdout
    spend = app.wait("the budget in today's spend", lambda: next((t for t in app.texts("[data-testid=spend-today]") if "$10.00" in t), None))
    assert "$0.00 of the daily budget of $10.00" in spend, spend
    app.driver.execute_script("document.querySelector('[data-testid=money-settings]').scrollIntoView({block: 'start'})")
    app.screenshot("money-settings")

    # A run with known usage pauses on that budget, before its third model request.
    start_session(app, ws, "Read a.txt and b.txt")
    card = app.wait_css("[data-testid=paused-card]")
    app.wait("the card to say why", lambda: "A budget ran out" in card.text)
    # The card's sentence is the stored reason as a sentence.
    app.wait_texts("[data-testid=paused-message]", ["The task cost $3.00 of its budget of $2.00."])
    app.wait("the session's cost", lambda: app.open_header("details") and app.texts("[data-testid=session-cost]") == ["$3.00"])
    app.screenshot("paused-on-money")
    tasks = json.loads(app_env.cli("tasks", "--json").stdout)
    assert [(t["status"], t["pause"]["message"]) for t in tasks] == [("paused", TASK_PAUSE)]

    # The CLI's run is held to the budget set in the window the same way (exit 9: paused).
    cli = app_env.cli("run", "--workspace", str(app_env.workspace("money-cli")), "--goal", "Read a.txt and b.txt",
                      "--provider", f"scripted:{script}", check=False)
    assert cli.returncode == 9, (cli.stdout, cli.stderr)
    assert TASK_PAUSE in cli.stdout + cli.stderr

    # Today's spend in Settings: both runs, against the daily budget.
    app.open_settings()
    spend = app.wait("today's spend", lambda: next((t for t in app.texts("[data-testid=spend-today]") if "$6.00" in t), None))
    assert "$6.00 of the daily budget of $10.00" in spend, spend
    app.driver.execute_script("document.querySelector('[data-testid=money-settings]').scrollIntoView({block: 'start'})")
    app.screenshot("spend-today")
