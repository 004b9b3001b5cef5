"""The app's top-level window as the X server sees it: whether it is mapped, and a close
request sent the way a window manager sends one (WM_DELETE_WINDOW), so the app's own
close handling runs. There is no window manager under the tests' Xvfb."""
from __future__ import annotations

import time

from Xlib import X, display, protocol


class AppWindow:
    def __init__(self, pid: int, title: str = "PocketPilot", timeout: float = 20.0):
        self.display = display.Display()
        self.pid = pid
        deadline = time.monotonic() + timeout
        while True:
            found = self._find(title)
            if found is not None:
                self.window = found
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"no X window titled {title!r} for pid {pid}")
            # sleep: the poll interval of this bounded wait (the X tree is read by walking it).
            time.sleep(0.1)

    def _find(self, title: str):
        pid_atom = self.display.intern_atom("_NET_WM_PID")
        todo = [self.display.screen().root]
        while todo:
            w = todo.pop()
            try:
                prop = w.get_full_property(pid_atom, X.AnyPropertyType)
                name = w.get_wm_name()
                if prop is not None and int(prop.value[0]) == self.pid and name == title:
                    return w
                todo.extend(w.query_tree().children)
            except Exception:  # windows come and go while we walk the tree
                continue
        return None

    def mapped(self) -> bool:
        return self.window.get_attributes().map_state == X.IsViewable

    def request_close(self) -> None:
        protocols = self.display.intern_atom("WM_PROTOCOLS")
        delete = self.display.intern_atom("WM_DELETE_WINDOW")
        event = protocol.event.ClientMessage(
            window=self.window, client_type=protocols, data=(32, [delete, X.CurrentTime, 0, 0, 0])
        )
        self.window.send_event(event, event_mask=X.NoEventMask)
        self.display.flush()

    def close(self) -> None:
        self.display.close()
