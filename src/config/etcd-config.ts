import { StatorConfig } from './config.types';
import { checkEtcdKeyPassword, readEtcdEndpoint } from './etcd-endpoint-config';
import { Findings, ignoreUnsupported, isAbsent, isReadableFile, Mapping, readOneOf, readSection, readString, splitHostPort } from './config-readers';

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
  ignoreUnsupported(findings, section, path, ['hosts', 'host', 'url', 'proxy', 'protocol', 'username', 'password', 'cacert', 'cert', 'key', 'key_password']);
  const endpoint = readEtcdEndpoint(findings, section);
  if (endpoint) {
    // As in Patroni, the URL wins over hosts/host and sets the protocol; say so rather than drop them silently.
    for (const ignored of ['hosts', 'host', ...(endpoint.key === 'proxy' ? ['url'] : [])]) {
      if (!isAbsent(section[ignored])) findings.warnings.push(`etcd3.${ignored} ignored: etcd3.${endpoint.key} is set and wins`);
    }
    if (!isAbsent(section.protocol) && section.protocol !== endpoint.protocol) findings.warnings.push(`etcd3.protocol ignored: etcd3.${endpoint.key} says ${endpoint.protocol}`);
  }
  const etcd3: StatorConfig['etcd3'] = endpoint
    ? { hosts: [endpoint.host], protocol: endpoint.protocol }
    : endpoint === null
      ? { hosts: [], protocol: 'http' }
      : { hosts: readEtcdHosts(findings, section), protocol: readOneOf(findings, section, 'protocol', path, ['http', 'https'] as const, 'http') };
  for (const key of ['cacert', 'cert', 'key'] as const) {
    const file = readString(findings, section, key, path);
    if (!file) continue;
    if (etcd3.protocol !== 'https') findings.problem(`etcd3.${key}`, 'requires etcd3.protocol: https');
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

/** `hosts` (a list, or a comma-separated string) wins over `host`, as in Patroni; the port defaults to 2379. */
function readEtcdHosts(findings: Findings, section: Mapping): string[] {
  const key = isAbsent(section.hosts) ? 'host' : 'hosts';
  const path = `etcd3.${key}`;
  const value = section[key];
  let entries: unknown[];
  if (typeof value === 'string') entries = value.split(',').map((entry) => entry.trim()).filter(Boolean);
  else if (Array.isArray(value)) entries = value;
  else if (isAbsent(value)) entries = [];
  else {
    findings.invalid(path, 'must be a list of host:port or a comma-separated string', value);
    return [];
  }
  if (entries.length === 0) {
    findings.required('etcd3.hosts');
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
