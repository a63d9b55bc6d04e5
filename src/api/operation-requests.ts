/**
 * Parsing and validation of the operation endpoints' bodies, in the reference's order of checks
 * and with its texts (reference-behavior 1.7-1.9). Pure: no state is read here.
 */

/** A refusal: the status code and the plain-text answer. */
export class OperationRefused extends Error {
  constructor(
    readonly status: number,
    readonly text: string,
  ) {
    super(text);
  }
}

export interface SwitchoverRequest {
  kind: 'switchover' | 'failover';
  leader?: string;
  candidate?: string;
  /** Epoch ms, with the text as given (its offset is kept in the DCS). */
  scheduledAt?: { at: number; text: string };
}

const SWITCHOVER_FIELDS = ['leader', 'candidate', 'member', 'scheduled_at'];

/** A JSON object body, or a refusal naming what is wrong. `undefined` (no body) means `{}` when optional. */
export function objectBody(body: unknown, optional: boolean): Record<string, unknown> {
  if (body === undefined || body === null || body === '') {
    if (optional) return {};
    throw new OperationRefused(400, 'Request body must be a JSON object');
  }
  if (typeof body !== 'object' || Array.isArray(body)) throw new OperationRefused(400, 'Request body must be a JSON object');
  return body as Record<string, unknown>;
}

function optionalString(body: Record<string, unknown>, field: string): string | undefined {
  const value = body[field];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw new OperationRefused(400, `${field}: must be a string`);
  return value;
}

/**
 * `scheduled_at` / `schedule`: ISO 8601 with a time zone, in the future. `what` is `switchover`
 * or `restart`, as in the reference's messages.
 */
export function parseSchedule(text: string, what: 'switchover' | 'restart', now: number): { at: number; text: string } {
  const trimmed = text.trim();
  const at = Date.parse(trimmed);
  if (!/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}/.test(trimmed) || Number.isNaN(at)) {
    throw new OperationRefused(422, 'Unable to parse scheduled timestamp. It should be in an unambiguous format, e.g. ISO 8601');
  }
  if (!/(Z|[+-]\d{2}(:?\d{2})?)$/i.test(trimmed)) {
    throw new OperationRefused(400, `Timezone information is mandatory for the scheduled ${what}`);
  }
  if (at < now) throw new OperationRefused(422, `Cannot schedule ${what} in the past`);
  return { at, text: trimmed.replace(' ', 'T') };
}

/** POST /switchover and POST /failover up to the point where the cluster must be read (checks 1-6). */
export function parseSwitchover(kind: 'switchover' | 'failover', raw: unknown, paused: boolean, now: number): SwitchoverRequest {
  const body = objectBody(raw, false);
  const leader = optionalString(body, 'leader');
  const candidate = optionalString(body, 'candidate') ?? optionalString(body, 'member');
  const scheduledText = optionalString(body, 'scheduled_at');
  if (kind === 'failover' && !candidate) throw new OperationRefused(400, 'Failover could be performed only to a specific candidate');
  if (kind === 'switchover' && !leader) throw new OperationRefused(400, 'Switchover could be performed only from a specific leader');
  const unknown = Object.keys(body).filter((key) => !SWITCHOVER_FIELDS.includes(key));
  if (unknown.length > 0) throw new OperationRefused(400, `Unknown field: ${unknown.join(', ')} (accepted: leader, candidate, scheduled_at)`);
  if (scheduledText && kind === 'failover') throw new OperationRefused(400, "Failover can't be scheduled");
  if (scheduledText && paused) throw new OperationRefused(400, "Can't schedule switchover in the paused state");
  const scheduledAt = scheduledText ? parseSchedule(scheduledText, 'switchover', now) : undefined;
  if (paused && !candidate) throw new OperationRefused(400, 'Switchover is possible only to a specific candidate in a paused state');
  // A failover that names the leader is a switchover from here on (reference 1.7).
  const effectiveKind = kind === 'failover' && leader ? 'switchover' : kind;
  if (leader && candidate && leader === candidate) throw new OperationRefused(400, 'Switchover target and source are the same');
  return { kind: effectiveKind, leader, candidate, scheduledAt };
}

export interface RestartRequest {
  restart_pending?: boolean;
  role?: 'primary' | 'standby_leader' | 'replica';
  postgres_version?: string;
  /** Seconds to wait for PostgreSQL to accept connections. */
  timeout?: number;
  schedule?: { at: number; text: string };
}

const TIMEOUT_UNITS: Record<string, number> = { us: 1e-6, ms: 1e-3, s: 1, min: 60, h: 3600, d: 86400 };

/** POST /restart: every key validated in body order; the first error is answered (reference 1.8). */
export function parseRestart(raw: unknown, paused: boolean, now: number): RestartRequest {
  const body = objectBody(raw, true);
  if (paused && body.schedule !== undefined) throw new OperationRefused(500, "Can't schedule restart in the paused state");
  const request: RestartRequest = {};
  for (const [key, value] of Object.entries(body)) {
    switch (key) {
      case 'schedule':
        if (typeof value !== 'string') throw new OperationRefused(400, 'schedule: must be an ISO 8601 timestamp with time zone');
        request.schedule = parseSchedule(value, 'restart', now);
        break;
      case 'role':
        if (value !== 'primary' && value !== 'standby_leader' && value !== 'replica') {
          throw new OperationRefused(400, 'PostgreSQL role should be either primary, standby_leader, or replica');
        }
        request.role = value;
        break;
      case 'postgres_version':
        if (typeof value !== 'string' || !/^\d+\.\d+(\.\d+)?$/.test(value)) {
          throw new OperationRefused(400, `Invalid PostgreSQL version format: X.Y or X.Y.Z is accepted: ${String(value)}`);
        }
        request.postgres_version = value;
        break;
      case 'timeout':
        request.timeout = parseTimeout(value);
        break;
      case 'restart_pending':
        // As the reference: the key's presence turns the filter on.
        request.restart_pending = true;
        break;
      default:
        throw new OperationRefused(400, `Unknown filter for the scheduled restart: ${key}`);
    }
  }
  return request;
}

function parseTimeout(value: unknown): number {
  const refused = new OperationRefused(400, 'Timeout should be a positive number of seconds');
  if (typeof value === 'number') {
    if (!(value > 0) || !Number.isFinite(value)) throw refused;
    return value;
  }
  if (typeof value !== 'string') throw refused;
  const match = /^\s*(\d+(?:\.\d+)?)\s*(us|ms|s|min|h|d)?\s*$/.exec(value);
  if (!match) throw refused;
  const seconds = Number(match[1]) * TIMEOUT_UNITS[match[2] ?? 's'];
  if (!(seconds > 0)) throw refused;
  return seconds;
}

/** POST /reinitialize: `{force?, from_leader?}`; anything else is refused. */
export function parseReinitialize(raw: unknown): { force: boolean; fromLeader: boolean } {
  const body = objectBody(raw, true);
  const unknown = Object.keys(body).filter((key) => !['force', 'from_leader', 'from-leader'].includes(key));
  if (unknown.length > 0) throw new OperationRefused(400, `Unknown field: ${unknown.join(', ')} (accepted: force, from_leader)`);
  for (const key of ['force', 'from_leader', 'from-leader']) {
    if (body[key] !== undefined && typeof body[key] !== 'boolean') throw new OperationRefused(400, `${key}: must be true or false`);
  }
  return { force: body.force === true, fromLeader: body.from_leader === true || body['from-leader'] === true };
}
