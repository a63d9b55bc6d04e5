"""The fence: parent of one postmaster life, and its dead man's switch.

It runs as a process of its own (spawned detached by the agent), so it keeps counting down while the agent
is dead, frozen or cut off. Agents talk to it over a unix socket; any number may connect, and the last `arm`
from any of them sets the deadline. A client going away never disarms the switch: that is exactly the case
it exists for. The wire protocol and file layout are defined in `fence-protocol.json`.
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import time

from fence_adopt import AdoptedPostmaster
from fence_channel import Channel, another_fence_answers
from fence_spawn import spawn_postmaster
from fence_process_tree import descendants_of, is_running
from fence_term import LeaderTermGuard, parse_term
from fence_values import is_finite_number, iso_utc, js_text
from fence_watchdog import WatchdogKeeper, parse_watchdog

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from fence_loop import Loop, Timer
    from fence_protocol import ExitEvent, HelloEvent, LaunchOptions, WatchdogEvent

# After the fence's SIGQUIT, how long the postmaster gets before SIGKILL.
FENCE_KILL_GRACE_MS = 1000
# How long the fence waits for clients to read the exit event before it exits anyway.
EXIT_FLUSH_MS = 500
# A fast shutdown of its own (the agent is gone) that takes longer than this becomes immediate.
OWN_FAST_STOP_MS = 1500
# How long the processes of a SIGKILLed postmaster get to be reaped before the fence gives up waiting.
TREE_GONE_WAIT_S = 2.0
# The signal the postmaster expects for each shutdown mode.
STOP_SIGNALS: dict[str, signal.Signals] = {
    'smart': signal.SIGTERM, 'fast': signal.SIGINT, 'immediate': signal.SIGQUIT,
}


def fence_paths(state_dir: str) -> dict[str, str]:
    join = os.path.join
    return {
        'socket': join(state_dir, 'fence.sock'),
        'pidFile': join(state_dir, 'fence.pid'),
        'exitFile': join(state_dir, 'postmaster-exit.json'),
        'postmasterLog': join(state_dir, 'postgresql.log'),
        'journal': join(state_dir, 'fence-journal.jsonl'),
    }


def now_ms() -> int:
    return int(time.time() * 1000)


class Fence:
    def __init__(
        self, loop: Loop, options: LaunchOptions, log: Callable[[str], None], on_done: Callable[[int], None]
    ) -> None:
        self._loop = loop
        self._options = options
        self._log = log
        # Called once everything is reported; the program exits there.
        self._on_done = on_done
        self._paths = fence_paths(options['stateDir'])
        self._clients: set[Channel] = set()
        self._server: socket.socket | None = None
        self._postmaster_pid = 0
        # Set when this fence adopted a running postmaster instead of starting one: it is not our child.
        self._adopted: AdoptedPostmaster | None = None
        self._started_at = 0
        self._deadline: float | None = None
        self._deadline_monotonic: float | None = None
        self._deadline_timer: Timer | None = None
        self._kill_timer: Timer | None = None
        self._requested = False
        self._fenced = False
        self._exited = False
        self._finished = False
        self._told = False
        # Backends and helpers of a postmaster the fence SIGKILLed: they must be gone too before the term ends.
        self._killed_tree: list[int] = []
        self._term = LeaderTermGuard(loop, self._paths['journal'], log, self._stop_on_own_account)
        self._watchdog = WatchdogKeeper(log, self._tell_watchdog_state)
        # Until when (monotonic) the fence stays on after its postmaster's exit to hold a watchdog left armed.
        self._hold_watchdog_until = 0.0
        self._hold_timer: Timer | None = None

    @property
    def runs_postmaster(self) -> bool:
        return bool(self._postmaster_pid) and not self._exited

    def start(self) -> None:
        if another_fence_answers(self._paths['socket']):
            # Two fences on one data directory would be two postmasters; the second one must not start.
            self._log('another fence already answers on %s; not starting' % self._paths['socket'])
            self._on_done(2)
            return
        adopt_pid = self._options.get('adoptPid')
        if adopt_pid is not None and not self._adopt_postmaster(adopt_pid):
            return
        with open(self._paths['pidFile'], 'w') as pid_file:
            pid_file.write('%d\n' % os.getpid())
        if adopt_pid is None:
            self._loop.on_signal(signal.SIGCHLD, self._reap)
            self._spawn_postmaster()
            if self._exited:
                return
        # Armed before any agent connects: the postmaster never runs past the lease its agent last knew.
        deadline = self._options.get('deadline')
        if is_finite_number(deadline):
            self._set_deadline(deadline)
        self._listen()

    # ------------------------------------------------------------ the postmaster

    def _spawn_postmaster(self) -> None:
        options = self._options
        args = ['-D', options['dataDir']]
        if options.get('configFile'):
            args += ['-c', 'config_file=%s' % options['configFile']]
        pid, failure = spawn_postmaster(options, args, self._paths['postmasterLog'])
        if failure:
            self._report_spawn_failure(failure)
            return
        self._postmaster_pid = pid
        self._started_at = now_ms()
        self._log('postmaster started, pid %d' % pid)

    def _adopt_postmaster(self, pid: int) -> bool:
        """Takes on a postmaster that runs without a fence; False (and the fence exits, touching nothing) when `pid`
        is not this data directory's live postmaster."""
        try:
            # Not our child: its exit status goes to its new parent, PID 1; the fence only learns that it exited.
            self._adopted = AdoptedPostmaster(self._loop, self._options['dataDir'], pid, self._reap_adopted)
        except (OSError, ValueError) as error:
            self._log('cannot adopt postmaster %d: %s' % (pid, error))
            self._on_done(3)
            return False
        self._postmaster_pid, self._started_at = pid, self._adopted.started_at
        self._term.journal('postmaster_adopted', 'postmaster %d ran without a fence (its fence was killed or died); '
                           'fence %d adopted it' % (pid, os.getpid()))
        return True

    def _reap_adopted(self) -> None:
        if not self._exited:
            self._on_postmaster_exit(None, None)

    def _report_spawn_failure(self, error: str) -> None:
        self._log('cannot start postgres: %s' % error)
        if self._exited:
            return
        exit_event: ExitEvent = {
            'event': 'exit', 'pid': 0, 'code': None, 'signal': None, 'requested': False, 'fenced': False,
            'error': error,
        }
        self._record_exit(exit_event)
        self._finish(exit_event)

    def _reap(self) -> None:
        if not self._postmaster_pid or self._exited:
            return
        try:
            pid, status = os.waitpid(self._postmaster_pid, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if os.WIFSIGNALED(status):
            code, signal_name = None, signal.Signals(os.WTERMSIG(status)).name
        else:
            code, signal_name = os.waitstatus_to_exitcode(status), None
        self._on_postmaster_exit(code, signal_name)

    def _signal_postmaster(self, signum: signal.Signals) -> None:
        if not self._postmaster_pid or self._exited:
            return
        try:
            if self._adopted is not None:
                self._adopted.signal(signum)  # not our child: through its pidfd, never at a later owner of its pid
            else:
                os.kill(self._postmaster_pid, signum)
        except OSError as error:
            self._log('cannot send %s to the postmaster: %s' % (signal.Signals(signum).name, error))

    # ------------------------------------------------------------ agents

    def _listen(self) -> None:
        path = self._paths['socket']
        _remove(path)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        os.chmod(path, 0o600)
        server.listen(16)
        server.setblocking(False)
        self._server = server
        self._loop.selector.register(server, selectors.EVENT_READ, self._accept)
        self._log('listening on %s' % path)

    def _accept(self, _mask: int) -> None:
        if self._server is None:
            return
        try:
            sock, _ = self._server.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as error:
            self._log('socket server error: %s' % error)
            return
        if self._exited:
            sock.close()
            return
        channel = Channel(
            self._loop,
            sock,
            self._on_request,
            lambda line: self._log('ignored malformed request: %s' % line),
            self._on_client_closed,
        )
        self._clients.add(channel)
        self._term.agent_connected()
        hello: HelloEvent = {
            'event': 'hello', 'pid': self._postmaster_pid, 'startedAt': self._started_at, 'fencePid': os.getpid(),
            'deadline': self._deadline, 'watchdog': self._watchdog.state(),
        }
        channel.send(hello)

    def _on_client_closed(self, channel: Channel) -> None:
        self._clients.discard(channel)
        if not self._clients and not self._exited:
            self._term.agents_gone()
        if self._finished and not self._clients:
            self._exit()

    def _on_request(self, request: object) -> None:
        if self._exited:
            return
        fields: dict[str, object] = request if isinstance(request, dict) else {}
        op = fields.get('op')
        if op == 'arm':
            deadline = fields.get('deadline')
            if not is_finite_number(deadline):
                self._log('ignored arm without a numeric deadline')
                return
            try:
                term = parse_term(fields.get('term'))
                watchdog = parse_watchdog(fields.get('watchdog'))
            except ValueError as error:
                self._log('ignored arm with a malformed term or watchdog: %s' % error)
                return
            self._set_deadline(deadline)
            self._term.hold(term)
            self._watchdog.keep(watchdog)
        elif op == 'disarm':
            self._deadline = None
            self._deadline_monotonic = None
            self._term.hold(None)
            self._clear_deadline_timer()
            self._watchdog.release('disarmed')
        elif op == 'stop':
            mode = fields.get('mode')
            signum = STOP_SIGNALS.get(mode) if isinstance(mode, str) else None
            if signum is None:
                self._log('ignored stop with unknown mode %s' % mode)
                return
            self._requested = True
            self._log('stop requested (%s)' % mode)
            self._signal_postmaster(signum)
        elif op == 'signal':
            if fields.get('signal') == 'SIGHUP':
                self._signal_postmaster(signal.SIGHUP)
        else:
            self._log('ignored unknown request %s' % json.dumps(request, separators=(',', ':'))[:200])

    # ------------------------------------------------------------ the dead man's switch

    def _set_deadline(self, deadline: float) -> None:
        """The agent sends the deadline as wall-clock time; it is kept as the time left on the monotonic clock,
        read once on receipt, so that a jump of the wall clock (NTP, an operator) neither fires the switch early
        nor holds it back."""
        self._deadline = deadline
        self._deadline_monotonic = time.monotonic() * 1000 + (deadline - time.time() * 1000)
        self._schedule_deadline()

    def _schedule_deadline(self) -> None:
        """One timer set to the deadline itself; re-checked on firing because timers may wake a little early."""
        self._clear_deadline_timer()
        if self._deadline_monotonic is None or self._exited:
            return
        remaining = self._deadline_monotonic - time.monotonic() * 1000
        if remaining <= 0:
            self._fence_now()
            return
        self._deadline_timer = self._loop.call_later(remaining, self._schedule_deadline)

    def _clear_deadline_timer(self) -> None:
        if self._deadline_timer:
            self._deadline_timer.cancel()
        self._deadline_timer = None

    def _fence_now(self) -> None:
        """The dead man's switch fires: immediate shutdown now, SIGKILL if that is not enough."""
        if self._fenced or self._exited:
            return
        self._fenced = True
        self._log('deadline %s passed without a new arm: immediate shutdown of the postmaster'
                  % iso_utc(self._deadline or 0))
        self._signal_postmaster(signal.SIGQUIT)
        self._kill_after_grace()

    def _stop_on_own_account(self, reason: str) -> None:
        """The leader's agent is gone: fast shutdown (its WAL senders hand the replicas every commit), then
        immediate, then SIGKILL."""
        if self._exited:
            return
        self._log('%s: fast shutdown of the postmaster' % reason)
        self._signal_postmaster(signal.SIGINT)

        def escalate() -> None:
            self._log('postmaster still alive %d ms after SIGINT: immediate shutdown' % OWN_FAST_STOP_MS)
            self._signal_postmaster(signal.SIGQUIT)
            self._kill_after_grace()

        self._kill_timer = self._loop.call_later(OWN_FAST_STOP_MS, escalate)

    def _kill_after_grace(self) -> None:
        """SIGKILL of the whole tree if the postmaster outlives its SIGQUIT by FENCE_KILL_GRACE_MS."""
        self._kill_timer = self._loop.call_later(
            FENCE_KILL_GRACE_MS, lambda: self._kill_postmaster_tree('postmaster still alive after SIGQUIT'))

    def _kill_postmaster_tree(self, reason: str) -> None:
        """SIGKILL of the postmaster and of every process it started: orphaned backends must not serve on."""
        if self._exited or not self._postmaster_pid:
            return
        self._killed_tree = descendants_of(self._postmaster_pid)
        self._log('%s: SIGKILL of the postmaster and %d processes it started' % (reason, len(self._killed_tree)))
        self._signal_postmaster(signal.SIGKILL)
        for pid in self._killed_tree:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass  # already gone

    def stop_postmaster_fast(self, reason: str) -> None:
        """Fast shutdown for the fence's own reasons (it was told to stop, or it failed).

        Never leaves the postmaster unfenced.
        """
        self._log('%s: fast shutdown of the postmaster' % reason)
        self._signal_postmaster(signal.SIGINT)

    # ------------------------------------------------------------ the exit

    def _on_postmaster_exit(self, code: int | None, signal_name: str | None) -> None:
        self._log('postmaster %d exited (code %s, signal %s, requested %s, fenced %s)' % (
            self._postmaster_pid, js_text(code), js_text(signal_name), js_text(self._requested), js_text(self._fenced)))
        exit_event: ExitEvent = {'event': 'exit', 'pid': self._postmaster_pid, 'code': code, 'signal': signal_name,
                                 'requested': self._requested, 'fenced': self._fenced}
        self._record_exit(exit_event)
        # Only a postmaster whose every process is gone may let another node promote.
        try:
            self._wait_tree_gone()
            if self._fenced:
                # The agent failed to keep its term: as under Patroni, the watchdog it configured fires.
                self._hold_watchdog_until = time.monotonic() + self._watchdog.leave_armed()
            else:
                self._watchdog.release('postmaster stopped')
            self._term.after_postmaster_exit(exit_event, lambda: self._tell_agents(exit_event))
        except Exception as error:  # noqa: BLE001
            self._log('ending the term failed: %s' % error)
        self._finish(exit_event)

    def _wait_tree_gone(self) -> None:
        until = time.monotonic() + TREE_GONE_WAIT_S
        while any(is_running(pid) for pid in self._killed_tree):
            if time.monotonic() >= until:
                alive = [str(pid) for pid in self._killed_tree if is_running(pid)]
                raise RuntimeError('processes %s outlived SIGKILL' % ', '.join(alive))
            time.sleep(0.01)

    def _record_exit(self, exit_event: ExitEvent) -> None:
        """The exit goes to its file at once: it must survive even if the fence dies before telling anyone."""
        self._exited = True
        self._clear_deadline_timer()
        if self._kill_timer:
            self._kill_timer.cancel()
        try:
            temporary = self._paths['exitFile'] + '.tmp'
            with open(temporary, 'w') as record:
                record.write(json.dumps(dict(exit_event, at=now_ms()), separators=(',', ':')) + '\n')
            os.rename(temporary, self._paths['exitFile'])
        except OSError as error:
            self._log('cannot write %s: %s' % (self._paths['exitFile'], error))

    def _tell_watchdog_state(self, state: WatchdogEvent) -> None:
        for channel in list(self._clients):
            channel.send(state)

    def _tell_agents(self, exit_event: ExitEvent) -> None:
        """Stops serving and tells every agent connected.

        Done as soon as the exit is known (a live agent restarts PostgreSQL at once, under a new fence whose
        socket and pid file must not be removed by this one later), even while this fence stays on to end a term.
        """
        if self._told:
            return
        self._told = True
        if self._server:
            self._loop.selector.unregister(self._server)
            self._server.close()
            self._server = None
        _remove(self._paths['socket'])
        _remove(self._paths['pidFile'])
        for channel in list(self._clients):
            channel.end(exit_event)

    def _finish(self, exit_event: ExitEvent) -> None:
        """Tells agents if not done yet, then exits once they have read it (or after EXIT_FLUSH_MS)."""
        if self._finished:
            return
        self._finished = True
        self._tell_agents(exit_event)
        if not self._clients:
            self._exit()
            return
        self._loop.call_later(EXIT_FLUSH_MS, self._exit)

    def _exit(self) -> None:
        """Exits, unless a watchdog left armed must stay open until it has fired: closing it earlier, even
        without 'V', would tell a watcher such as the acceptance harness's FIFO that it was stopped."""
        if self._watchdog.left_armed:
            remaining_s = self._hold_watchdog_until - time.monotonic()
            if remaining_s > 0:
                if self._hold_timer is None:
                    self._hold_timer = self._loop.call_later(remaining_s * 1000, self._hold_over)
                return
            self._watchdog.close_left_armed()
        self._on_done(0)

    def _hold_over(self) -> None:
        # Timers may wake a little early: _exit checks again and sets a new one if needed.
        self._hold_timer = None
        self._exit()


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
