import { StatorConfig } from './config.types';
import { checkEtcdKeyPassword, readEtcdEndpoint } from './etcd-endpoint-config';
import {
  Findings,
  ignoreUnsupported,
  isAbsent,
  isReadableFile,
  Mapping,
  readOneOf,
  readSection,
  readString,
  splitHostPort,
} from './config-readers';

const DEFAULT_ETCD_PORT = 2379;

/** Patroni's other DCS sections: fatal when they replace etcd3, ignored with a warning next to it. */
export const OTHER_DCS_SECTIONS = ['etcd', 'consul', 'zookeeper', 'exhibitor', 'kubernetes', 'raft'];

export function readDcs(findings: Findings, doc: Mapping): StatorConfig['etcd3'] {
  const otherDcs = OTHER_DCS_SECTIONS.filter((key) => !isAbsent(doc[key]));
  if (isAbsent(doc.etcd3) && otherDcs.length > 0) {
    for (const key of otherDcs) {
      const advice = key === 'etcd' ? '; etcd v2 is not: rename the section to etcd3 (same hosts, v3 API)' : '';
      findings.problem(key, `only etcd3 is supported as DCS${advice}`);
    }
    return { hosts: [], protocol: 'http' };
  }
  otherDcs.forEach((key) => findings.unsupported(key, 'only etcd3 is supported as DCS'));
  return readEtcd3(findings, doc);
}

function readEtcd3(findings: Findings, doc: Mapping): StatorConfig['etcd3'] {
  const path = 'etcd3';
  const section = readSection(findings, doc, 'etcd3', '');
  ignoreUnsupported(findings, section, path, [
    'hosts',
    'host',
    'url',
    'proxy',
    'srv',
    'srv_suffix',
    'protocol',
    'username',
    'password',
    'cacert',
    'cert',
    'key',
    'key_password',
  ]);
  const endpoint = readEtcdEndpoint(findings, section);
  const srv = readEtcdSrv(findings, section, endpoint?.key === 'proxy');
  if (endpoint) {
    // As in Patroni, the URL wins over hosts/host and sets the protocol; say so rather than drop them silently.
    for (const ignored of ['hosts', 'host', ...(endpoint.key === 'proxy' ? ['url'] : [])]) {
      if (!isAbsent(section[ignored]))
        findings.warnings.push(`etcd3.${ignored} ignored: etcd3.${endpoint.key} is set and wins`);
    }
    if (!isAbsent(section.protocol) && section.protocol !== endpoint.protocol)
      findings.warnings.push(`etcd3.protocol ignored: etcd3.${endpoint.key} says ${endpoint.protocol}`);
  }
  const etcd3: StatorConfig['etcd3'] = endpoint
    ? { hosts: [endpoint.host], protocol: endpoint.protocol }
    : endpoint === null
      ? { hosts: [], protocol: 'http' }
      : {
          hosts: readEtcdHosts(findings, section, !isAbsent(section.srv)),
          protocol: readOneOf(findings, section, 'protocol', path, ['http', 'https'] as const, 'http'),
        };
  if (srv) Object.assign(etcd3, srv);
  for (const key of ['cacert', 'cert', 'key'] as const) {
    const file = readString(findings, section, key, path);
    if (!file) continue;
    // With srv, the records decide the protocol at start (`-ssl` ones mean https).
    if (etcd3.protocol !== 'https' && !srv) findings.problem(`etcd3.${key}`, 'requires etcd3.protocol: https');
    else if (!isReadableFile(file)) findings.problem(`etcd3.${key}`, `cannot read ${file}`);
    etcd3[key] = file;
  }
  if (etcd3.key && !etcd3.cert) findings.problem('etcd3.key', 'requires etcd3.cert');
  const keyPassword = readString(findings, section, 'key_password', path, { secret: true });
  if (keyPassword !== undefined) {
    const keyFile = etcd3.key ?? etcd3.cert;
    if (!keyFile) findings.problem('etcd3.key_password', 'requires etcd3.key (or etcd3.cert holding the key)');
    else if (isReadableFile(keyFile)) checkEtcdKeyPassword(findings, keyFile, keyPassword);
    etcd3.keyPassword = keyPassword;
  }
  const username = endpoint?.username ?? readString(findings, section, 'username', path);
  const password = endpoint?.password ?? readString(findings, section, 'password', path, { secret: true });
  if (username !== undefined && password === undefined) findings.required('etcd3.password');
  if (password !== undefined && username === undefined) findings.required('etcd3.username');
  if (username !== undefined && password !== undefined) Object.assign(etcd3, { username, password });
  return etcd3;
}

/**
 * `srv` (a DNS domain) and `srv_suffix`: the etcd endpoints come from SRV records at start, and
 * `hosts`/`host`/`url` are the fallback when they name none, as in Patroni. `proxy` wins over `srv`.
 */
function readEtcdSrv(
  findings: Findings,
  section: Mapping,
  proxyWins: boolean,
): { srv: string; srvSuffix?: string } | undefined {
  const srv = readString(findings, section, 'srv', 'etcd3');
  const suffix = readString(findings, section, 'srv_suffix', 'etcd3');
  if (srv === undefined) {
    if (suffix !== undefined) findings.warnings.push('etcd3.srv_suffix ignored: etcd3.srv is not set');
    return undefined;
  }
  if (proxyWins) {
    findings.warnings.push('etcd3.srv ignored: etcd3.proxy is set and wins');
    return undefined;
  }
  let valid = true;
  if (!/^[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9])?\.?$/.test(srv) || srv.includes('..')) {
    findings.problem(
      'etcd3.srv',
      `must be a DNS domain such as example.com (its _etcd-client._tcp SRV records name etcd), got "${srv}"`,
    );
    valid = false;
  }
  if (suffix !== undefined && !/^[A-Za-z0-9_-]+$/.test(suffix)) {
    findings.problem(
      'etcd3.srv_suffix',
      `must be letters, digits, - or _ (as etcd's --discovery-srv-name), got "${suffix}"`,
    );
    valid = false;
  }
  if (!valid) return undefined;
  return suffix ? { srv: srv.replace(/\.$/, ''), srvSuffix: suffix } : { srv: srv.replace(/\.$/, '') };
}

/** `hosts` (a list, or a comma-separated string) wins over `host`, as in Patroni; the port defaults to 2379. Optional with `srv`. */
function readEtcdHosts(findings: Findings, section: Mapping, optional = false): string[] {
  const key = isAbsent(section.hosts) ? 'host' : 'hosts';
  const path = `etcd3.${key}`;
  const value = section[key];
  let entries: unknown[];
  if (typeof value === 'string')
    entries = value
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean);
  else if (Array.isArray(value)) entries = value;
  else if (isAbsent(value)) entries = [];
  else {
    findings.invalid(path, 'must be a list of host:port or a comma-separated string', value);
    return [];
  }
  if (entries.length === 0) {
    if (!optional) findings.required('etcd3.hosts');
    return [];
  }
  const hosts: string[] = [];
  entries.forEach((entry, index) => {
    const host = typeof entry === 'string' ? normalizeEtcdHost(entry) : undefined;
    if (host) hosts.push(host);
    else {
      const entryPath = Array.isArray(value) ? `${path}[${index}]` : path;
      findings.invalid(entryPath, 'must be host:port without a scheme (use etcd3.protocol for https)', entry);
    }
  });
  return hosts;
}

/** `host[:port]` to `host:port`; IPv6 addresses need brackets (`[::1]:2379`). */
function normalizeEtcdHost(entry: string): string | undefined {
  const text = entry.trim();
  const address = splitHostPort(/:\d+$/.test(text) ? text : `${text}:${DEFAULT_ETCD_PORT}`);
  const hostPattern = /^(?:[A-Za-z0-9._-]+|\[[0-9a-fA-F:.]+\])$/;
  return address && hostPattern.test(address.host) ? `${address.host}:${address.port}` : undefined;
}
