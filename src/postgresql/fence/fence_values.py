"""Small value helpers the fence's modules share."""
from __future__ import annotations

import math
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeGuard


def is_finite_number(value: object) -> TypeGuard[float]:
    """A JSON number (not a boolean, not NaN or infinite)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def iso_utc(epoch_ms: float) -> str:
    """`2026-11-26T05:17:25.816Z`, as JavaScript's toISOString writes it (the agent's logs do too)."""
    return time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(epoch_ms / 1000.0)) + '.%03dZ' % (int(epoch_ms) % 1000)


def js_text(value: object) -> str:
    """How the agent's logs have always spelled these values (JavaScript's)."""
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return str(value)
