import { PostgresqlConfig } from '../config/config.types';
import { methodFlag } from '../config/custom-methods-config';
import { ReplicaMethod } from '../postgresql/postgres.port';

/** One way to build this replica: pg_basebackup, or a custom method by name. */
export type ReplicaMethodStep = { name: 'basebackup' } | { name: string; method: ReplicaMethod };

/**
 * The replica methods to try, in order (reference `create_replica`): `create_replica_methods` (or
 * `methods`, a standby cluster's own list), or basebackup alone. Without a member to copy, only the
 * custom methods marked `no_leader` can work.
 */
export function replicaMethodPlan(
  postgresql: PostgresqlConfig,
  hasSource: boolean,
  methods = postgresql.create_replica_methods,
): ReplicaMethodStep[] {
  const names = methods?.length ? methods : ['basebackup'];
  const steps: ReplicaMethodStep[] = names.map((name) => {
    const custom = name === 'basebackup' ? undefined : postgresql.replica_methods?.[name];
    return custom ? { name, method: { name, ...custom } } : { name: 'basebackup' };
  });
  return hasSource ? steps : steps.filter((step) => 'method' in step && methodFlag(step.method.options, 'no_leader'));
}

/** A custom method restores without any member to copy (`no_leader`): a node may bootstrap while no leader runs. */
export function canCloneWithoutLeader(postgresql: PostgresqlConfig): boolean {
  return replicaMethodPlan(postgresql, false).length > 0;
}
