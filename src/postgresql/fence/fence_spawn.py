"""The postmaster's start: fork, then in the child standard streams, directory, identity and signals as a
fresh process has them, and exec. A failure before exec comes back through a close-on-exec pipe."""
from __future__ import annotations

import os
import signal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

    from fence_protocol import LaunchOptions


def spawn_postmaster(options: LaunchOptions, args: list[str], log_path: str) -> tuple[int, str | None]:
    """Returns (pid, None) once `postgres` runs, or (0, why) when it could not be started."""
    program = options.get('postgres') or os.path.join(options['binDir'], 'postgres')
    log_fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)
    error_read, error_write = os.pipe2(os.O_CLOEXEC)
    try:
        pid = os.fork()
    except OSError as error:
        for fd in (log_fd, error_read, error_write):
            os.close(fd)
        return 0, str(error)
    if pid == 0:
        _exec_in_child(program, [program] + args, options, log_fd, error_write)
    os.close(log_fd)
    os.close(error_write)
    failure = _read_all(error_read)
    os.close(error_read)
    if failure:
        os.waitpid(pid, 0)
        return 0, failure
    return pid, None


def _exec_in_child(program: str, argv: list[str], options: LaunchOptions, log_fd: int, error_write: int) -> NoReturn:
    try:
        devnull = os.open('/dev/null', os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.chdir(options['dataDir'])
        gid = options.get('gid')
        if gid is not None:
            try:
                os.setgroups([])
            except OSError:
                pass
            os.setgid(gid)
        uid = options.get('uid')
        if uid is not None:
            os.setuid(uid)
        # Python ignores SIGPIPE and the fence handles others: the postmaster starts with every default.
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        os.execv(program, argv)
    except BaseException as error:  # noqa: BLE001
        try:
            why = error.strerror if isinstance(error, OSError) and error.strerror else error
            os.write(error_write, ('%s: %s' % (program, why)).encode())
        finally:
            os._exit(127)


def _read_all(fd: int) -> str:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 4096)
        if not chunk:
            return b''.join(chunks).decode('utf-8', 'replace')
        chunks.append(chunk)
