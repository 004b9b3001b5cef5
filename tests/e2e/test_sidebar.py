"""The sidebar for daily use: sessions grouped by day and filtered by folder; Rename and
Delete on each item's menu (keyboard included); the shortcuts listed under Help and working
from anywhere: Ctrl+N, Ctrl+, and Ctrl+Shift+Backspace (stop the open session's run); the
settings in sections, found by a word."""
from __future__ import annotations

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement

from conftest import App, AppEnv
from test_chat import start_session


def titles(app: App) -> list[str]:
    return app.texts("[data-testid=session-item] .session-title")


def choose(app: App, select: WebElement, value: str) -> None:
    """Picks an option as the list does (WebKit's driver cannot click a native option)."""
    app.driver.execute_script(
        "arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('change', {bubbles: true}));",
        select,
        value,
    )


def chord(app: App, *keys: str) -> None:
    """Presses the keys together (modifiers first), as a person does."""
    actions = ActionChains(app.driver)
    *mods, last = keys
    for m in mods:
        actions.key_down(m)
    actions.send_keys(last)
    for m in reversed(mods):
        actions.key_up(m)
    actions.perform()


def test_sessions_by_day_and_folder_with_rename_and_delete_on_each_item(app_env: AppEnv, launch) -> None:
    a, b = app_env.workspace("alpha"), app_env.workspace("beta")
    app_env.seed("First in alpha", app_env.script("a1", [{"text": "One."}]), a)
    app_env.seed("Second in beta", app_env.script("b1", [{"text": "Two."}]), b)
    app_env.seed("Third in alpha", app_env.script("a2", [{"text": "Three."}]), a)
    app: App = launch()
    app.wait_count("[data-testid=session-item]", 3)
    app.wait_texts("[data-testid=session-group-label]", ["Today"])

    folder = app.wait_css("[data-testid=session-folder]")
    assert app.texts("[data-testid=session-folder] option") == ["All folders", "alpha", "beta"]
    choose(app, folder, str(b))
    app.wait("only beta's session", lambda: titles(app) == ["Second in beta"])
    choose(app, folder, "")
    app.wait_count("[data-testid=session-item]", 3)
    app.screenshot("grouped")

    # Rename from the item's menu, with the keyboard.
    row = app.by_text("[data-testid=session-item]", "First in alpha").find_element("xpath", "..")
    menu = row.find_element("css selector", "[data-testid=session-menu]")
    menu.click()
    app.wait("focus on the first item", lambda: app.driver.execute_script(
        "return document.activeElement && document.activeElement.dataset.testid === 'session-menu-rename'"))
    app.screenshot("item-menu")
    ActionChains(app.driver).send_keys(Keys.ENTER).perform()
    field = app.wait_css("[data-testid=sidebar-rename-input]")
    app.clear(field)
    app.type_into(field, "Renamed from the sidebar")
    app.press_enter(field)
    app.wait("the new title", lambda: "Renamed from the sidebar" in titles(app))
    assert app_env.cli("sessions").stdout.count("Renamed from the sidebar") == 1

    # Esc closes the menu and gives focus back to its button.
    row = app.by_text("[data-testid=session-item]", "Second in beta").find_element("xpath", "..")
    row.find_element("css selector", "[data-testid=session-menu]").click()
    app.wait_css("[data-testid=session-menu-items]")
    ActionChains(app.driver).send_keys(Keys.ESCAPE).perform()
    app.wait("the menu closed", lambda: not app.css("[data-testid=session-menu-items]"))
    assert app.driver.execute_script("return document.activeElement.dataset.testid") == "session-menu"

    # Delete from the menu: the confirm names it; the session goes.
    row.find_element("css selector", "[data-testid=session-menu]").click()
    app.wait_css("[data-testid=session-menu-delete]").click()
    app.wait_texts("[data-testid=delete-session-name]", ["Second in beta"])
    app.css("[data-testid=delete-confirm-yes]")[0].click()
    app.wait("the session gone", lambda: sorted(titles(app)) == ["Renamed from the sidebar", "Third in alpha"])
    # One folder left: no filter to offer.
    app.wait("no folder filter", lambda: not app.css("[data-testid=session-folder]"))


def test_shortcuts_are_listed_under_help_and_work_from_anywhere(app_env: AppEnv, launch) -> None:
    ws = app_env.workspace("keys")
    slow = app_env.script("slow", [{"text": "This answer takes its time.", "delay_ms": 600000}])
    app: App = launch(slow)

    chord(app, Keys.F1)
    help_ = app.wait_css("[data-testid=shortcuts-help]")
    for keys in ["Ctrl+N", "Ctrl+K", "Ctrl+,", "Ctrl+Shift+Backspace", "Ctrl+Enter", "Esc"]:
        assert keys in help_.text, help_.text
    app.screenshot("help")
    # Tab stays inside the dialog: its one button keeps the focus, press after press.
    for _ in range(3):
        ActionChains(app.driver).send_keys(Keys.TAB).perform()
        where = app.driver.execute_script("return document.activeElement.dataset.testid || document.activeElement.tagName")
        assert where == "shortcuts-close", f"Tab left the help dialog for {where}"
    ActionChains(app.driver).send_keys(Keys.ESCAPE).perform()
    app.wait("help closed", lambda: not app.css("[data-testid=shortcuts-help]"))

    chord(app, Keys.CONTROL, ",")
    app.wait("settings", lambda: app.driver.current_url.endswith("#/settings"))
    chord(app, Keys.CONTROL, "n")
    app.wait("the new-session screen", lambda: app.driver.current_url.endswith("#/new"))

    start_session(app, ws, "Take your time")
    app.wait_css("[data-testid=stop]")
    chord(app, Keys.CONTROL, Keys.SHIFT, Keys.BACKSPACE)
    app.wait("the run cancelled", lambda: app.css("[data-testid=task][data-status=cancelled]"))
    app.wait("no Stop", lambda: not app.css("[data-testid=stop]"))


def test_settings_are_in_sections_and_found_by_a_word(app_env: AppEnv, launch) -> None:
    app: App = launch()
    app.open_settings()
    labels = app.texts("[data-testid=settings-nav] button")
    assert labels[:3] == ["General", "Models", "Models on this computer"], labels
    assert labels[3:] == ["Limits & money", "Sandbox", "Triggers", "Background", "Data", "Advanced", "About"], labels

    def shown(group: str) -> bool:
        return bool(app.driver.execute_script(
            f"const g = document.querySelector('[data-testid=settings-group-{group}]'); return g && !g.hidden"))

    box = app.wait_css("[data-testid=settings-search]")
    app.type_into(box, "webhook")
    app.wait("only the triggers", lambda: shown("triggers") and not shown("models") and not shown("about"))
    app.screenshot("search-webhook")
    app.clear(box)
    app.type_into(box, "backup")
    app.wait("the data section", lambda: shown("data") and not shown("triggers"))
    app.clear(box)
    app.type_into(box, "zzzz-nothing")
    app.wait_css("[data-testid=settings-no-match]")
    ActionChains(app.driver).send_keys(Keys.ESCAPE).perform()
    app.wait("every section back", lambda: all(shown(g) for g in ("general", "models", "triggers", "data", "about")))
