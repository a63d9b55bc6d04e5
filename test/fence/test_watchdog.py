"""The watchdog device as the fence holds it: what is written to the device, which timeout it is given, what the
agents are told, and when it is closed. The `testing` driver writes to a FIFO the test reads; the `default`
driver's ioctls go to a stand-in for the kernel, on a regular file standing for /dev/watchdog."""
from __future__ import annotations

import ctypes
import os
import unittest

from fence_support import ScratchTestCase

from fence_protocol import FenceWatchdog, WatchdogEvent
from fence_watchdog import (LEFT_ARMED_HOLD_MARGIN_S, WDIOC_GETSUPPORT, WDIOC_GETTIMEOUT, WDIOC_SETTIMEOUT,
                            WDIOF_MAGICCLOSE, WDIOF_SETTIMEOUT, LinuxWatchdog, TestingWatchdog, WatchdogError,
                            WatchdogInfo, WatchdogKeeper, parse_watchdog)


class FakeKernel:
    """Answers the watchdog ioctls as a device with the given capabilities and fixed timeout would."""

    def __init__(self, options: int, timeout: int | None = None) -> None:
        self.options = options
        self.fixed_timeout = timeout
        self.timeout = 60

    def ioctl(self, _fd: int, request: int, argument: object, _mutate: bool) -> int:
        if request == WDIOC_GETSUPPORT and isinstance(argument, WatchdogInfo):
            argument.options = self.options
            argument.identity[:9] = list(b'softdog\0\0')
        elif request == WDIOC_SETTIMEOUT and isinstance(argument, ctypes.c_int):
            self.timeout = argument.value if self.fixed_timeout is None else self.fixed_timeout
        elif request == WDIOC_GETTIMEOUT and isinstance(argument, ctypes.c_int):
            argument.value = self.fixed_timeout or self.timeout
        else:
            raise OSError(25, 'Inappropriate ioctl for device')
        return 0


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class WatchdogTestCase(ScratchTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.reports: list[WatchdogEvent] = []

    def keeper(self, kernel: FakeKernel | None = None) -> WatchdogKeeper:
        def make(driver: str, device: str) -> LinuxWatchdog:
            if kernel is None:
                from fence_watchdog import make_device
                return make_device(driver, device)
            return LinuxWatchdog(device, kernel.ioctl)

        return WatchdogKeeper(self.log, self.reports.append, make)


class TestingDriver(WatchdogTestCase):
    """Patroni's acceptance-harness protocol: `Ctimeout=<s>\\n`, then '1' per keepalive, 'V' on close."""

    def setUp(self) -> None:
        super().setUp()
        self.fifo = str(self.state_dir / 'watchdog')
        os.mkfifo(self.fifo)
        self.reader = os.open(self.fifo, os.O_RDONLY | os.O_NONBLOCK)

    def tearDown(self) -> None:
        os.close(self.reader)
        super().tearDown()

    def written(self) -> bytes:
        try:
            return os.read(self.reader, 4096)
        except BlockingIOError:
            return b''

    def wanted(self, timeout: int = 25, required: bool = False) -> FenceWatchdog:
        return {'driver': 'testing', 'device': self.fifo, 'timeout': timeout, 'required': required}

    def test_activated_on_the_first_arm_and_pet_on_each_after(self) -> None:
        keeper = self.keeper()
        keeper.keep(self.wanted())
        self.assertEqual(self.written(), b'Ctimeout=25\n1')
        keeper.keep(self.wanted())
        keeper.keep(self.wanted())
        self.assertEqual(self.written(), b'11')
        self.assertEqual(self.reports, [{'event': 'watchdog', 'running': True, 'timeout': 25, 'device': self.fifo,
                                         'error': None, 'required': False}])
        self.assert_logged('Watchdog test harness at %s activated with 25 second timeout' % self.fifo)

    def test_a_new_timeout_is_set_at_the_next_keepalive(self) -> None:
        keeper = self.keeper()
        keeper.keep(self.wanted(25))
        self.written()
        keeper.keep(self.wanted(15))
        self.assertEqual(self.written(), b'Ctimeout=15\n1')
        self.assertEqual(keeper.state()['timeout'], 15)

    def test_an_arm_without_it_closes_it_with_the_magic_close(self) -> None:
        keeper = self.keeper()
        keeper.keep(self.wanted())
        self.written()
        keeper.keep(None)
        self.assertEqual(self.written(), b'V')
        self.assertFalse(keeper.state()['running'])
        self.assert_logged('closed with the magic close (no longer asked for)')

    def test_a_disarm_closes_it_with_the_magic_close(self) -> None:
        keeper = self.keeper()
        keeper.keep(self.wanted())
        self.written()
        keeper.release('disarmed')
        self.assertEqual(self.written(), b'V')
        self.assertEqual(self.reports[-1]['running'], False)
        self.assert_logged('closed with the magic close (disarmed)')

    def test_left_armed_on_the_deadline_it_is_never_pet_nor_magic_closed(self) -> None:
        clock = FakeClock()
        keeper = WatchdogKeeper(self.log, self.reports.append, clock=clock)
        keeper.keep(self.wanted(15))
        clock.now += 3
        keeper.keep(self.wanted(15))
        self.written()
        clock.now += 14
        hold_s = keeper.leave_armed()
        # The last ping was 14 s ago: the device fires in 1 s; the fence holds it open a margin beyond that.
        self.assertAlmostEqual(hold_s, 1 + LEFT_ARMED_HOLD_MARGIN_S)
        self.assertTrue(keeper.left_armed)
        self.assertEqual(self.reports[-1], {'event': 'watchdog', 'running': True, 'timeout': 15, 'device': self.fifo,
                                            'error': None, 'required': False,
                                            'reason': "left armed: the term ended on the fence's deadline"})
        self.assert_logged("left armed: the term ended on the fence's deadline: not pet since 14.0 seconds")
        # Neither a late arm nor a disarm (the agent resuming) may pet it or cancel the pending reset.
        keeper.keep(self.wanted(15))
        keeper.release('disarmed')
        self.assertEqual(self.written(), b'')
        self.assert_logged('watchdog not closed (disarmed)')
        self.assertTrue(keeper.left_armed)
        keeper.close_left_armed()
        self.assertEqual(self.written(), b'', "a plain close: no 'V', so that a real device keeps counting")
        self.assertFalse(keeper.left_armed)
        self.assert_logged('closed without the magic close after its timeout elapsed')

    def test_a_magic_close_tells_the_agents_why(self) -> None:
        keeper = self.keeper()
        keeper.keep(self.wanted())
        keeper.release('postmaster stopped')
        self.assertEqual(self.reports[-1]['reason'], 'closed with the magic close: postmaster stopped')

    def test_a_busy_device_is_retried_with_backoff(self) -> None:
        clock = FakeClock()
        busy = [True]
        attempts: list[float] = []

        class BusyDevice(TestingWatchdog):
            def open(self) -> None:
                attempts.append(clock.now)
                if busy[0]:
                    raise WatchdogError("can't open watchdog device %s: Device or resource busy" % self.device)
                super().open()

        keeper = WatchdogKeeper(self.log, self.reports.append, lambda _driver, device: BusyDevice(device), clock)
        wanted: FenceWatchdog = {'driver': 'default', 'device': self.fifo, 'timeout': 25, 'required': True}
        for _ in range(12):  # an arm every 0.5 s for 6 s
            keeper.keep(wanted)
            clock.now += 0.5
        self.assertEqual(attempts, [0.0, 1.0, 3.0])  # then again at 7.0: backoff 1, 2, 4 s
        self.assert_logged('error: could not activate')
        self.assert_logged('retrying at an arm in 4 seconds')
        self.assertIn('busy', str(keeper.state()['error']))
        busy[0] = False
        clock.now = 7.0
        keeper.keep(wanted)
        self.assertEqual(attempts[-1], 7.0)
        self.assertTrue(keeper.state()['running'])
        self.assertEqual(self.written(), b'Ctimeout=25\n1')

    def test_a_device_nobody_reads_fails_once_and_is_not_retried_for_the_same_request(self) -> None:
        os.close(self.reader)
        self.reader = os.open('/dev/null', os.O_RDONLY)
        keeper = self.keeper()
        # A FIFO without a reader: the open fails at once (ENXIO) instead of blocking the fence's loop.
        lonely = str(self.state_dir / 'lonely')
        os.mkfifo(lonely)
        wanted: FenceWatchdog = {'driver': 'testing', 'device': lonely, 'timeout': 25, 'required': False}
        keeper.keep(wanted)
        keeper.keep(wanted)
        self.assertEqual(len(self.reports), 1)
        self.assertFalse(self.reports[0]['running'])
        self.assertIn("can't open watchdog device %s" % lonely, str(self.reports[0]['error']))
        self.assertEqual(sum('could not activate' in line for line in self.log_lines), 1)
        self.assert_logged('info: could not activate')
        keeper.keep(dict(wanted, required=True))  # type: ignore[arg-type]
        self.assert_logged('error: could not activate')


class DefaultDriver(WatchdogTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.device = self.state_dir / 'watchdog'
        self.device.write_bytes(b'')

    def wanted(self, required: bool) -> FenceWatchdog:
        return {'driver': 'default', 'device': str(self.device), 'timeout': 20, 'required': required}

    def test_the_timeout_is_set_through_the_ioctl(self) -> None:
        kernel = FakeKernel(WDIOF_SETTIMEOUT | WDIOF_MAGICCLOSE)
        keeper = self.keeper(kernel)
        keeper.keep(self.wanted(True))
        self.assertEqual(kernel.timeout, 20)
        self.assertEqual(keeper.state()['timeout'], 20)
        self.assert_logged('softdog at %s activated with 20 second timeout' % self.device)
        keeper.release('postmaster stopped')
        self.assertEqual(self.device.read_bytes(), b'1V')

    def test_a_longer_fixed_timeout_is_an_error_when_required(self) -> None:
        keeper = self.keeper(FakeKernel(WDIOF_MAGICCLOSE, timeout=60))
        keeper.keep(self.wanted(True))
        self.assertFalse(keeper.state()['running'])
        self.assertEqual(keeper.state()['error'], 'a safe watchdog timeout 20 could not be configured: it is 60')

    def test_a_longer_fixed_timeout_is_a_warning_in_mode_automatic(self) -> None:
        keeper = self.keeper(FakeKernel(WDIOF_MAGICCLOSE, timeout=60))
        keeper.keep(self.wanted(False))
        self.assertEqual((keeper.state()['running'], keeper.state()['timeout']), (True, 60))
        self.assert_logged('warning: watchdog timeout 60 seconds does not ensure safe termination within 20 seconds')

    def test_a_device_that_cannot_be_disabled_is_pet_once_more_and_left_to_fire(self) -> None:
        keeper = self.keeper(FakeKernel(WDIOF_SETTIMEOUT))
        keeper.keep(self.wanted(False))
        keeper.release('disarmed')
        self.assertEqual(self.device.read_bytes(), b'11V')
        self.assert_logged("can't be disabled: the system resets in 20 seconds")

    def test_timeouts_out_of_the_kernel_range_are_refused(self) -> None:
        device = LinuxWatchdog(str(self.device), FakeKernel(WDIOF_SETTIMEOUT).ioctl)
        device.open()
        try:
            for seconds in (0, 0xFFFF):
                with self.assertRaisesRegex(WatchdogError, 'invalid watchdog timeout %d: supported values are 1 to '
                                            '65534' % seconds):
                    device.set_timeout(seconds)
        finally:
            device.close()


class ParseWatchdog(unittest.TestCase):
    def test_a_complete_request_is_taken(self) -> None:
        self.assertEqual(parse_watchdog({'driver': 'default', 'device': '/dev/watchdog', 'timeout': 25.0,
                                         'required': True}),
                         {'driver': 'default', 'device': '/dev/watchdog', 'timeout': 25, 'required': True})
        self.assertIsNone(parse_watchdog(None))

    def test_anything_else_is_refused(self) -> None:
        for bad in ('x', {'driver': 'hpwdt', 'device': '/dev/w', 'timeout': 1},
                    {'driver': 'default', 'device': '', 'timeout': 1},
                    {'driver': 'default', 'device': '/dev/w', 'timeout': 'ten'},
                    {'driver': 'default', 'device': '/dev/w', 'timeout': float('inf')}):
            with self.subTest(value=bad):
                with self.assertRaisesRegex(ValueError, r'watchdog must be \{driver, device, timeout, required\}'):
                    parse_watchdog(bad)


if __name__ == '__main__':
    unittest.main()
