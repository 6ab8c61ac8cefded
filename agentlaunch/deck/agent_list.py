"""The deck's list of agents: a table on Textual's line API that renders again only the rows whose text changed.

Textual's ``DataTable`` drops its whole render cache on any ``update_cell``; the deck's countdowns change
a cell of most rows every second, so every visible row was rendered again each tick. Here each row keeps
its rendered line (a :class:`~textual.strip.Strip`) until its text, style, selection or the column widths
change, and a changed row refreshes its own line only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

GAP = 2  # columns between two cells


@dataclass(frozen=True)
class Line:
    """One row: a stable key (the cursor follows it), the text of each cell, the style of its first ``styled`` cells,
    and its group (the rows of one agent: the cursor goes to another of them when its own row is gone)."""

    key: str
    cells: tuple[str, ...]
    style: str = ""
    group: str = ""


class AgentList(ScrollView, can_focus=True):
    """A header and one line per row; ↑ ↓ PgUp PgDn Home End move the cursor, Enter selects."""

    BINDINGS = [
        Binding("enter", "select_cursor", "attach"),
        Binding("up", "cursor(-1)", show=False),
        Binding("down", "cursor(1)", show=False),
        Binding("pageup", "page(-1)", show=False),
        Binding("pagedown", "page(1)", show=False),
        Binding("home", "cursor(-1000000)", show=False),
        Binding("end", "cursor(1000000)", show=False),
    ]
    COMPONENT_CLASSES = {"agent-list--header", "agent-list--cursor"}
    DEFAULT_CSS = """
    AgentList > .agent-list--header { text-style: bold; color: $text-accent; }
    AgentList > .agent-list--cursor { background: $block-cursor-blurred-background; }
    AgentList:focus > .agent-list--cursor { background: $block-cursor-background; }
    """

    class Highlighted(Message):
        """The cursor moved to another row."""

        def __init__(self, row: int) -> None:
            super().__init__()
            self.row = row

    class Selected(Message):
        """Enter (or a click on the selected row)."""

        def __init__(self, row: int) -> None:
            super().__init__()
            self.row = row

    def __init__(self, columns: Sequence[str], styled: int = 2, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id)
        self.columns, self.styled = tuple(columns), styled
        self.lines: list[Line] = []
        self.widths = [cell_len(c) for c in self.columns]
        self.cursor_row = -1
        self.rendered = 0  # how many row lines were rendered (tests and the bench count them)
        self._strips: dict[str, tuple[tuple[object, ...], Strip]] = {}

    # -- the rows -----------------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self.lines)

    def get_row_at(self, index: int) -> tuple[str, ...]:
        return self.lines[index].cells

    def style_at(self, index: int) -> str:
        return self.lines[index].style

    def set_lines(self, lines: Sequence[Line]) -> None:
        """Show ``lines``: the cursor stays on its row's key, wherever the row went (else on a row of its group, else
        where it was); only the lines whose row changed are refreshed."""
        old = self.lines
        was = old[self.cursor_row] if 0 <= self.cursor_row < len(old) else None
        self.lines = list(lines)
        widths = [max([cell_len(h), *(cell_len(line.cells[i]) for line in lines)]) for i, h in enumerate(self.columns)]
        keys = [line.key for line in self.lines]
        whole = widths != self.widths or keys != [line.key for line in old]
        self.widths = widths
        self.virtual_size = Size(sum(widths) + GAP * (len(widths) - 1), len(self.lines) + 1)
        if whole:
            self._strips = {k: v for k, v in self._strips.items() if k in set(keys)}
            self.refresh()
        else:
            for index, (before, now) in enumerate(zip(old, self.lines, strict=True)):
                if before != now:
                    self.refresh_line(index + 1)
        self.move_cursor(row=self._follow(was, keys))

    def _follow(self, was: Line | None, keys: list[str]) -> int:
        if was is None:
            return 0
        if was.key in keys:
            return keys.index(was.key)
        group = next((i for i, line in enumerate(self.lines) if was.group and line.group == was.group), None)
        return group if group is not None else self.cursor_row

    def move_cursor(self, *, row: int) -> None:
        """Put the cursor on ``row`` (clamped), scroll it into view, and say so when it moved."""
        row = min(max(row, 0), len(self.lines) - 1) if self.lines else -1
        before, self.cursor_row = self.cursor_row, row
        if before != row:
            for index in (before, row):
                if 0 <= index < len(self.lines):
                    self.refresh_line(index + 1)
        if row >= 0:
            top, height = self.scroll_offset.y, max(self.scrollable_content_region.height - 1, 1)
            if row < top:
                self.scroll_to(y=row, animate=False)
            elif row >= top + height:
                self.scroll_to(y=row - height + 1, animate=False)
        if before != row and row >= 0:
            self.post_message(self.Highlighted(row))

    # -- keys and the mouse -------------------------------------------------------------------

    def action_cursor(self, step: int) -> None:
        self.move_cursor(row=max(self.cursor_row, 0) + step)

    def action_page(self, direction: int) -> None:
        self.move_cursor(row=max(self.cursor_row, 0) + direction * max(self.scrollable_content_region.height - 1, 1))

    def action_select_cursor(self) -> None:
        if 0 <= self.cursor_row < len(self.lines):
            self.post_message(self.Selected(self.cursor_row))

    def on_click(self, event: events.Click) -> None:
        row = event.y - 1 + self.scroll_offset.y
        if event.y >= 1 and 0 <= row < len(self.lines):
            if row == self.cursor_row and event.chain > 1:
                self.post_message(self.Selected(row))
            self.move_cursor(row=row)

    # -- rendering ----------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        base = self.rich_style
        if y == 0:
            strip = self._strip(self.columns, base + self.get_component_rich_style("agent-list--header"), None)
        else:
            index = y - 1 + scroll_y
            if index >= len(self.lines):
                return Strip.blank(width, base)
            strip = self._row(index, base)
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    def _row(self, index: int, base: Style) -> Strip:
        line = self.lines[index]
        selected = index == self.cursor_row
        key = (line.cells, line.style, selected, tuple(self.widths), base)
        cached = self._strips.get(line.key)
        if cached is not None and cached[0] == key:
            return cached[1]
        self.rendered += 1
        style = base + self.get_component_rich_style("agent-list--cursor") if selected else base
        strip = self._strip(line.cells, style, Style.parse(line.style) if line.style else None)
        self._strips[line.key] = (key, strip)
        return strip

    def _strip(self, cells: Sequence[str], style: Style, first: Style | None) -> Strip:
        segments = []
        last = len(cells) - 1
        for i, (text, width) in enumerate(zip(cells, self.widths, strict=True)):
            own = style + first if first is not None and i < self.styled else style
            segments.append(Segment(set_cell_size(text, width), own))
            if i < last:
                segments.append(Segment(" " * GAP, style))
        return Strip(segments, sum(self.widths) + GAP * last)
