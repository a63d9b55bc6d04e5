import type { SchemaObject } from '@nestjs/swagger';
import { ApiProperty, ApiPropertyOptional } from '../openapi-decorators';
import { POSTGRES_STATES } from '../../postgresql/postgres-states';

/**
 * The JSON documents of the read endpoints, for the OpenAPI document (`GET /openapi.json`) only:
 * the answers are built by status-document.ts, cluster-document.ts and the projections, and the
 * OpenAPI test checks real answers against these schemas.
 */

/** One parameter change waiting for a restart. */
const PENDING_CHANGE: SchemaObject = {
  type: 'object',
  properties: { old_value: { type: 'string' }, new_value: { type: 'string' } },
  required: ['old_value', 'new_value'],
};

const STATE_TEXTS = Object.values(POSTGRES_STATES).map((state) => state.text);

/** `{error, message, statusCode}`: every JSON error answer (4xx and 5xx that are not plain-text operation answers). */
export class ErrorBodyDto {
  @ApiProperty({ example: 'Bad Request', description: 'The reason phrase of the status code.' }) error!: string;
  @ApiProperty({
    oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }],
    description: 'What was wrong, in words.',
  })
  message!: string | string[];
  @ApiProperty({ example: 400 }) statusCode!: number;
  @ApiPropertyOptional({ type: [String], description: '`PATCH`/`PUT /config`: one entry per refused key.' })
  problems?: string[];
}

export class XlogDto {
  @ApiPropertyOptional({ type: 'integer', description: 'Primary: current WAL position.' }) location?: number;
  @ApiPropertyOptional({ type: 'integer', description: 'Replica: received WAL position.' }) received_location?: number;
  @ApiPropertyOptional({ type: 'integer', description: 'Replica: replayed WAL position.' }) replayed_location?: number;
  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    description: 'Replica: time of the last replayed transaction.',
  })
  replayed_timestamp?: string | null;
  @ApiPropertyOptional({ description: 'Replica: whether replay is paused.' }) paused?: boolean;
}

export class ReplicationDto {
  @ApiProperty() usename!: string;
  @ApiProperty() application_name!: string;
  @ApiProperty({ type: 'string', nullable: true }) client_addr!: string | null;
  @ApiProperty({ example: 'streaming' }) state!: string;
  @ApiProperty({ example: 'async' }) sync_state!: string;
  @ApiProperty({ type: 'integer' }) sync_priority!: number;
}

export class IdentityDto {
  @ApiProperty({ example: '0.1.0' }) version!: string;
  @ApiProperty({ description: 'The cluster name.' }) scope!: string;
  @ApiProperty({ description: 'The node name.' }) name!: string;
}

/** Spec 2.1: `GET /stator` and the body of every health GET. `patroni` replaces `stator` in compatibility mode. */
export class StatusDocumentDto {
  @ApiProperty({ enum: STATE_TEXTS }) state!: string;
  @ApiPropertyOptional({ example: '2026-11-21 05:30:01.123456+00:00' }) postmaster_start_time?: string;
  @ApiProperty({
    example: 'primary',
    description: "primary, replica, standby_leader; without a running server the role machine's role.",
  })
  role!: string;
  @ApiPropertyOptional({ type: 'integer', example: 150014 }) server_version?: number;
  @ApiPropertyOptional({ type: XlogDto }) xlog?: XlogDto;
  @ApiPropertyOptional({ description: 'A synchronous standby.' }) sync_standby?: boolean;
  @ApiPropertyOptional({ description: 'A quorum standby.' }) quorum_standby?: boolean;
  @ApiPropertyOptional({ type: 'integer' }) timeline?: number;
  @ApiPropertyOptional({ example: 'streaming' }) replication_state?: string;
  @ApiPropertyOptional({ type: [ReplicationDto] }) replication?: ReplicationDto[];
  @ApiPropertyOptional({ enum: [true] }) pause?: boolean;
  @ApiPropertyOptional({ enum: [true] }) cluster_unlocked?: boolean;
  @ApiPropertyOptional({ enum: [true] }) failsafe_mode_is_active?: boolean;
  @ApiProperty({ type: 'integer', description: 'Epoch seconds of the last successful DCS read.' })
  dcs_last_seen!: number;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true }) tags?: Record<string, unknown>;
  @ApiPropertyOptional({ example: '7710492406033019830' }) database_system_identifier?: string;
  @ApiPropertyOptional({ enum: [true] }) pending_restart?: boolean;
  @ApiPropertyOptional({ type: 'object', additionalProperties: PENDING_CHANGE }) pending_restart_reason?: Record<
    string,
    { old_value: string; new_value: string }
  >;
  @ApiPropertyOptional({ enum: [true], description: 'Stator: PostgreSQL stopped answering the sampler.' })
  postgres_unresponsive?: boolean;
  @ApiPropertyOptional({ type: 'integer', description: 'Stator: seconds since the reading shown.' })
  sample_age?: number;
  @ApiProperty({ type: IdentityDto }) stator!: IdentityDto;
  @ApiPropertyOptional({ example: 'dc1', description: "The node's site setting (docs/sites.md), when it has one." })
  site?: string;
  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'The restart waiting for its time, with its filters.',
  })
  scheduled_restart?: Record<string, unknown>;
  @ApiPropertyOptional({
    example: true,
    description: 'Watchdog mode required, and no usable watchdog: this node takes no leader lock.',
  })
  watchdog_failed?: boolean;
}

export class ClusterMemberDto {
  @ApiProperty() name!: string;
  @ApiProperty({ example: 'leader', description: 'leader, standby_leader, sync_standby, quorum_standby, replica.' })
  role!: string;
  @ApiProperty({ example: 'streaming' }) state!: string;
  @ApiProperty({ example: 'http://127.0.0.1:8008/stator' }) api_url!: string;
  @ApiPropertyOptional() host?: string;
  @ApiPropertyOptional({ type: 'integer' }) port?: number;
  @ApiPropertyOptional({ type: 'integer' }) timeline?: number;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true }) tags?: Record<string, unknown>;
  @ApiPropertyOptional({ example: 'dc1', description: "The member's site, when it has one." }) site?: string;
  @ApiPropertyOptional({
    oneOf: [{ type: 'integer' }, { type: 'string', enum: ['unknown'] }],
    description: 'Bytes behind the leader.',
  })
  lag?: number | string;
  @ApiPropertyOptional({ oneOf: [{ type: 'integer' }, { type: 'string', enum: ['unknown'] }] }) receive_lag?:
    number | string;
  @ApiPropertyOptional({ oneOf: [{ type: 'integer' }, { type: 'string', enum: ['unknown'] }] }) replay_lag?:
    number | string;
  @ApiPropertyOptional({ example: '0/3000148', description: '<hex>/<hex>, or unknown.' }) lsn?: string;
  @ApiPropertyOptional({ example: '0/3000148' }) receive_lsn?: string;
  @ApiPropertyOptional({ example: '0/3000148' }) replay_lsn?: string;
}

export class ScheduledSwitchoverDto {
  @ApiProperty({ example: '2030-01-01T12:00:00+00:00' }) at!: string;
  @ApiPropertyOptional() from?: string;
  @ApiPropertyOptional({ description: 'The candidate, or `site <name>` for a switchover to a site.' }) to?: string;
}

/** Spec 2.2: `GET /cluster`. */
export class ClusterDocumentDto {
  @ApiProperty({ type: [ClusterMemberDto] }) members!: ClusterMemberDto[];
  @ApiPropertyOptional({ enum: [true] }) pause?: boolean;
  @ApiPropertyOptional({ type: ScheduledSwitchoverDto }) scheduled_switchover?: ScheduledSwitchoverDto;
  @ApiProperty() scope!: string;
}

/** Spec 2.4: the dynamic configuration (`GET /config`, and the answer of PATCH/PUT). Keys not listed are kept as written. */
export class DynamicConfigDto {
  @ApiPropertyOptional({ type: 'integer' }) ttl?: number;
  @ApiPropertyOptional({ type: 'integer' }) loop_wait?: number;
  @ApiPropertyOptional({ type: 'integer' }) retry_timeout?: number;
  @ApiPropertyOptional({ type: 'integer' }) maximum_lag_on_failover?: number;
  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: '`use_pg_rewind`, `use_slots`, `parameters`...',
  })
  postgresql?: Record<string, unknown>;
  @ApiPropertyOptional({ description: 'Pause mode; `null` in a PATCH resumes.' }) pause?: boolean;
}

/** One event of the log (`GET /events`, and the data of each `/events/stream` message). */
export class EventDto {
  @ApiProperty({ example: 'cluster' }) stream!: string;
  @ApiProperty({ type: 'integer' }) seq!: number;
  @ApiProperty({ example: 'leader.acquired' }) type!: string;
  @ApiProperty({ example: '2026-11-21T05:33:30.000Z' }) at!: string;
  @ApiProperty() node!: string;
  @ApiProperty({ type: 'string', nullable: true }) from!: string | null;
  @ApiProperty({ type: 'string', nullable: true }) to!: string | null;
  @ApiProperty() cause!: string;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true }) data?: Record<string, unknown>;
  @ApiPropertyOptional() prev?: string;
  @ApiPropertyOptional() hash?: string;
}

/** One scheduled operation and its fate (`GET /schedule`). */
export class ScheduledOperationDto {
  @ApiProperty({ enum: ['switchover', 'restart'] }) kind!: string;
  @ApiProperty() at!: string;
  @ApiProperty() requested_at!: string;
  @ApiProperty({ example: 'executed' }) fate!: string;
  @ApiProperty() node!: string;
  @ApiPropertyOptional() candidate?: string;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true }) filters?: Record<string, unknown>;
  @ApiPropertyOptional() ended_at?: string;
  @ApiPropertyOptional() reason?: string;
}

/** Spec 2.3: one timeline switch, `[timeline, position, reason, created]`. */
export const HISTORY_SCHEMA = {
  type: 'array',
  items: {
    type: 'array',
    prefixItems: [{ type: 'integer' }, { type: 'integer' }, { type: 'string' }, { type: ['string', 'null'] }],
    minItems: 3,
    maxItems: 5,
  },
} as const;
