import { ApiPropertyOptional } from '@nestjs/swagger';
import { readTimeoutSeconds } from '../request-values';
import { atMostLength, BodyRules, isBoolean, isOneOf, isString, matches, satisfies } from './body-rules';

/** Names and texts are at most this long; longer ones are refused before anything reads them. */
export const MAX_NAME_LENGTH = 256;

/**
 * Each body's keys are declared twice, side by side: as properties for the OpenAPI document (@nestjs/swagger) and in
 * its `rules` for the checks (body-rules.ts); test/unit/api/operation-bodies.spec.ts fails when the two differ.
 */
const mustBeString = (field: string) => isString(`${field}: must be a string`);
const atMost = (field: string) =>
  atMostLength(MAX_NAME_LENGTH, `${field}: must be at most ${MAX_NAME_LENGTH} characters`);
/** A name or text: `null` counts as absent, as before the mapping reads it ('' and null mean "not given"). */
const name = (field: string) => ({ checks: [mustBeString(field), atMost(field)], nullIsAbsent: true });

/** POST /switchover and POST /failover (reference 1.7): who hands over to whom, and when. */
export class SwitchoverBody {
  @ApiPropertyOptional({ maxLength: MAX_NAME_LENGTH, description: 'The current leader (required by a switchover).' })
  leader?: string;
  @ApiPropertyOptional({ maxLength: MAX_NAME_LENGTH, description: 'The member to promote (required by a failover).' })
  candidate?: string;
  /** The reference's older name of `candidate`. */
  @ApiPropertyOptional({ maxLength: MAX_NAME_LENGTH, deprecated: true })
  member?: string;
  @ApiPropertyOptional({
    example: '2030-01-01T12:00:00+00:00',
    description: 'ISO 8601 with an offset: schedules the switchover.',
  })
  scheduled_at?: string;
  @ApiPropertyOptional({
    maxLength: MAX_NAME_LENGTH,
    example: 'dc2',
    description: 'Hand over to a member of this site (without candidate), or check that the candidate is in it.',
  })
  site?: string;

  static readonly rules: BodyRules = {
    leader: name('leader'),
    candidate: name('candidate'),
    member: name('member'),
    scheduled_at: { checks: [mustBeString('scheduled_at')], nullIsAbsent: true },
    site: name('site'),
  };
}

const POSTGRES_ROLES = ['primary', 'standby_leader', 'replica'] as const;

/** POST /restart (reference 1.8): filters the restart must match, a deadline and a schedule. */
export class RestartBody {
  @ApiPropertyOptional({
    example: '2030-01-01T12:00:00+00:00',
    description: 'ISO 8601 with an offset: schedules the restart.',
  })
  schedule?: string;

  @ApiPropertyOptional({ enum: POSTGRES_ROLES, description: 'Restart only in this role.' })
  role?: (typeof POSTGRES_ROLES)[number];

  @ApiPropertyOptional({ example: '15.4', description: 'Restart only if the running version is lower.' })
  postgres_version?: string;

  @ApiPropertyOptional({
    oneOf: [{ type: 'number' }, { type: 'string' }],
    description: 'Seconds to wait for PostgreSQL to accept connections.',
  })
  timeout?: number | string;

  /** Its presence turns the filter on, whatever the value (as the reference). */
  @ApiPropertyOptional({ description: 'Restart only when a restart is pending (its presence turns the filter on).' })
  restart_pending?: unknown;

  /** `null` is checked here (and refused), unlike in the switchover's names. */
  static readonly rules: BodyRules = {
    schedule: { checks: [isString('schedule: must be an ISO 8601 timestamp with time zone')] },
    role: { checks: [isOneOf(POSTGRES_ROLES, 'PostgreSQL role should be either primary, standby_leader, or replica')] },
    postgres_version: { checks: [matches(/^\d{1,4}\.\d{1,4}(\.\d{1,4})?$/, versionMessage)] },
    timeout: {
      checks: [
        satisfies((value) => readTimeoutSeconds(value) !== null, 'Timeout should be a positive number of seconds'),
      ],
    },
    restart_pending: { checks: [] },
  };
}

function versionMessage(value: unknown): string {
  const shown = typeof value === 'string' && value.length > 40 ? `${value.slice(0, 37)}...` : String(value);
  return `Invalid PostgreSQL version format: X.Y or X.Y.Z is accepted: ${shown}`;
}

/** POST /reinitialize (reference 1.9). `from-leader` is patronictl's spelling of `from_leader`. */
export class ReinitializeBody {
  @ApiPropertyOptional({ description: 'Also while PostgreSQL is in a restart-retry loop.' })
  force?: boolean;
  @ApiPropertyOptional()
  from_leader?: boolean;
  @ApiPropertyOptional()
  'from-leader'?: boolean;

  static readonly rules: BodyRules = {
    force: { checks: [isBoolean('force: must be true or false')] },
    from_leader: { checks: [isBoolean('from_leader: must be true or false')] },
    'from-leader': { checks: [isBoolean('from-leader: must be true or false')] },
  };
}
