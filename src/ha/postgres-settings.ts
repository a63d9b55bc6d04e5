import { EffectiveDynamicConfig, StatorConfig } from '../config/config.types';
import { pgCtlTimeoutMs } from '../config/postgresql-programs-config';
import { standbyRecoveryParameters } from '../config/standby-cluster-config';
import { StartRequest } from '../postgresql/postgres-machine-types';
import { PostgresSettings, UpstreamNode } from '../postgresql/postgres.port';
import { upstreamOf } from './cluster-snapshot';
import { configDigest } from './config-digest';
import { NodeActors } from './node-actors';
import { startTimeoutMs } from './postgres-deadlines';
import { slotNameOf } from './slot-plan';
import { remotePrimary } from './standby-cluster';

type Parameters = Record<string, string | number | boolean>;
type ConfigurationFiles = Pick<PostgresSettings, 'pgHba' | 'pgIdent' | 'recoveryConf' | 'bootstrapHba'>;

/** pg_hba, pg_ident and a replica's recovery settings: the local file's where it sets them, else `/config`'s (as Patroni). */
export function configurationFiles(
  config: StatorConfig,
  dynamic: EffectiveDynamicConfig,
  role: 'primary' | 'replica',
): ConfigurationFiles {
  const local = config.postgresql;
  const pgHba = local.pg_hba.length ? local.pg_hba : dynamic.pg_hba;
  const pgIdent = local.pg_ident?.length ? local.pg_ident : dynamic.pg_ident;
  const recoveryConf = local.recovery_conf ?? dynamic.recovery_conf;
  return {
    ...(pgHba.length ? { pgHba } : { bootstrapHba: config.bootstrap.pg_hba ?? [] }),
    pgIdent,
    ...(role === 'replica' ? { recoveryConf } : {}),
  };
}

/**
 * Server parameters: `/config` ones, overridden by the local file's (as Patroni merges them); a standby leader's
 * restore settings; synchronous_standby_names when the sync keeper names one (`standbyNames`).
 */
export function serverParameters(
  config: StatorConfig,
  dynamic: EffectiveDynamicConfig,
  fromRemote: boolean,
  standbyNames: string | undefined,
): Parameters {
  const parameters: Parameters = { ...dynamic.parameters, ...config.postgresql.parameters };
  // A standby leader also restores from the remote's archive, as standby_cluster says.
  if (fromRemote) Object.assign(parameters, standbyRecoveryParameters(dynamic.standby_cluster!));
  // A replica's copy of a logical slot is only usable if the primary keeps the catalog rows it needs.
  if (dynamic.slots.some((slot) => slot.type === 'logical') && !('hot_standby_feedback' in parameters))
    parameters.hot_standby_feedback = 'on';
  if (standbyNames !== undefined) parameters.synchronous_standby_names = standbyNames;
  return parameters;
}

/**
 * The digest of the inputs whose change makes a reload, the same for every role (recovery_conf included): a role
 * the readings have not caught up with yet must not look like a change.
 */
export function settingsDigest(parameters: Parameters, config: StatorConfig, dynamic: EffectiveDynamicConfig): string {
  return configDigest({ parameters, files: configurationFiles(config, dynamic, 'replica') });
}

/** Whether this server streams from a standby cluster's remote primary (it is the standby leader). */
function followsRemote(node: NodeActors): boolean {
  return node.upstream !== null && node.upstream === remotePrimary(node.dynamic.standby_cluster)?.name;
}

function parametersOf(node: NodeActors, fromRemote: boolean): Parameters {
  // A cluster being bootstrapped has nothing to lose yet, and its post_bootstrap must commit without standbys.
  const standbyNames = node.bootstrapping
    ? undefined
    : node.sync.standbyNamesFor(node.dynamic, node.sampler.sample, node.lock.held);
  return serverParameters(node.config, node.dynamic, fromRemote, standbyNames);
}

/**
 * What PostgreSQL is to run with in `role` behind `upstream`. The digest of what it is given is remembered (a
 * recorded memory event), so that a later change of `/config` or the file is noticed (`parametersChanged`).
 */
export function settingsFor(
  node: NodeActors,
  role: 'primary' | 'replica',
  upstream: UpstreamNode | null,
): PostgresSettings {
  const { dynamic } = node;
  const remote = remotePrimary(dynamic.standby_cluster);
  const fromRemote = role === 'replica' && remote !== null && upstream?.name === remote.name;
  const parameters = parametersOf(node, fromRemote);
  node.remember({ type: 'SETTINGS_CONFIGURED', digest: settingsDigest(parameters, node.config, dynamic) });
  // The remote primary knows this cluster by the slot standby_cluster names, if any; a member by its own.
  const slotName = fromRemote
    ? dynamic.standby_cluster!.primary_slot_name
    : role === 'replica' && upstream && dynamic.use_slots
      ? slotNameOf(node.name)
      : null;
  return { role, upstream, slotName, parameters, ...configurationFiles(node.config, dynamic, role) };
}

/** The role PostgreSQL runs in now: its last reading, or for a stopped server the role it was. */
function serverRole(node: NodeActors): 'primary' | 'replica' {
  const sample = node.sampler.sample;
  return (sample ? !sample.inRecovery : ['primary', 'promoted'].includes(node.roleName())) ? 'primary' : 'replica';
}

/** The settings PostgreSQL runs with now: its current role and upstream, the current parameters. */
export function currentSettings(node: NodeActors): PostgresSettings {
  if (serverRole(node) === 'primary') return settingsFor(node, 'primary', null);
  const remote = remotePrimary(node.dynamic.standby_cluster);
  const upstream = followsRemote(node)
    ? remote
    : upstreamOf(node.cluster?.members.find((m) => m.name === node.upstream));
  return settingsFor(node, 'replica', upstream);
}

/** Whether the `/config` or local parameters, pg_hba, pg_ident or recovery_conf changed since PostgreSQL was last configured. */
export function parametersChanged(node: NodeActors): boolean {
  return settingsDigest(parametersOf(node, followsRemote(node)), node.config, node.dynamic) !== node.settingsDigest;
}

/** A running server is told the current settings (the sync keeper changed synchronous_standby_names). */
export function reconfigureRunning(node: NodeActors): void {
  if (node.pgState() === 'running') node.postgres.send({ type: 'RECONFIGURE', settings: currentSettings(node) });
}

/** `postgresql.pg_ctl_timeout` in ms: the bound of a start, a stop, a promotion. */
export function pgCtlTimeoutOf(node: NodeActors): number {
  return pgCtlTimeoutMs(node.config.postgresql);
}

export function startTimeoutOf(node: NodeActors, role: 'primary' | 'replica'): number {
  return startTimeoutMs(role, node.dynamic, pgCtlTimeoutOf(node));
}

export function startRequest(node: NodeActors, settings: PostgresSettings): StartRequest {
  // A lock holder (a standby leader too) waits as a primary does before its start counts as failed: it gives the lock up then.
  const waitsAsPrimary = settings.role === 'primary' || node.lock.held;
  return {
    settings,
    timeoutMs: startTimeoutOf(node, waitsAsPrimary ? 'primary' : 'replica'),
    at: node.deps.clock.monotonic(),
  };
}

/** `postgresql.remove_data_directory_on_*`: the local file's value, else the dynamic configuration's. */
export function removesDataDirectoryOn(node: NodeActors, failure: 'rewind_failure' | 'diverged_timelines'): boolean {
  const key = `remove_data_directory_on_${failure}` as const;
  return node.config.postgresql[key] ?? node.dynamic[key];
}

/** The lock holder whose server is already primary is primary (reference 3.13): run after each sample. */
export function reconcileRoleWithServer(node: NodeActors): void {
  const role = node.roleName();
  const sample = node.sampler.sample;
  // During a task (a demotion above all) a sample taken just before the stop would undo its role change.
  if (node.busy !== null || node.pgState() !== 'running') return;
  if (sample && !sample.inRecovery && node.lock.held && (role === 'replica' || role === 'demoted')) {
    node.sendRole({ type: 'PRIMARY_CONFIRMED' });
  }
}
