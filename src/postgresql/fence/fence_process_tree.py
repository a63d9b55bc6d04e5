"""Processes as /proc shows them: whether one still runs, and which ones descend from another."""
from __future__ import annotations

import os


def _stat(pid: int) -> tuple[str, int] | None:
    """(state letter, parent pid) of a process, or None once it is gone."""
    try:
        with open('/proc/%d/stat' % pid, 'rb') as stat_file:
            stat = stat_file.read()
    except OSError:
        return None
    # The command name in parentheses may hold spaces and parentheses: the fields follow the last ')'.
    fields = stat[stat.rfind(b')') + 2:].split(b' ')
    return fields[0].decode(), int(fields[1])


def is_running(pid: int) -> bool:
    """Whether the process exists and is not a zombie (a zombie has exited; only its reaping is left)."""
    stat = _stat(pid)
    return stat is not None and stat[0] != 'Z'


def descendants_of(root: int) -> list[int]:
    """Every process descended from `root` (children, their children...), read from /proc once."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        stat = _stat(int(entry))
        if stat:
            children.setdefault(stat[1], []).append(int(entry))
    found = []
    pending = list(children.get(root, []))
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(children.get(pid, []))
    return found
