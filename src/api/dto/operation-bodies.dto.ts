import {
  Allow,
  IsBoolean,
  IsIn,
  IsOptional,
  IsString,
  Matches,
  MaxLength,
  ValidateBy,
  ValidateIf,
  type ValidationArguments,
} from 'class-validator';
import { ApiPropertyOptional } from '../openapi-decorators';
import { readTimeoutSeconds } from '../request-values';

/** Names and texts are at most this long; longer ones are refused before anything reads them. */
export const MAX_NAME_LENGTH = 256;

/** Checks a key only when the body has it; unlike IsOptional, `null` is checked (and refused) too. */
const IfPresent = () => ValidateIf((_object: object, value: unknown) => value !== undefined);

// Decorators run bottom-up: the type check is written last so that it answers first.
const mustBeString = (field: string) => ({ message: `${field}: must be a string` });
const atMost = (field: string) => ({ message: `${field}: must be at most ${MAX_NAME_LENGTH} characters` });

/** POST /switchover and POST /failover (reference 1.7): who hands over to whom, and when. */
export class SwitchoverBody {
  @ApiPropertyOptional({ maxLength: MAX_NAME_LENGTH, description: 'The current leader (required by a switchover).' })
  @IsOptional()
  @MaxLength(MAX_NAME_LENGTH, atMost('leader'))
  @IsString(mustBeString('leader'))
  leader?: string;
  @ApiPropertyOptional({ maxLength: MAX_NAME_LENGTH, description: 'The member to promote (required by a failover).' })
  @IsOptional()
  @MaxLength(MAX_NAME_LENGTH, atMost('candidate'))
  @IsString(mustBeString('candidate'))
  candidate?: string;
  /** The reference's older name of `candidate`. */
  @ApiPropertyOptional({ maxLength: MAX_NAME_LENGTH, deprecated: true })
  @IsOptional()
  @MaxLength(MAX_NAME_LENGTH, atMost('member'))
  @IsString(mustBeString('member'))
  member?: string;
  @ApiPropertyOptional({
    example: '2030-01-01T12:00:00+00:00',
    description: 'ISO 8601 with an offset: schedules the switchover.',
  })
  @IsOptional()
  @IsString(mustBeString('scheduled_at'))
  scheduled_at?: string;
  @ApiPropertyOptional({
    maxLength: MAX_NAME_LENGTH,
    example: 'dc2',
    description: 'Hand over to a member of this site (without candidate), or check that the candidate is in it.',
  })
  @IsOptional()
  @MaxLength(MAX_NAME_LENGTH, atMost('site'))
  @IsString(mustBeString('site'))
  site?: string;
}

const POSTGRES_ROLES = ['primary', 'standby_leader', 'replica'] as const;

/** POST /restart (reference 1.8): filters the restart must match, a deadline and a schedule. */
export class RestartBody {
  @ApiPropertyOptional({
    example: '2030-01-01T12:00:00+00:00',
    description: 'ISO 8601 with an offset: schedules the restart.',
  })
  @IfPresent()
  @IsString({ message: 'schedule: must be an ISO 8601 timestamp with time zone' })
  schedule?: string;

  @ApiPropertyOptional({ enum: POSTGRES_ROLES, description: 'Restart only in this role.' })
  @IfPresent()
  @IsIn(POSTGRES_ROLES, { message: 'PostgreSQL role should be either primary, standby_leader, or replica' })
  role?: (typeof POSTGRES_ROLES)[number];

  @ApiPropertyOptional({ example: '15.4', description: 'Restart only if the running version is lower.' })
  @IfPresent()
  @IsString({ message: versionMessage })
  @MaxLength(32, { message: versionMessage })
  @Matches(/^\d{1,4}\.\d{1,4}(\.\d{1,4})?$/, { message: versionMessage })
  postgres_version?: string;

  @ApiPropertyOptional({
    oneOf: [{ type: 'number' }, { type: 'string' }],
    description: 'Seconds to wait for PostgreSQL to accept connections.',
  })
  @IfPresent()
  @ValidateBy(
    { name: 'isRestartTimeout', validator: { validate: (value: unknown) => readTimeoutSeconds(value) !== null } },
    { message: 'Timeout should be a positive number of seconds' },
  )
  timeout?: number | string;

  /** Its presence turns the filter on, whatever the value (as the reference). */
  @ApiPropertyOptional({ description: 'Restart only when a restart is pending (its presence turns the filter on).' })
  @Allow()
  restart_pending?: unknown;
}

function versionMessage(args: ValidationArguments): string {
  const shown =
    typeof args.value === 'string' && args.value.length > 40 ? `${args.value.slice(0, 37)}...` : String(args.value);
  return `Invalid PostgreSQL version format: X.Y or X.Y.Z is accepted: ${shown}`;
}

/** POST /reinitialize (reference 1.9). `from-leader` is patronictl's spelling of `from_leader`. */
export class ReinitializeBody {
  @ApiPropertyOptional({ description: 'Also while PostgreSQL is in a restart-retry loop.' })
  @IfPresent()
  @IsBoolean({ message: 'force: must be true or false' })
  force?: boolean;
  @ApiPropertyOptional()
  @IfPresent()
  @IsBoolean({ message: 'from_leader: must be true or false' })
  from_leader?: boolean;
  @ApiPropertyOptional()
  @IfPresent()
  @IsBoolean({ message: 'from-leader: must be true or false' })
  'from-leader'?: boolean;
}
