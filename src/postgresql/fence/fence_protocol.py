"""The fence's side of its wire protocol, as types mypy --strict holds the fence's code to.

Defined once in fence-protocol.json; test/fence/test_protocol_schema.py fails when these types (and the
fence's stop signals and file names) differ from it, as test/unit/fence-protocol-schema.spec.ts does for the
agent's side (fence-protocol.ts). The fence imports this module only for type checking (`if TYPE_CHECKING`):
at run time `typing` would cost every fence about 1 MiB.
"""
from typing import Literal, NotRequired, TypedDict, Union

StopMode = Literal['smart', 'fast', 'immediate']
JournalStep = Literal['agent_lost', 'agent_back', 'stopping_postgres', 'postgres_stopped', 'lease_revoked',
                      'lease_revoke_failed', 'postmaster_adopted']


class TermReleaseTls(TypedDict):
    cacert: NotRequired[str]
    cert: NotRequired[str]
    key: NotRequired[str]


class TermReleaseAuth(TypedDict):
    username: str
    password: str


class TermRelease(TypedDict):
    endpoints: list[str]
    leaseId: str
    tls: NotRequired[TermReleaseTls]
    auth: NotRequired[TermReleaseAuth]


class FenceTerm(TypedDict):
    agentPid: int
    graceMs: float
    release: TermRelease


class FenceWatchdog(TypedDict):
    driver: Literal['default', 'testing']
    device: str
    timeout: float
    required: bool


class FenceWatchdogState(TypedDict):
    running: bool
    timeout: int | None
    device: str | None
    error: str | None
    required: NotRequired[bool]
    # Why the state changed, when the fence chose it (a magic close, or left armed on the term's deadline).
    reason: NotRequired[str]


# ------------------------------------------------------------ agent -> fence


class ArmRequest(TypedDict):
    op: Literal['arm']
    deadline: float
    term: NotRequired[FenceTerm]
    watchdog: NotRequired[FenceWatchdog]


class DisarmRequest(TypedDict):
    op: Literal['disarm']


class StopRequest(TypedDict):
    op: Literal['stop']
    mode: StopMode


class SignalRequest(TypedDict):
    op: Literal['signal']
    signal: Literal['SIGHUP']


# ------------------------------------------------------------ fence -> agent


class HelloEvent(TypedDict):
    event: Literal['hello']
    pid: int
    startedAt: int
    fencePid: int
    deadline: float | None
    watchdog: NotRequired[FenceWatchdogState]


class WatchdogEvent(TypedDict):
    event: Literal['watchdog']
    running: bool
    timeout: int | None
    device: str | None
    error: str | None
    required: NotRequired[bool]
    # Why the state changed, when the fence chose it (a magic close, or left armed on the term's deadline).
    reason: NotRequired[str]


class ExitEvent(TypedDict):
    event: Literal['exit']
    pid: int
    code: int | None
    signal: str | None
    requested: bool
    fenced: bool
    error: NotRequired[str]


FenceEvent = Union[HelloEvent, WatchdogEvent, ExitEvent]

# ------------------------------------------------------------ files and launch


class LaunchOptions(TypedDict):
    dataDir: str
    binDir: str
    postgres: NotRequired[str]
    stateDir: str
    configFile: NotRequired[str]
    uid: NotRequired[int]
    gid: NotRequired[int]
    deadline: NotRequired[float]
    adoptPid: NotRequired[int]


class JournalEntry(TypedDict):
    at: int
    step: JournalStep
    detail: str


# Each message type by the value of its `op` or `event`, as fence-protocol.json lists them.
REQUESTS: dict[str, type] = {'arm': ArmRequest, 'disarm': DisarmRequest, 'stop': StopRequest, 'signal': SignalRequest}
EVENTS: dict[str, type] = {'hello': HelloEvent, 'watchdog': WatchdogEvent, 'exit': ExitEvent}
