import { createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Findings, Mapping, readString } from './config-readers';

const DEFAULT_ETCD_PORT = 2379;

/** One etcd endpoint given as a URL (`etcd3.proxy` or `etcd3.url`), and any user in it. */
export interface EtcdEndpoint {
  key: 'proxy' | 'url';
  host: string;
  protocol: 'http' | 'https';
  username?: string;
  password?: string;
}

/**
 * `etcd3.proxy`, else `etcd3.url` (Patroni's order): one `http(s)://[user:password@]host[:port]`
 * endpoint, used instead of `hosts`/`host`. Stator never discovers members from the endpoints it is
 * given, so a proxy (etcd's gRPC proxy or gateway) needs nothing more than a URL does.
 * Undefined when neither is given; null when the one given is unusable (the problem is recorded).
 */
export function readEtcdEndpoint(findings: Findings, section: Mapping): EtcdEndpoint | null | undefined {
  const key = section.proxy !== undefined && section.proxy !== null ? 'proxy' : 'url';
  const path = `etcd3.${key}`;
  // Secret: the URL may carry the user's password.
  const text = readString(findings, section, key, 'etcd3', { secret: true });
  if (text === undefined) return section[key] === undefined || section[key] === null ? undefined : null;
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    findings.problem(path, 'must be a URL such as https://etcd.example.com:2379');
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    findings.problem(path, `must start with http:// or https://, got ${url.protocol}//`);
    return null;
  }
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.hash) {
    findings.problem(path, 'must be a URL without a path or query (https://host:port)');
    return null;
  }
  const endpoint: EtcdEndpoint = {
    key,
    host: `${url.hostname}:${url.port || DEFAULT_ETCD_PORT}`,
    protocol: url.protocol === 'https:' ? 'https' : 'http',
  };
  if (url.username) {
    if (!url.password)
      findings.problem(
        path,
        'names a user without a password (give user:password@, or use etcd3.username and etcd3.password)',
      );
    endpoint.username = decodeURIComponent(url.username);
    endpoint.password = decodeURIComponent(url.password);
  }
  return endpoint;
}

/** Checks at start that `etcd3.key_password` decrypts the client key: a wrong one is a problem now, not a TLS failure later. */
export function checkEtcdKeyPassword(findings: Findings, keyFile: string, passphrase: string): void {
  try {
    createPrivateKey({ key: readFileSync(keyFile), format: 'pem', passphrase });
  } catch {
    findings.problem(
      'etcd3.key_password',
      `does not decrypt the key in ${keyFile} (wrong passphrase, or not a PEM private key)`,
    );
  }
}
