import { agentEnvironmentAssignments, nodeWithFlags } from '../../src/cli/agent-node-flags';

/**
 * The texts of Stator's Debian package (`npm run package`, scripts/package.ts): control file,
 * maintainer scripts and the /usr/bin wrappers. Pure, so that test/unit/debian-package.spec.ts
 * reads them without building a package.
 */

/** Where the package puts the code (dist, bin, production node_modules, the live view's files). */
export const LIB_DIR = '/usr/lib/stator';
/** Node-local state (event queue, fence socket) of the example configuration, owned by postgres. */
export const STATE_DIR = '/var/lib/stator';
export const CONFIG_DIR = '/etc/stator';
export const UNIT_PATH = '/lib/systemd/system/stator.service';

/**
 * A supported Node line (engines in package.json): Debian 12's own nodejs is 18 and does not qualify,
 * NodeSource's `nodejs` 20, 22, 24 or 26 does; `node-runtime` is what other Node packagers provide.
 */
export const DEPENDS = ['nodejs (>= 20.19) | node-runtime', 'python3', 'postgresql-15 | postgresql'];

export interface PackageMetadata {
  version: string;
  description: string;
  /** Kibibytes the installed files take (dpkg's Installed-Size). */
  installedSizeKiB: number;
}

export function controlFile(metadata: PackageMetadata): string {
  const [summary] = metadata.description.split(':');
  return [
    'Package: stator',
    `Version: ${metadata.version}`,
    'Architecture: all',
    'Section: database',
    'Priority: optional',
    'Maintainer: Stator developers <stator@localhost>',
    `Installed-Size: ${metadata.installedSizeKiB}`,
    `Depends: ${DEPENDS.join(', ')}`,
    'Recommends: etcd-server | etcd-client',
    'Homepage: https://github.com/stator/stator',
    `Description: ${summary}`,
    ' ' + metadata.description,
    ' .',
    ' The agent (stator) and its command-line client (statorctl), a systemd unit',
    ' (stator.service, not enabled on install) and an example /etc/stator/stator.yml.',
    '',
  ].join('\n');
}

/** Files dpkg keeps on upgrade and removes on purge only. */
export const CONFFILES = `${CONFIG_DIR}/stator.yml\n`;

/** A /usr/bin wrapper: the agent always starts with the V8 flags and malloc setting that bound its memory. */
export function agentWrapper(): string {
  return [
    '#!/bin/sh',
    '# Stator agent (package stator). STATOR_NODE: another Node.js binary of a supported line (>= 20.19).',
    `exec env ${agentEnvironmentAssignments()} ${nodeWithFlags('"${STATOR_NODE:-/usr/bin/node}"')} ${LIB_DIR}/bin/stator.js "$@"`,
    '',
  ].join('\n');
}

export function ctlWrapper(): string {
  return [
    '#!/bin/sh',
    '# statorctl (package stator). STATOR_NODE: another Node.js binary of a supported line (>= 20.19).',
    `exec "\${STATOR_NODE:-/usr/bin/node}" ${LIB_DIR}/bin/statorctl.js "$@"`,
    '',
  ].join('\n');
}

/**
 * configure: the state directory (postgres's, 0700). The unit is neither enabled nor started: a node
 * must be configured first, and starting an agent runs initdb or joins a cluster. An upgrade restarts
 * nothing either: restarting a primary's agent stops its PostgreSQL, so the operator picks the moment
 * (docs/install-and-operate.md).
 */
export function postinst(): string {
  return [
    '#!/bin/sh',
    'set -e',
    'if [ "$1" = configure ]; then',
    `  if [ ! -d ${STATE_DIR} ]; then install -d -o postgres -g postgres -m 0700 ${STATE_DIR}; fi`,
    '  if [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || true; fi',
    '  if [ -n "$2" ]; then',
    '    echo "stator: upgraded from $2; running agents keep the old code until restarted (systemctl restart stator, one node at a time)."',
    '  else',
    `    echo "stator: edit ${CONFIG_DIR}/stator.yml, check it with 'stator --validate-config ${CONFIG_DIR}/stator.yml', then: systemctl enable --now stator"`,
    '  fi',
    'fi',
    '',
  ].join('\n');
}

/** remove (not upgrade): the agent stops first (it stops its PostgreSQL in fast mode and releases the leader lock). */
export function prerm(): string {
  return [
    '#!/bin/sh',
    'set -e',
    'if [ "$1" = remove ] && [ -d /run/systemd/system ]; then',
    '  systemctl stop stator.service >/dev/null 2>&1 || true',
    'fi',
    '',
  ].join('\n');
}

/**
 * purge: what the package created and an operator's `systemctl enable` left. The state directory and
 * /etc/stator go only when empty: PostgreSQL data and files the operator wrote there stay.
 */
export function postrm(): string {
  return [
    '#!/bin/sh',
    'set -e',
    'if [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || true; fi',
    'if [ "$1" = purge ]; then',
    '  rm -f /etc/systemd/system/multi-user.target.wants/stator.service',
    `  rmdir ${STATE_DIR} 2>/dev/null || true`,
    `  rmdir ${CONFIG_DIR} 2>/dev/null || true`,
    'fi',
    '',
  ].join('\n');
}
