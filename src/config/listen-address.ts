import { Findings, Mapping, readString, splitHostPort } from './config-readers';

/** Hosts that bind every interface: fine for `listen`, useless as an address for other nodes. */
const WILDCARD_HOSTS = new Set(['', '*', '0.0.0.0', '::', '[::]']);

/** `host:port` to bind. The host may be empty or `*` (all interfaces), or, for PostgreSQL, a comma-separated list. */
export function checkListenAddress(findings: Findings, path: string, value: string, hostList: boolean): void {
  const address = splitHostPort(value);
  const badHost = hostList ? /\s/ : /[\s,]/;
  if (!address || badHost.test(address.host)) findings.invalid(path, 'must be host:port', value);
}

/** The `host:port` other nodes use: explicit, or derived from `listen` (its first host). */
export function readConnectAddress(findings: Findings, section: Mapping, path: string, listen: string): string {
  const connectPath = `${path}.connect_address`;
  const explicit = readString(findings, section, 'connect_address', path);
  if (explicit !== undefined) {
    const address = splitHostPort(explicit);
    if (!address || /[\s,]/.test(address.host)) findings.invalid(connectPath, 'must be host:port', explicit);
    else if (WILDCARD_HOSTS.has(address.host)) {
      findings.invalid(connectPath, 'must name a host other nodes can reach, not a wildcard address', explicit);
    }
    return explicit;
  }
  const listenAddress = splitHostPort(listen);
  if (!listenAddress) return ''; // listen is missing or invalid, already reported.
  const host = listenAddress.host.split(',')[0].trim();
  const derived = `${host}:${listenAddress.port}`;
  if (WILDCARD_HOSTS.has(host)) {
    findings.warnings.push(
      `${connectPath} is not set and ${path}.listen binds a wildcard address: other nodes will be told "${derived}"; ` +
        `set ${connectPath}`,
    );
  }
  return derived;
}
