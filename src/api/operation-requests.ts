/**
 * Every operation body's checks, in one place: each endpoint's body pipe (its shape, its DTO's field rules in
 * dto/operation-bodies.dto.ts, its unknown keys), then the mapping to the node's typed request with the reference's
 * remaining checks in its order and with its texts (reference-behavior 1.7-1.9). Pure: the pause flag and the time
 * come from the caller. The controller checks nothing itself. PATCH/PUT /config have theirs in dto/config-body.pipe.ts.
 */
import { PipeTransform } from '@nestjs/common';
import { OperationRefused, ReinitializeRequest, RestartRequest, SwitchoverRequest } from '../ha/operation-types';
import { objectBody, OperationBodyPipe, ValidatedBody } from './dto/operation-body.pipe';
import { ReinitializeBody, RestartBody, SwitchoverBody } from './dto/operation-bodies.dto';
import { readSchedule, readTimeoutSeconds } from './request-values';
import { FailsafeCall } from '../ha/failsafe/failsafe-caller';

/** Body pipes of the operation endpoints, with the reference's order for unknown keys. */
export const switchoverBody = new OperationBodyPipe(SwitchoverBody, {
  unknownKeys: { kind: 'left-to-mapping' },
  required: true,
  aliases: ['member'],
});
export const restartBody = new OperationBodyPipe(RestartBody, {
  unknownKeys: { kind: 'in-body-order', message: (key) => `Unknown filter for the scheduled restart: ${key}` },
});
export const reinitializeBody = new OperationBodyPipe(ReinitializeBody, {
  unknownKeys: {
    kind: 'first',
    message: (keys, accepted) => `Unknown field: ${keys.join(', ')} (accepted: ${accepted.join(', ')})`,
  },
  aliases: ['from-leader'],
});
/** POST /reload: no field is read, but a body that is sent must be a JSON object. */
export const reloadBody = { transform: (raw: unknown): void => void objectBody(raw, true) } satisfies PipeTransform<
  unknown,
  void
>;
/** POST /failsafe: a failsafe leader's call (parseFailsafeCall). */
export const failsafeBody = {
  transform: (raw: unknown): FailsafeCall => parseFailsafeCall(objectBody(raw, false)),
} satisfies PipeTransform<unknown, FailsafeCall>;

/** '' and null mean "not given", as in the reference. */
const given = (value: string | null | undefined): string | undefined =>
  value === null || value === '' ? undefined : value;

/** POST /switchover and POST /failover up to the point where the cluster must be read (checks 1-6). */
export function parseSwitchover(
  kind: 'switchover' | 'failover',
  body: ValidatedBody<SwitchoverBody>,
  paused: boolean,
  now: number,
): SwitchoverRequest {
  const { fields, unknownKeys, acceptedKeys } = body;
  const leader = given(fields.leader);
  const candidate = given(fields.candidate) ?? given(fields.member);
  const scheduledText = given(fields.scheduled_at);
  if (kind === 'failover' && !candidate)
    throw new OperationRefused(400, 'Failover could be performed only to a specific candidate');
  if (kind === 'switchover' && !leader)
    throw new OperationRefused(400, 'Switchover could be performed only from a specific leader');
  if (unknownKeys.length > 0)
    throw new OperationRefused(400, `Unknown field: ${unknownKeys.join(', ')} (accepted: ${acceptedKeys.join(', ')})`);
  if (scheduledText && kind === 'failover') throw new OperationRefused(400, "Failover can't be scheduled");
  if (scheduledText && paused) throw new OperationRefused(400, "Can't schedule switchover in the paused state");
  const scheduledAt = scheduledText ? readSchedule(scheduledText, 'switchover', now) : undefined;
  if (paused && !candidate)
    throw new OperationRefused(400, 'Switchover is possible only to a specific candidate in a paused state');
  // A failover that names the leader is a switchover from here on (reference 1.7).
  const effectiveKind = kind === 'failover' && leader ? 'switchover' : kind;
  if (leader && candidate && leader === candidate)
    throw new OperationRefused(400, 'Switchover target and source are the same');
  const site = given(fields.site);
  return { kind: effectiveKind, leader, candidate, scheduledAt, ...(site ? { site } : {}) };
}

/** POST /restart: the filters, the timeout in seconds and the schedule (reference 1.8). */
export function parseRestart(body: ValidatedBody<RestartBody>, paused: boolean, now: number): RestartRequest {
  const { fields } = body;
  if (paused && fields.schedule !== undefined)
    throw new OperationRefused(500, "Can't schedule restart in the paused state");
  const request: RestartRequest = {};
  if (fields.schedule !== undefined) request.schedule = readSchedule(fields.schedule, 'restart', now);
  if (fields.role !== undefined) request.role = fields.role;
  if (fields.postgres_version !== undefined) request.postgres_version = fields.postgres_version;
  if (fields.timeout !== undefined) request.timeout = readTimeoutSeconds(fields.timeout)!;
  // As the reference: the key's presence turns the filter on.
  if (fields.restart_pending !== undefined) request.restart_pending = true;
  return request;
}

/** POST /reinitialize: `{force?, from_leader?}`. */
export function parseReinitialize(body: ValidatedBody<ReinitializeBody>): ReinitializeRequest {
  const { fields } = body;
  return { force: fields.force === true, fromLeader: fields.from_leader === true || fields['from-leader'] === true };
}

/** Length limits of a failsafe call's fields: a member name and two URLs. */
const FAILSAFE_FIELD_LIMITS = { name: 256, conn_url: 2048, api_url: 2048 } as const;

/** The most slot positions a failsafe call carries: as many as the dynamic configuration's `slots` allows, plus members. */
const FAILSAFE_MAX_SLOTS = 512;

/**
 * POST /failsafe: `name`, `conn_url` and `api_url` as strings, and the leader's slot positions
 * (`slots`, as Patroni 4.1 sends them), which replicas advance their copies to while the DCS is
 * down. Entries of `slots` that are not a slot name with a WAL position are left out, as is a
 * `slots` that is not a mapping: the call itself is still accepted, as the reference accepts it.
 */
export function parseFailsafeCall(body: Record<string, unknown>): FailsafeCall {
  const call: Record<string, string> = {};
  for (const [field, limit] of Object.entries(FAILSAFE_FIELD_LIMITS)) {
    const value = body[field];
    if (typeof value !== 'string' || value.length === 0 || value.length > limit) {
      throw new OperationRefused(400, `${field}: must be a non-empty string of at most ${limit} characters`);
    }
    call[field] = value;
  }
  const slots = body.slots;
  if (typeof slots !== 'object' || slots === null || Array.isArray(slots)) return call as unknown as FailsafeCall;
  const positions = Object.entries(slots)
    .filter(
      ([name, lsn]) =>
        /^[a-z0-9_]{1,63}$/.test(name) && typeof lsn === 'number' && Number.isSafeInteger(lsn) && lsn >= 0,
    )
    .slice(0, FAILSAFE_MAX_SLOTS);
  return { ...(call as unknown as FailsafeCall), slots: Object.fromEntries(positions) as Record<string, number> };
}
