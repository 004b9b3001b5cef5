"""The desktop around the app, on the test's own D-Bus session bus: a StatusNotifierWatcher
(what a panel runs so that tray icons register with it) and a notification server. Both
are minimal but speak the real protocols, so the app's tray (libayatana-appindicator, its
menu over com.canonical.dbusmenu) and its notifications (org.freedesktop.Notifications)
are exercised exactly as a desktop would see them. Calls into the app's tray menu go over
the same bus.

dbus-fast runs on an asyncio loop in a background thread; the methods here block.
"""
from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass
from typing import Any

from dbus_fast import BusType, Message, MessageType, Variant
from dbus_fast.aio import MessageBus

WATCHER = "org.kde.StatusNotifierWatcher"
NOTIFICATIONS = "org.freedesktop.Notifications"
ITEM = "org.kde.StatusNotifierItem"
MENU = "com.canonical.dbusmenu"
PROPS = "org.freedesktop.DBus.Properties"


def wait_until(what: str, check, timeout: float = 20.0):
    """Polls `check` until it returns something truthy (bounded; no timing is asserted).
    A check that raises (the menu not exported yet, a D-Bus call refused) is tried again;
    the last error is in the timeout's message."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
            if value:
                return value
        except Exception as e:  # noqa: BLE001 - reported below if it never passes
            last = e
        # sleep: the poll interval of this bounded wait (D-Bus state read by asking).
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}" + (f" (last error: {last!r})" if last else ""))


@dataclass
class Notification:
    app_name: str
    summary: str
    body: str


@dataclass
class TrayItem:
    bus_name: str
    path: str


class DesktopBus:
    def __init__(self) -> None:
        self.items: list[TrayItem] = []
        self.notifications: list[Notification] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._bus: MessageBus = self._run(self._connect())

    def _run(self, coro: Any, timeout: float = 10.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    async def _connect(self) -> MessageBus:
        bus = await MessageBus(bus_type=BusType.SESSION).connect()
        bus.add_message_handler(self._handle)
        for name in (WATCHER, NOTIFICATIONS):
            await bus.request_name(name)
        return bus

    def close(self) -> None:
        try:
            self._bus.disconnect()
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)

    # -- the services ----------------------------------------------------------------

    def _handle(self, msg: Message) -> Message | bool | None:
        if msg.message_type != MessageType.METHOD_CALL:
            return None
        if msg.interface == WATCHER and msg.member == "RegisterStatusNotifierItem":
            # The argument is an object path (appindicator) or a bus name; the sender is
            # the bus name either way.
            arg = msg.body[0] if msg.body else ""
            path = arg if arg.startswith("/") else "/StatusNotifierItem"
            with self._lock:
                self.items.append(TrayItem(bus_name=msg.sender, path=path))
            self._bus.send(Message.new_signal(
                "/StatusNotifierWatcher", WATCHER, "StatusNotifierItemRegistered", "s", [f"{msg.sender}{path}"]
            ))
            return Message.new_method_return(msg)
        if msg.interface == WATCHER and msg.member == "RegisterStatusNotifierHost":
            return Message.new_method_return(msg)
        if msg.interface == PROPS and msg.path == "/StatusNotifierWatcher":
            props = {
                "IsStatusNotifierHostRegistered": Variant("b", True),
                "ProtocolVersion": Variant("i", 0),
                "RegisteredStatusNotifierItems": Variant("as", [f"{i.bus_name}{i.path}" for i in self.items]),
            }
            if msg.member == "GetAll":
                return Message.new_method_return(msg, "a{sv}", [props])
            if msg.member == "Get" and len(msg.body) == 2 and msg.body[1] in props:
                return Message.new_method_return(msg, "v", [props[msg.body[1]]])
            return Message.new_error(msg, "org.freedesktop.DBus.Error.InvalidArgs", "no such property")
        if msg.interface == NOTIFICATIONS:
            if msg.member == "Notify":
                app_name, _replaces, _icon, summary, body = msg.body[:5]
                with self._lock:
                    self.notifications.append(Notification(app_name, summary, body))
                    nid = len(self.notifications)
                return Message.new_method_return(msg, "u", [nid])
            if msg.member == "GetCapabilities":
                return Message.new_method_return(msg, "as", [["body"]])
            if msg.member == "GetServerInformation":
                return Message.new_method_return(msg, "ssss", ["e2e", "pocketpilot-tests", "1", "1.2"])
            if msg.member == "CloseNotification":
                return Message.new_method_return(msg)
        return None

    # -- what the tests ask ------------------------------------------------------------

    def wait(self, what: str, check, timeout: float = 20.0):
        return wait_until(what, check, timeout)

    def tray_item(self, timeout: float = 20.0) -> TrayItem:
        return self.wait("a tray item to register", lambda: self.items[-1] if self.items else None, timeout)

    def sent_notifications(self) -> list[Notification]:
        with self._lock:
            return list(self.notifications)

    def _call(self, dest: str, path: str, interface: str, member: str, signature: str = "", body: list | None = None) -> list:
        reply = self._run(self._bus.call(Message(
            destination=dest, path=path, interface=interface, member=member,
            signature=signature, body=body or [],
        )))
        if reply.message_type == MessageType.ERROR:
            raise AssertionError(f"{interface}.{member} failed: {reply.error_name}: {reply.body}")
        return reply.body

    def item_property(self, item: TrayItem, name: str) -> Any:
        return self._call(item.bus_name, item.path, PROPS, "Get", "ss", [ITEM, name])[0].value

    def menu(self, item: TrayItem) -> list[dict]:
        """The tray menu's entries in order: id, label, enabled (separators left out)."""
        menu_path = self.item_property(item, "Menu")
        _revision, layout = self._call(item.bus_name, menu_path, MENU, "GetLayout", "iias", [0, -1, []])
        entries = []
        for child in layout[2]:
            cid, props, _children = child.value
            if props.get("type") and props["type"].value == "separator":
                continue
            entries.append({
                "id": cid,
                "label": props["label"].value if "label" in props else "",
                "enabled": props["enabled"].value if "enabled" in props else True,
            })
        return entries

    def labels(self, item: TrayItem) -> list[str]:
        return [e["label"] for e in self.menu(item)]

    def click(self, item: TrayItem, label: str, quits: bool = False) -> None:
        """Clicks the menu entry with this label, as a panel does for a person. An entry
        that `quits` the app may take it off the bus before its reply: the caller then
        checks the process is gone, and a panel does not wait for that reply either."""
        entry = next((e for e in self.menu(item) if e["label"] == label), None)
        if entry is None:
            raise AssertionError(f"no tray menu entry {label!r}; have {self.labels(item)}")
        menu_path = self.item_property(item, "Menu")
        try:
            self._call(item.bus_name, menu_path, MENU, "Event", "isvu",
                       [entry["id"], "clicked", Variant("s", ""), int(time.time()) & 0xFFFFFFFF])
        except AssertionError as e:
            if not (quits and "org.freedesktop.DBus.Error.NoReply" in str(e)):
                raise
