import { fromPromise } from 'xstate';
import { BootstrapMethod } from '../config/config.types';
import { PostgresProcess, PostgresSettings, StopMode, UpstreamNode } from './postgres.port';
import { CloneInput, StartRequest, StopRequest } from './postgres-machine-types';

/** The invoked actors over the real (or a fake) PostgresProcess. */
export function postgresActors(pg: PostgresProcess) {
  return {
    runInitdb: fromPromise<void, void>(() => pg.initdb()),
    runCustomBootstrap: fromPromise<void, { method: BootstrapMethod }>(({ input }) => pg.customBootstrap(input.method)),
    cloneReplica: fromPromise<void, CloneInput>(({ input }) => {
      if (input.method) return pg.createReplicaWith(input.method, input.source);
      if (!input.source) throw new Error('pg_basebackup needs a member to copy');
      return pg.basebackup(input.source);
    }),
    startPostgres: fromPromise<{ pid: number }, StartRequest>(async ({ input }) => {
      if (!input.settings) {
        const adopted = await pg.adopt();
        if (!adopted) throw new Error('no running postmaster to adopt');
        return adopted;
      }
      await pg.configure(input.settings);
      return pg.start(input.timeoutMs);
    }),
    stopPostgres: fromPromise<void, StopRequest>(({ input }) =>
      pg.stop(input.mode, input.timeoutMs, input.onEscalation),
    ),
    restartPostgres: fromPromise<{ pid: number }, { start: StartRequest; mode: StopMode }>(async ({ input }) => {
      await pg.stop(input.mode, input.start.timeoutMs);
      if (input.start.settings) await pg.configure(input.start.settings);
      return pg.start(input.start.timeoutMs);
    }),
    promotePostgres: fromPromise<void, { timeoutMs: number }>(({ input }) => pg.promote(input.timeoutMs)),
    reconfigurePostgres: fromPromise<void, { settings: PostgresSettings }>(async ({ input }) => {
      await pg.configure(input.settings);
      await pg.reload();
    }),
    rewindData: fromPromise<'rewound' | 'not_needed', { source: UpstreamNode; crashRecovery: boolean }>(
      async ({ input }) => {
        if (input.crashRecovery) await pg.crashRecovery();
        return pg.rewind(input.source);
      },
    ),
    removeData: fromPromise<void, void>(() => pg.removeDataDir()),
  };
}
