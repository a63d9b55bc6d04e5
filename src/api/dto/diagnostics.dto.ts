import { ApiProperty, ApiPropertyOptional } from '../openapi-decorators';

/**
 * `GET /stator/diagnostics` for the OpenAPI document: terminus's `{status, info, error, details}`,
 * one object per indicator (see diagnostics-indicators.ts). Durations are integer milliseconds,
 * times ISO 8601 UTC, `null` when unknown. A down indicator carries `message`.
 */
class IndicatorDto {
  @ApiProperty({ enum: ['up', 'down'] }) status!: 'up' | 'down';
  @ApiPropertyOptional({ description: 'Why the indicator is down.' }) message?: string;
}

export class EtcdIndicatorDto extends IndicatorDto {
  @ApiProperty({ type: 'string', nullable: true, description: 'The last successful read of the cluster from etcd.' })
  last_read!: string | null;
  @ApiProperty({ type: 'integer', nullable: true }) last_read_age_ms!: number | null;
  @ApiProperty({ type: 'integer', description: 'ttl: older is down.' }) max_read_age_ms!: number;
  @ApiProperty({ description: 'This node holds the leader lock.' }) leader!: boolean;
  @ApiProperty({
    type: 'integer',
    nullable: true,
    description: 'Leader: time left on its lease (down at 0); null elsewhere.',
  })
  lease_left_ms!: number | null;
}

export class PostgresIndicatorDto extends IndicatorDto {
  @ApiProperty({ example: 'running', description: 'The PostgreSQL machine state; down unless running.' })
  state!: string;
  @ApiProperty({
    type: 'string',
    nullable: true,
    example: 'primary',
    description: 'primary or replica by the last sample.',
  })
  role!: string | null;
  @ApiProperty({ type: 'string', nullable: true }) last_sample!: string | null;
  @ApiProperty({ type: 'integer', nullable: true }) sample_age_ms!: number | null;
  @ApiProperty({ type: 'integer', description: 'postgres_unresponsive_timeout (ttl when 0): older is down.' })
  max_sample_age_ms!: number;
}

export class FenceIndicatorDto extends IndicatorDto {
  @ApiProperty({ description: 'A fence runs the postmaster and this agent is connected to it.' }) connected!: boolean;
  @ApiProperty({ description: "The dead man's switch is armed." }) armed!: boolean;
  @ApiProperty({ type: 'string', nullable: true, description: 'When the fence stops PostgreSQL unless re-armed.' })
  deadline!: string | null;
  @ApiProperty({ type: 'integer', nullable: true }) left_ms!: number | null;
  @ApiProperty({ description: 'A running primary: it must be fenced and armed.' }) required!: boolean;
}

export class EventsIndicatorDto extends IndicatorDto {
  @ApiProperty({ type: 'integer', description: 'Events recorded, not yet stored in etcd.' }) queue_depth!: number;
  @ApiProperty({ type: 'integer', nullable: true }) oldest_queued_age_ms!: number | null;
  @ApiProperty({ type: 'integer', description: 'ttl: an older queued event is down.' }) max_queued_age_ms!: number;
  @ApiProperty({ type: 'string', nullable: true, description: 'Since when the event store refuses appends.' })
  store_down_since!: string | null;
}

export class HaCycleIndicatorDto extends IndicatorDto {
  @ApiProperty({ type: 'string', nullable: true }) last_cycle!: string | null;
  @ApiProperty({ type: 'integer', nullable: true }) last_cycle_age_ms!: number | null;
  @ApiProperty({ type: 'integer' }) loop_wait_ms!: number;
  @ApiProperty({ type: 'integer', description: '2 loop_wait + retry_timeout: older is down.' })
  max_cycle_age_ms!: number;
  @ApiProperty({ description: "The last cycle's verdict." }) verdict!: string;
}

export class IndicatorsDto {
  @ApiPropertyOptional({ type: EtcdIndicatorDto }) etcd?: EtcdIndicatorDto;
  @ApiPropertyOptional({ type: PostgresIndicatorDto }) postgres?: PostgresIndicatorDto;
  @ApiPropertyOptional({ type: FenceIndicatorDto }) fence?: FenceIndicatorDto;
  @ApiPropertyOptional({ type: EventsIndicatorDto }) events?: EventsIndicatorDto;
  @ApiPropertyOptional({ type: HaCycleIndicatorDto }) ha_cycle?: HaCycleIndicatorDto;
}

export class DiagnosticsDto {
  @ApiProperty({ enum: ['ok', 'error'], description: 'ok (200) when every indicator is up, error (503) otherwise.' })
  status!: 'ok' | 'error';
  @ApiProperty({ type: IndicatorsDto, description: 'The indicators that are up.' }) info!: IndicatorsDto;
  @ApiProperty({ type: IndicatorsDto, description: 'The indicators that are down.' }) error!: IndicatorsDto;
  @ApiProperty({ type: IndicatorsDto, description: 'Every indicator.' }) details!: IndicatorsDto;
}
