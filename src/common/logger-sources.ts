/**
 * Patroni's logger names with a Stator component behind them: a `log.loggers` level for one of them (or for an
 * ancestor, as Python's logging resolves it: `patroni.dcs` covers `patroni.dcs.etcd3`) sets that component's level.
 */
export const COMPONENT_LOGGERS = {
  /** The HA cycle's verdict line (`no action. ...`). */
  cycle: 'patroni.__main__',
  ha: 'patroni.ha',
  dcs: 'patroni.dcs.etcd3',
  api: 'patroni.api',
  postgresql: 'patroni.postgresql.postmaster',
  callbacks: 'patroni.postgresql.callback_executor',
} as const;

const { cycle, ha, dcs, api, postgresql, callbacks } = COMPONENT_LOGGERS;

/**
 * Each of Patroni's module loggers (the modules of `patroni/`) and the Stator log source nearest to what that
 * module logs: the HA cycle's verdict (`patroni.__main__`), the HA loop and its procedures (`patroni.ha`: slots,
 * synchronous replication, rewind, bootstrap, watchdog, peer requests), the etcd client (`patroni.dcs.etcd3`: every
 * DCS, Stator has only etcd), the REST API, the PostgreSQL adapter (`patroni.postgresql.postmaster`: start, stop,
 * configuration files, connections, commands) and the callbacks. `null`: nothing in the agent logs there
 * (patronictl, the helper scripts), so the level is accepted and applies to nothing, as with Python.
 */
export const PATRONI_MODULE_SOURCES: Readonly<Record<string, string | null>> = Object.freeze({
  'patroni.__main__': cycle,
  'patroni.daemon': cycle,
  'patroni.log': cycle,
  'patroni.ha': ha,
  'patroni.async_executor': ha,
  'patroni.thread_pool': ha,
  'patroni.request': ha,
  'patroni.quorum': ha,
  'patroni.tags': ha,
  'patroni.config': ha,
  'patroni.global_config': ha,
  'patroni.dynamic_loader': ha,
  'patroni.validator': ha,
  'patroni.utils': ha,
  'patroni.file_perm': ha,
  'patroni.collections': ha,
  'patroni.exceptions': ha,
  'patroni.version': ha,
  'patroni.watchdog': ha,
  'patroni.watchdog.base': ha,
  'patroni.watchdog.linux': ha,
  'patroni.postgresql.bootstrap': ha,
  'patroni.postgresql.rewind': ha,
  'patroni.postgresql.slots': ha,
  'patroni.postgresql.sync': ha,
  'patroni.postgresql.mpp': ha,
  'patroni.postgresql.mpp.citus': ha,
  'patroni.dcs': dcs,
  'patroni.dcs.etcd': dcs,
  'patroni.dcs.etcd3': dcs,
  'patroni.dcs.consul': dcs,
  'patroni.dcs.zookeeper': dcs,
  'patroni.dcs.kubernetes': dcs,
  'patroni.dcs.exhibitor': dcs,
  'patroni.dcs.raft': dcs,
  'patroni.raft_controller': dcs,
  'patroni.api': api,
  'patroni.postgresql': postgresql,
  'patroni.postgresql.postmaster': postgresql,
  'patroni.postgresql.config': postgresql,
  'patroni.postgresql.connection': postgresql,
  'patroni.postgresql.cancellable': postgresql,
  'patroni.postgresql.misc': postgresql,
  'patroni.postgresql.validator': postgresql,
  'patroni.postgresql.available_parameters': postgresql,
  'patroni.psycopg': postgresql,
  'patroni.postgresql.callback_executor': callbacks,
  'patroni.ctl': null,
  'patroni.config_generator': null,
  'patroni.scripts': null,
  'patroni.scripts.aws': null,
  'patroni.scripts.wale_restore': null,
  'patroni.scripts.barman': null,
});

const SOURCE_NAMES: readonly string[] = Object.values(COMPONENT_LOGGERS);

/**
 * The Stator source a `patroni.*` logger name's level applies to: a source's own name (or one of its
 * ancestors: `patroni`, `patroni.dcs`...) is resolved as Python does and needs no mapping (undefined); a
 * module of PATRONI_MODULE_SOURCES gives its source; an unknown name goes by its nearest parent that is
 * one of those. null: nothing logs there.
 */
export function sourceOfPatroniLogger(name: string): string | null | undefined {
  if (SOURCE_NAMES.some((source) => source === name || source.startsWith(`${name}.`))) return undefined;
  for (let current = name; current.includes('.'); current = current.slice(0, current.lastIndexOf('.'))) {
    if (SOURCE_NAMES.includes(current)) return current;
    if (Object.hasOwn(PATRONI_MODULE_SOURCES, current)) return PATRONI_MODULE_SOURCES[current];
  }
  return null;
}

/**
 * `log.loggers` as the logger resolves it, over Stator's sources: the entries for the sources' own names and their
 * ancestors stay as written; an entry for another Patroni module sets the level of its source (sourceOfPatroniLogger)
 * unless the source's own name has an entry, which is more specific. Several modules of one source: the most verbose
 * wins, so that the lines asked for are written (Stator cannot tell them apart within the source).
 */
export function sourceLevels<L extends string>(
  loggers: Readonly<Record<string, L>>,
  verbosity: (level: L) => number,
): Record<string, L> {
  const levels: Record<string, L> = {};
  const mapped: Record<string, L> = {};
  for (const [name, level] of Object.entries(loggers)) {
    const source = sourceOfPatroniLogger(name);
    if (source === undefined) levels[name] = level;
    else if (source !== null && (!Object.hasOwn(mapped, source) || verbosity(level) < verbosity(mapped[source])))
      mapped[source] = level;
  }
  for (const [source, level] of Object.entries(mapped)) if (!Object.hasOwn(levels, source)) levels[source] = level;
  return levels;
}
