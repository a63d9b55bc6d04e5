"""The hardware watchdog (Patroni's `watchdog` section), held by the fence while its node leads.

The agent asks for it with each `arm` of a leader's term (`watchdog: {driver, device, timeout, required}`): the
fence opens the device, sets the timeout, and pets it on every arm, i.e. after every successful lock refresh.
It closes it with the magic 'V' when an arm comes without it, on `disarm`, and once the postmaster and every
process it started are gone after a stop the agent asked for. When the term ends on the fence's own deadline
(the agent froze, was lost or was too slow), the device is left armed and never pet again: as under Patroni, a
watchdog the user configured fires whenever the agent failed to keep its term. If the fence itself dies or
freezes, nobody pets the device and the machine resets: the layer under the dead man's switch.

Drivers: `default` is Linux's watchdog API (ioctls through fcntl); `testing` speaks the FIFO protocol of
Patroni's acceptance harness (`Ctimeout=<s>\\n` instead of the ioctl, '1' keepalive, 'V' magic close).
"""
from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import time

from fence_values import is_finite_number

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from fence_protocol import FenceWatchdog, FenceWatchdogState, WatchdogEvent

    # fcntl.ioctl(fd, request, mutable buffer, mutate_flag), or a stand-in for it in tests.
    Ioctl = Callable[..., object]


class WatchdogError(Exception):
    pass


def _ioc(direction: int, number: int, size: int) -> int:
    # Linux's _IOC for the watchdog ioctl type 'W' (include/uapi/linux/watchdog.h).
    return (direction << 30) | (size << 16) | (ord('W') << 8) | number


_READ, _READ_WRITE = 2, 3


class WatchdogInfo(ctypes.Structure):
    _fields_ = [('options', ctypes.c_uint32), ('firmware_version', ctypes.c_uint32), ('identity', ctypes.c_uint8 * 32)]


WDIOC_GETSUPPORT = _ioc(_READ, 0, ctypes.sizeof(WatchdogInfo))
WDIOC_SETTIMEOUT = _ioc(_READ_WRITE, 6, ctypes.sizeof(ctypes.c_int))
WDIOC_GETTIMEOUT = _ioc(_READ, 7, ctypes.sizeof(ctypes.c_int))
WDIOF_SETTIMEOUT = 0x0080
WDIOF_MAGICCLOSE = 0x0100

MAX_TIMEOUT_S = 0xFFFF


def _check_timeout(seconds: float) -> None:
    if not 0 < seconds < MAX_TIMEOUT_S:
        raise WatchdogError('invalid watchdog timeout %s: supported values are 1 to %d' % (seconds, MAX_TIMEOUT_S - 1))


class LinuxWatchdog:
    """/dev/watchdog through the kernel's watchdog API."""

    def __init__(self, device: str, ioctl: Ioctl = fcntl.ioctl) -> None:
        self.device = device
        self._ioctl_call = ioctl
        self._fd: int | None = None
        self._support: tuple[int, int, str] | None = None

    def open(self) -> None:
        # O_NONBLOCK: a path that is a FIFO with no reader fails (ENXIO) instead of freezing the fence's loop.
        try:
            fd = os.open(self.device, os.O_WRONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError as error:
            busy = ' (another process holds it, e.g. a previous fence whose term ended on its deadline)' \
                if error.errno == errno.EBUSY else ''
            raise WatchdogError("can't open watchdog device %s: %s%s" % (self.device, error.strerror or error, busy))
        os.set_blocking(fd, True)
        self._fd = fd

    def _ioctl(self, request: int, argument: ctypes.Structure | ctypes.c_int, what: str) -> None:
        if self._fd is None:
            raise WatchdogError('watchdog device %s is closed' % self.device)
        try:
            self._ioctl_call(self._fd, request, argument, True)
        except OSError as error:
            raise WatchdogError('%s on %s failed: %s' % (what, self.device, error.strerror or error))

    def support(self) -> tuple[int, int, str]:
        """(options, firmware version, identity) from WDIOC_GETSUPPORT, asked once per open device."""
        if self._support is None:
            info = WatchdogInfo()
            self._ioctl(WDIOC_GETSUPPORT, info, 'WDIOC_GETSUPPORT')
            identity = bytes(info.identity).split(b'\0', 1)[0].decode('utf-8', 'replace')
            self._support = (info.options, info.firmware_version, identity)
        return self._support

    def can_set_timeout(self) -> bool:
        return bool(self.support()[0] & WDIOF_SETTIMEOUT)

    def can_be_disabled(self) -> bool:
        return bool(self.support()[0] & WDIOF_MAGICCLOSE)

    def set_timeout(self, seconds: float) -> None:
        _check_timeout(seconds)
        self._ioctl(WDIOC_SETTIMEOUT, ctypes.c_int(int(seconds)), 'WDIOC_SETTIMEOUT')

    def get_timeout(self) -> int:
        timeout = ctypes.c_int()
        self._ioctl(WDIOC_GETTIMEOUT, timeout, 'WDIOC_GETTIMEOUT')
        return timeout.value

    def keepalive(self) -> None:
        self._write(b'1', 'keepalive')

    def close_without_magic(self) -> None:
        """A plain close: a device that was not told 'V' keeps counting (the kernel's "watchdog did not stop!")."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        self._support = None
        os.close(fd)

    def close(self) -> None:
        """The magic close: 'V' then close, which stops a device that supports it (WDIOF_MAGICCLOSE)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        self._support = None
        try:
            os.write(fd, b'V')
        except OSError as error:
            raise WatchdogError('magic close of %s failed: %s' % (self.device, error.strerror or error))
        finally:
            os.close(fd)

    def describe(self) -> str:
        identity = 'Linux watchdog device'
        if self._fd is not None:
            try:
                _, firmware, name = self.support()
                identity = (name or identity) + (' (firmware %d)' % firmware if firmware else '')
            except WatchdogError:
                pass
        return '%s at %s' % (identity, self.device)

    def _write(self, data: bytes, what: str) -> None:
        if self._fd is None:
            raise WatchdogError('watchdog device %s is closed' % self.device)
        try:
            os.write(self._fd, data)
        except OSError as error:
            raise WatchdogError('%s on %s failed: %s' % (what, self.device, error.strerror or error))


class TestingWatchdog(LinuxWatchdog):
    """Patroni's acceptance-harness protocol on a FIFO: what would be ioctls are written as text lines."""

    def __init__(self, device: str) -> None:
        super().__init__(device)
        self._timeout = 60

    def support(self) -> tuple[int, int, str]:
        return (WDIOF_SETTIMEOUT | WDIOF_MAGICCLOSE, 0, 'Watchdog test harness')

    def set_timeout(self, seconds: float) -> None:
        _check_timeout(seconds)
        self._write(('Ctimeout=%d\n' % seconds).encode(), 'set timeout')
        self._timeout = int(seconds)

    def get_timeout(self) -> int:
        return self._timeout


def make_device(driver: str, device: str) -> LinuxWatchdog:
    return TestingWatchdog(device) if driver == 'testing' else LinuxWatchdog(device)


# A failed activation is retried at the next arm after this backoff, doubled per failure: a device busy with
# another opener (a previous fence still holding it, /dev/watchdog allows one) comes free within its timeout.
RETRY_FIRST_S = 1.0
RETRY_MAX_S = 30.0
# How long past the device's own timeout a device left armed is still held before the plain close: a real
# device has reset the machine by then; the acceptance harness's FIFO sees "triggered" only while it is open.
LEFT_ARMED_HOLD_MARGIN_S = 5.0
LEFT_ARMED_REASON = "left armed: the term ended on the fence's deadline"


class WatchdogKeeper:
    """Which device the fence holds and with what timeout; `report` tells the agents each change of state."""

    def __init__(
        self,
        log: Callable[[str], None],
        report: Callable[[WatchdogEvent], None],
        make: Callable[[str, str], LinuxWatchdog] = make_device,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = log
        self._report = report
        self._make = make
        self._clock = clock
        self._device: LinuxWatchdog | None = None
        self._wanted: FenceWatchdog | None = None
        self._timeout: int | None = None
        self._last_ping: float | None = None
        # Set once the term ended on the deadline: the device is never pet nor magic-closed after that.
        self._left_armed = False
        self._reason: str | None = None
        # The request that failed to activate: retried at an arm after `_retry_at` (monotonic), with backoff.
        self._failed_for: FenceWatchdog | None = None
        self._retry_at = 0.0
        self._retry_delay = RETRY_FIRST_S
        self._error: str | None = None

    def state(self) -> FenceWatchdogState:
        state: FenceWatchdogState = {
            'running': self._device is not None,
            'timeout': self._timeout if self._device is not None else None,
            'device': self._wanted.get('device') if self._wanted else None,
            'error': self._error,
            'required': bool(self._wanted and self._wanted.get('required')),
        }
        if self._reason:
            state['reason'] = self._reason
        return state

    @property
    def left_armed(self) -> bool:
        return self._left_armed and self._device is not None

    def keep(self, wanted: FenceWatchdog | None) -> None:
        """One arm: `wanted` is the agent's request, or None when this term wants no watchdog."""
        if self._left_armed:
            self._log('watchdog request ignored: the device was %s' % LEFT_ARMED_REASON)
            return
        if not wanted:
            self.release('no longer asked for')
            return
        held = self._wanted
        same_device = held and (wanted['driver'], wanted['device']) == (held['driver'], held['device'])
        if self._device is not None and not same_device:
            self.release('its device changed')
        if self._device is None:
            if self._failed_for == wanted and self._clock() < self._retry_at:
                return
            self._activate(wanted)
            return
        try:
            if self._wanted is None or wanted['timeout'] != self._wanted['timeout']:
                # A new ttl or safety_margin: set at this keepalive, which starts the new period.
                self._wanted = wanted
                if self._device.can_set_timeout():
                    self._device.set_timeout(wanted['timeout'])
                self._timeout = self._device.get_timeout()
                self._log('%s updated with %s second timeout' % (self._device.describe(), self._timeout))
                self._changed(None)
            self._ping(self._device)
        except WatchdogError as error:
            self._log('error while sending watchdog keepalive: %s' % error)

    def release(self, reason: str) -> None:
        """Magic close; a device that cannot be stopped is pinged once more and left to fire.

        A device left armed on the term's deadline is not released: a reset already pending is never cancelled.
        """
        if self._left_armed:
            if self._device is not None:
                self._log('watchdog not closed (%s): the device was %s; the reset stays pending'
                          % (reason, LEFT_ARMED_REASON))
            return
        self._failed_for = None
        self._retry_delay = RETRY_FIRST_S
        device, self._device = self._device, None
        if device is None:
            return
        name = device.describe()
        try:
            if not device.can_be_disabled():
                # As the reference: one last keepalive gives the administrator the whole timeout.
                device.keepalive()
                self._log("%s can't be disabled: the system resets in %s seconds" % (name, self._timeout))
        except WatchdogError as error:
            self._log('error while disabling the watchdog: %s' % error)
        try:
            device.close()
            self._log('%s closed with the magic close (%s)' % (name, reason))
        except WatchdogError as error:
            self._log('error while disabling the watchdog: %s' % error)
        self._timeout = None
        self._changed('closed with the magic close: %s' % reason)

    def leave_armed(self) -> float:
        """The term ended on the fence's deadline: never pet the device again, never magic-close it.

        Returns the seconds (from now) the fence must still hold it open: the device's actual timeout after
        the last ping, plus a margin. 0 when no device is held.
        """
        if self._device is None or self._last_ping is None or self._timeout is None:
            return 0.0
        self._left_armed = True
        fires_in = max(0.0, self._last_ping + self._timeout - self._clock())
        self._log('%s %s: not pet since %.1f seconds, it fires in %.1f seconds'
                  % (self._device.describe(), LEFT_ARMED_REASON, self._clock() - self._last_ping, fires_in))
        self._changed(LEFT_ARMED_REASON)
        return fires_in + LEFT_ARMED_HOLD_MARGIN_S

    def close_left_armed(self) -> None:
        """After the hold: a plain close, without 'V', so that a device still counting keeps counting."""
        device, self._device = self._device, None
        if device is None:
            return
        device.close_without_magic()
        self._log('%s closed without the magic close after its timeout elapsed (%s)'
                  % (device.describe(), LEFT_ARMED_REASON))
        self._timeout = None

    def _ping(self, device: LinuxWatchdog) -> None:
        device.keepalive()
        self._last_ping = self._clock()

    def _activate(self, wanted: FenceWatchdog) -> None:
        self._wanted = wanted
        device = self._make(wanted['driver'], wanted['device'])
        try:
            device.open()
            if device.can_set_timeout():
                device.set_timeout(wanted['timeout'])
            actual = device.get_timeout()
            if actual > wanted['timeout']:
                if wanted.get('required'):
                    raise WatchdogError('a safe watchdog timeout %s could not be configured: it is %s'
                                        % (wanted['timeout'], actual))
                # As the reference in mode automatic: a late reset is better than none.
                self._log('warning: watchdog timeout %s seconds does not ensure safe termination within %s seconds'
                          % (actual, wanted['timeout']))
            self._ping(device)
        except WatchdogError as error:
            self._failed(device, wanted, error)
            return
        self._device = device
        self._timeout = actual
        self._error = None
        self._failed_for = None
        self._retry_delay = RETRY_FIRST_S
        if not device.can_be_disabled():
            self._log("%s can't be disabled: it will fire after this node loses the leader key" % device.describe())
        self._log('%s activated with %s second timeout' % (device.describe(), actual))
        self._changed(None)

    def _failed(self, device: LinuxWatchdog, wanted: FenceWatchdog, error: WatchdogError) -> None:
        # As the reference: an error when required; in mode automatic most machines simply have no device.
        level = 'error' if wanted.get('required') else 'info'
        if self._failed_for == wanted:
            self._retry_delay = min(self._retry_delay * 2, RETRY_MAX_S)
        else:
            self._retry_delay = RETRY_FIRST_S
        self._retry_at = self._clock() + self._retry_delay
        self._log('%s: could not activate %s: %s; retrying at an arm in %g seconds'
                  % (level, device.describe(), error, self._retry_delay))
        try:
            device.close()
        except (WatchdogError, OSError):
            pass
        self._failed_for = wanted
        self._error = str(error)
        self._changed(None)

    def _changed(self, reason: str | None) -> None:
        self._reason = reason
        state = self.state()
        event: WatchdogEvent = {'event': 'watchdog', 'running': state['running'], 'timeout': state['timeout'],
                                'device': state['device'], 'error': state['error'], 'required': state['required']}
        if reason:
            event['reason'] = reason
        self._report(event)


def parse_watchdog(value: object) -> FenceWatchdog | None:
    """The `watchdog` of an arm: None, or {driver, device, timeout, required} (FenceWatchdog in fence-protocol.json)."""
    if value is None:
        return None
    if not isinstance(value, dict) or value.get('driver') not in ('default', 'testing') \
            or not isinstance(value.get('device'), str) or not value['device'] \
            or not is_finite_number(value.get('timeout')):
        raise ValueError('watchdog must be {driver, device, timeout, required}')
    return {
        'driver': value['driver'], 'device': value['device'], 'timeout': int(value['timeout']),
        'required': value.get('required') is True,
    }
