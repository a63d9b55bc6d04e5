import { ReplayableHaMemory, ScheduledRestart } from './ha-memory.machine';

export type { ScheduledRestart } from './ha-memory.machine';
import { EffectiveDynamicConfig } from '../config/config.types';
import { ClusterView } from '../dcs/dcs.port';
import { PostgresStateName } from '../postgresql/postgres-states';
import { DataDirInfo, PostgresSample } from '../postgresql/postgres.port';
import { RoleName } from './role.machine';

/** What the API serves, copied from the node's memory: never waits on SQL or the DCS. */
export interface NodeView {
  name: string;
  pgState: PostgresStateName;
  role: RoleName;
  leadership: 'leader' | 'follower';
  /** Epoch ms until which the lock is known to be ours (0 when not leader). */
  lockValidUntil: number;
  sample: PostgresSample | null;
  sampleAt: number;
  /** Epoch ms when PostgreSQL last answered anything (a reading, or an error it sent): a hung server stops moving it. */
  pgAnsweredAt: number;
  cluster: ClusterView | null;
  /** Epoch ms of the last successful DCS read, 0 if none. */
  dcsLastSeen: number;
  config: EffectiveDynamicConfig;
  /** Epoch ms when the last HA cycle ran. */
  lastCycleAt: number;
  verdict: string;
  dataDir: DataDirInfo | null;
  tags: Record<string, unknown>;
  /** The long action in progress (`restart`, `switchover`, `clone`...), null when idle. */
  activity: string | null;
  scheduledRestart: ScheduledRestart | null;
  /** Failsafe mode keeps this leader primary, or this member answered such a leader, within a ttl. */
  failsafeActive: boolean;
  /** Watchdog mode `required` and none usable: `watchdog_failed` in the status document. */
  watchdogFailed?: boolean;
  /** What the HA cycle remembers between cycles, as its memory machine holds it (configurations as digests). */
  memory?: ReplayableHaMemory;
  /** The node's `site` setting, when it has one (`site` in the status document, as Patroni's branch). */
  site?: string;
}
