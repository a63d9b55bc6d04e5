"""The fence: parent of one postmaster life, and its dead man's switch.

It runs as a process of its own (spawned detached by the agent), so it keeps counting down while the agent
is dead, frozen or cut off. Agents talk to it over a unix socket; any number may connect, and the last `arm`
from any of them sets the deadline. A client going away never disarms the switch: that is exactly the case
it exists for. The wire protocol and file layout are those of `fence-protocol.ts`.
"""
import json
import os
import selectors
import signal
import socket
import time

from fence_channel import Channel
from fence_spawn import spawn_postmaster
from fence_process_tree import descendants_of, is_running
from fence_term import LeaderTermGuard, parse_term
from fence_values import is_finite_number, iso_utc, js_text
from fence_watchdog import WatchdogKeeper

# After the fence's SIGQUIT, how long the postmaster gets before SIGKILL.
FENCE_KILL_GRACE_MS = 1000
# How long the fence waits for clients to read the exit event before it exits anyway.
EXIT_FLUSH_MS = 500
# A fast shutdown of its own (the agent is gone) that takes longer than this becomes immediate.
OWN_FAST_STOP_MS = 1500
# How long the processes of a SIGKILLed postmaster get to be reaped before the fence gives up waiting.
TREE_GONE_WAIT_S = 2.0
# The signal the postmaster expects for each shutdown mode.
STOP_SIGNALS = {'smart': signal.SIGTERM, 'fast': signal.SIGINT, 'immediate': signal.SIGQUIT}


def fence_paths(state_dir):
    join = os.path.join
    return {
        'socket': join(state_dir, 'fence.sock'),
        'pid_file': join(state_dir, 'fence.pid'),
        'exit_file': join(state_dir, 'postmaster-exit.json'),
        'postmaster_log': join(state_dir, 'postgresql.log'),
        'journal': join(state_dir, 'fence-journal.jsonl'),
    }


def now_ms():
    return int(time.time() * 1000)


class Fence:
    def __init__(self, loop, options, log, on_done):
        self._loop = loop
        self._options = options
        self._log = log
        # Called once everything is reported; the program exits there.
        self._on_done = on_done
        self._paths = fence_paths(options['stateDir'])
        self._clients = set()
        self._server = None
        self._postmaster_pid = 0
        self._started_at = 0
        self._deadline = None
        self._deadline_timer = None
        self._kill_timer = None
        self._requested = False
        self._fenced = False
        self._exited = False
        self._finished = False
        self._told = False
        # Backends and helpers of a postmaster the fence SIGKILLed: they must be gone too before the term ends.
        self._killed_tree = []
        self._term = LeaderTermGuard(loop, self._paths['journal'], log, self._stop_on_own_account)
        self._watchdog = WatchdogKeeper(log, self._tell_watchdog_state)

    @property
    def runs_postmaster(self):
        return bool(self._postmaster_pid) and not self._exited

    def start(self):
        if self._another_fence_answers():
            # Two fences on one data directory would be two postmasters; the second one must not start.
            self._log('another fence already answers on %s; not starting' % self._paths['socket'])
            self._on_done(2)
            return
        with open(self._paths['pid_file'], 'w') as pid_file:
            pid_file.write('%d\n' % os.getpid())
        self._loop.on_signal(signal.SIGCHLD, self._reap)
        self._spawn_postmaster()
        if self._exited:
            return
        # Armed before any agent connects: the postmaster never runs past the lease its agent last knew.
        deadline = self._options.get('deadline')
        if is_finite_number(deadline):
            self._deadline = deadline
            self._schedule_deadline()
        self._listen()

    # ------------------------------------------------------------ the postmaster

    def _spawn_postmaster(self):
        options = self._options
        args = ['-D', options['dataDir']]
        if options.get('configFile'):
            args += ['-c', 'config_file=%s' % options['configFile']]
        pid, failure = spawn_postmaster(options, args, self._paths['postmaster_log'])
        if failure:
            self._report_spawn_failure(failure)
            return
        self._postmaster_pid = pid
        self._started_at = now_ms()
        self._log('postmaster started, pid %d' % pid)

    def _report_spawn_failure(self, error):
        self._log('cannot start postgres: %s' % error)
        if self._exited:
            return
        exit_event = {'event': 'exit', 'pid': 0, 'code': None, 'signal': None, 'requested': False, 'fenced': False, 'error': error}
        self._record_exit(exit_event)
        self._finish(exit_event)

    def _reap(self):
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

    def _signal_postmaster(self, signum):
        if not self._postmaster_pid or self._exited:
            return
        try:
            os.kill(self._postmaster_pid, signum)
        except OSError as error:
            self._log('cannot send %s to the postmaster: %s' % (signal.Signals(signum).name, error))

    # ------------------------------------------------------------ agents

    def _listen(self):
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

    def _accept(self, _mask):
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
        channel.send({'event': 'hello', 'pid': self._postmaster_pid, 'startedAt': self._started_at, 'fencePid': os.getpid(), 'deadline': self._deadline, 'watchdog': self._watchdog.state()})

    def _on_client_closed(self, channel):
        self._clients.discard(channel)
        if not self._clients and not self._exited:
            self._term.agents_gone()
        if self._finished and not self._clients:
            self._on_done(0)

    def _on_request(self, request):
        if self._exited:
            return
        op = request.get('op') if isinstance(request, dict) else None
        if op == 'arm':
            deadline = request.get('deadline')
            if not is_finite_number(deadline):
                self._log('ignored arm without a numeric deadline')
                return
            try:
                term = parse_term(request.get('term'))
                watchdog = parse_watchdog(request.get('watchdog'))
            except ValueError as error:
                self._log('ignored arm with a malformed term or watchdog: %s' % error)
                return
            self._deadline = deadline
            self._term.hold(term)
            self._schedule_deadline()
            self._watchdog.keep(watchdog)
        elif op == 'disarm':
            self._deadline = None
            self._term.hold(None)
            self._clear_deadline_timer()
            self._watchdog.release('disarmed')
        elif op == 'stop':
            signum = STOP_SIGNALS.get(request.get('mode'))
            if signum is None:
                self._log('ignored stop with unknown mode %s' % request.get('mode'))
                return
            self._requested = True
            self._log('stop requested (%s)' % request['mode'])
            self._signal_postmaster(signum)
        elif op == 'signal':
            if request.get('signal') == 'SIGHUP':
                self._signal_postmaster(signal.SIGHUP)
        else:
            self._log('ignored unknown request %s' % json.dumps(request, separators=(',', ':'))[:200])

    # ------------------------------------------------------------ the dead man's switch

    def _schedule_deadline(self):
        """One timer set to the deadline itself; re-checked on firing because timers may wake a little early."""
        self._clear_deadline_timer()
        if self._deadline is None or self._exited:
            return
        remaining = self._deadline - time.time() * 1000
        if remaining <= 0:
            self._fence_now()
            return
        self._deadline_timer = self._loop.call_later(remaining, self._schedule_deadline)

    def _clear_deadline_timer(self):
        if self._deadline_timer:
            self._deadline_timer.cancel()
        self._deadline_timer = None

    def _fence_now(self):
        """The dead man's switch fires: immediate shutdown now, SIGKILL if that is not enough."""
        if self._fenced or self._exited:
            return
        self._fenced = True
        self._log('deadline %s passed without a new arm: immediate shutdown of the postmaster' % iso_utc(self._deadline or 0))
        self._signal_postmaster(signal.SIGQUIT)
        self._kill_timer = self._loop.call_later(FENCE_KILL_GRACE_MS, lambda: self._kill_postmaster_tree('postmaster still alive after SIGQUIT'))

    def _stop_on_own_account(self, reason):
        """The leader's agent is gone: fast shutdown (its WAL senders hand the replicas every commit), then immediate, then SIGKILL."""
        if self._exited:
            return
        self._log('%s: fast shutdown of the postmaster' % reason)
        self._signal_postmaster(signal.SIGINT)

        def escalate():
            self._log('postmaster still alive %d ms after SIGINT: immediate shutdown' % OWN_FAST_STOP_MS)
            self._signal_postmaster(signal.SIGQUIT)
            self._kill_timer = self._loop.call_later(FENCE_KILL_GRACE_MS, lambda: self._kill_postmaster_tree('postmaster still alive after SIGQUIT'))

        self._kill_timer = self._loop.call_later(OWN_FAST_STOP_MS, escalate)

    def _kill_postmaster_tree(self, reason):
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

    def stop_postmaster_fast(self, reason):
        """Fast shutdown for the fence's own reasons (it was told to stop, or it failed); never leaves the postmaster unfenced."""
        self._log('%s: fast shutdown of the postmaster' % reason)
        self._signal_postmaster(signal.SIGINT)

    # ------------------------------------------------------------ the exit

    def _on_postmaster_exit(self, code, signal_name):
        self._log('postmaster %d exited (code %s, signal %s, requested %s, fenced %s)' % (
            self._postmaster_pid, js_text(code), js_text(signal_name), js_text(self._requested), js_text(self._fenced)))
        exit_event = {'event': 'exit', 'pid': self._postmaster_pid, 'code': code, 'signal': signal_name, 'requested': self._requested, 'fenced': self._fenced}
        self._record_exit(exit_event)
        # Only a postmaster whose every process is gone may let another node promote.
        try:
            self._wait_tree_gone()
            # Nothing of this postmaster can acknowledge a write any more: the machine need not be reset.
            self._watchdog.release('postmaster stopped')
            self._term.after_postmaster_exit(exit_event, lambda: self._tell_agents(exit_event))
        except Exception as error:  # noqa: BLE001
            self._log('ending the term failed: %s' % error)
        self._finish(exit_event)

    def _wait_tree_gone(self):
        until = time.monotonic() + TREE_GONE_WAIT_S
        while any(is_running(pid) for pid in self._killed_tree):
            if time.monotonic() >= until:
                alive = [str(pid) for pid in self._killed_tree if is_running(pid)]
                raise RuntimeError('processes %s outlived SIGKILL' % ', '.join(alive))
            time.sleep(0.01)

    def _record_exit(self, exit_event):
        """The exit goes to its file at once: it must survive even if the fence dies before telling anyone."""
        self._exited = True
        self._clear_deadline_timer()
        if self._kill_timer:
            self._kill_timer.cancel()
        try:
            temporary = self._paths['exit_file'] + '.tmp'
            with open(temporary, 'w') as record:
                record.write(json.dumps(dict(exit_event, at=now_ms()), separators=(',', ':')) + '\n')
            os.rename(temporary, self._paths['exit_file'])
        except OSError as error:
            self._log('cannot write %s: %s' % (self._paths['exit_file'], error))

    def _tell_watchdog_state(self, state):
        for channel in list(self._clients):
            channel.send(state)

    def _tell_agents(self, exit_event):
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
        _remove(self._paths['pid_file'])
        for channel in list(self._clients):
            channel.end(exit_event)

    def _finish(self, exit_event):
        """Tells agents if not done yet, then exits once they have read it (or after EXIT_FLUSH_MS)."""
        if self._finished:
            return
        self._finished = True
        self._tell_agents(exit_event)
        if not self._clients:
            self._on_done(0)
            return
        self._loop.call_later(EXIT_FLUSH_MS, lambda: self._on_done(0))

    def _another_fence_answers(self):
        """True when a live fence greets us on the socket (one that is already exiting hangs up without a hello)."""
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.settimeout(1.0)
        try:
            probe.connect(self._paths['socket'])
            received = b''
            until = time.monotonic() + 1.0
            while b'\n' not in received and time.monotonic() < until:
                chunk = probe.recv(4096)
                if not chunk:
                    return False
                received += chunk
            hello = json.loads(received.split(b'\n', 1)[0])
            return isinstance(hello, dict) and hello.get('event') == 'hello'
        except (OSError, ValueError):
            return False
        finally:
            probe.close()


def parse_watchdog(value):
    """The `watchdog` of an arm: None, or {driver, device, timeout, required} (fence-protocol.ts FenceWatchdog)."""
    if value is None:
        return None
    if not isinstance(value, dict) or value.get('driver') not in ('default', 'testing') or not isinstance(value.get('device'), str) \
            or not is_finite_number(value.get('timeout')) or not value['device']:
        raise ValueError('watchdog must be {driver, device, timeout, required}')
    return {'driver': value['driver'], 'device': value['device'], 'timeout': int(value['timeout']), 'required': value.get('required') is True}


def _remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
