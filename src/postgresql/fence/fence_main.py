"""Entry point of the fence program: `python3 -s -S -B fence_main.py '<FenceLaunchOptions as JSON>'`.

The agent spawns it detached (own session and process group, stdout/stderr to `<state_dir>/fence.log`)
once per postmaster life. It starts the postmaster, serves `<state_dir>/fence.sock`, enforces the dead
man's switch, records the exit in `<state_dir>/postmaster-exit.json` and exits when the postmaster does.
It is written for Python's standard library alone, so that it weighs about 10 MiB instead of a Node
runtime's 40: see `fence_postmaster.py`, and `fence-protocol.json` for the protocol both sides speak.
"""
from __future__ import annotations

import functools
import json
import os
import signal
import sys
import time

from fence_loop import Loop
from fence_postmaster import Fence
from fence_values import iso_utc

TYPE_CHECKING = False
if TYPE_CHECKING:
    from fence_protocol import LaunchOptions


def log(message: str) -> None:
    sys.stderr.write('%s fence[%d] %s\n' % (iso_utc(int(time.time() * 1000)), os.getpid(), message))
    sys.stderr.flush()


def parse_options(argument: str) -> LaunchOptions:
    options: object = json.loads(argument)
    if not isinstance(options, dict):
        raise ValueError('fence options must be a JSON object')
    for key in ('dataDir', 'binDir', 'stateDir'):
        if not isinstance(options.get(key), str) or not options[key]:
            raise ValueError('fence option %s is missing' % key)
    # The three it cannot start without are checked; the optional ones are read with .get() where used.
    return options  # type: ignore[return-value]


def main() -> None:
    try:
        options = parse_options(sys.argv[1] if len(sys.argv) > 1 else '')
    except ValueError as error:
        log('usage: fence_main.py <options as JSON>: %s' % error)
        sys.exit(64)
    loop = Loop(log)
    exit_code: list[int] = []

    def done(code: int) -> None:
        if not exit_code:
            log('exiting (%d)' % code)
            exit_code.append(code)
            loop.stop()

    fence = Fence(loop, options, log, done)
    # A fence that dies leaves its postmaster unfenced, so signals aimed at the fence stop the postmaster
    # (fast) and the fence exits with it. SIGHUP (no terminal: detached) is ignored.
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.on_signal(signum, functools.partial(fence.stop_postmaster_fast, 'fence got %s' % signum.name))
    loop.on_signal(signal.SIGHUP, lambda: log('ignored SIGHUP'))
    try:
        fence.start()
    except Exception as error:  # noqa: BLE001
        # No agent could ever reach (or arm) this postmaster: take it down rather than leave it unfenced.
        fence.stop_postmaster_fast('fence failed: %s' % error)
        if not fence.runs_postmaster:
            done(1)
    if not exit_code:
        loop.run()
    sys.exit(exit_code[0] if exit_code else 1)


if __name__ == '__main__':
    main()
