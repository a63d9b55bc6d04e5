/** Stator's version, as `stator.version` in the status document and `stator_version` in /metrics and member keys. */
export const STATOR_VERSION = '0.1.0';

/**
 * The runtime this agent runs on, as `stator_runtime` in member keys: during a rolling upgrade of the
 * agents (or a move to another Node line) the keys show which members run which.
 */
export const STATOR_RUNTIME = `node ${process.versions.node}`;

/**
 * The Patroni release whose behaviour Stator implements (shared/spec/reference-behavior.md), published as
 * a compat-mode member key's `version`. Patroni peers read that field as a Patroni version: above 1.5.6 they
 * trust the leader's `checkpoint_after_promote` instead of running a CHECKPOINT on it before pg_rewind, and
 * from 2.1.0 on (the cluster's lowest version) they stop writing the legacy `/optime/leader` key.
 */
export const PATRONI_REFERENCE_VERSION = '4.1.4';
