"""Every top-level window the X server maps, as a window manager would see it: the root
window's SubstructureNotify events. There is no window manager under the test's Xvfb, so
an app's top-level windows are the root's children and each time one is shown a MapNotify
arrives here, however briefly it stays. "The window was never shown" is then: no MapNotify
for a window of that process since the watch started."""
from __future__ import annotations

from Xlib import X, display


class MapWatch:
    def __init__(self) -> None:
        self.display = display.Display()
        self.root = self.display.screen().root
        self.root.change_attributes(event_mask=X.SubstructureNotifyMask)
        self.display.sync()
        self._pid_atom = self.display.intern_atom("_NET_WM_PID")
        self.mapped: list[tuple[int, int | None]] = []

    def _pid_of(self, window) -> int | None:
        try:
            prop = window.get_full_property(self._pid_atom, X.AnyPropertyType)
        except Exception:  # the window is already gone
            return None
        return int(prop.value[0]) if prop is not None else None

    def poll(self) -> list[tuple[int, int | None]]:
        """Drains the events so far; returns every (window id, pid) mapped since the start.
        A window without _NET_WM_PID (or gone before it could be asked) has pid None."""
        self.display.sync()
        while self.display.pending_events():
            event = self.display.next_event()
            if event.type == X.MapNotify:
                self.mapped.append((event.window.id, self._pid_of(event.window)))
        return list(self.mapped)

    def close(self) -> None:
        self.display.close()
