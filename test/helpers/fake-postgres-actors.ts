import { fromPromise } from 'xstate';
import { postgresActors } from '../../src/postgresql/postgres-actors';

/**
 * The postgres machine's invoked actors without side effects: each succeeds at once, except those
 * named in `failing`, which fail their first run.
 */
export function fakePostgresActors(failing: Iterable<string> = []): ReturnType<typeof postgresActors> {
  const pending = new Set(failing);
  const outcome = <T>(name: string, value: T) =>
    fromPromise<T, unknown>(async () => {
      if (pending.delete(name)) throw new Error(`${name} failed`);
      return value;
    });
  return {
    runInitdb: outcome('runInitdb', undefined),
    runCustomBootstrap: outcome('runCustomBootstrap', undefined),
    cloneReplica: outcome('cloneReplica', undefined),
    startPostgres: outcome('startPostgres', { pid: 4242 }),
    stopPostgres: outcome('stopPostgres', undefined),
    restartPostgres: outcome('restartPostgres', { pid: 4243 }),
    promotePostgres: outcome('promotePostgres', undefined),
    reconfigurePostgres: outcome('reconfigurePostgres', undefined),
    rewindData: outcome('rewindData', 'rewound' as const),
    removeData: outcome('removeData', undefined),
  } as unknown as ReturnType<typeof postgresActors>;
}
