import { execFileSync } from 'node:child_process';
import { EtcdHandle } from '../../scripts/lib/etcd';

export interface EtcdUser {
  name: string;
  password: string;
  /** Key prefixes the user may read and write; nothing else. */
  prefixes: string[];
}

/**
 * Turns on etcd's RBAC with etcdctl (over TLS with a client certificate when given): a root user (etcd requires one), then each user with a role
 * limited to its prefixes. From then on every request needs a user's token.
 */
export function enableEtcdAuth(
  etcd: EtcdHandle,
  rootPassword: string,
  users: EtcdUser[],
  tls?: { ca: string; cert: string; key: string },
): void {
  const endpoint = tls ? `https://${etcd.endpoint}` : etcd.endpoint;
  const tlsFlags = tls ? [`--cacert=${tls.ca}`, `--cert=${tls.cert}`, `--key=${tls.key}`] : [];
  const etcdctl = (...args: string[]) =>
    execFileSync('etcdctl', [`--endpoints=${endpoint}`, ...tlsFlags, ...args], {
      stdio: 'pipe',
      env: { ...process.env, ETCDCTL_API: '3' },
    });
  etcdctl('user', 'add', `root:${rootPassword}`);
  for (const user of users) {
    etcdctl('role', 'add', user.name);
    for (const prefix of user.prefixes)
      etcdctl('role', 'grant-permission', user.name, '--prefix=true', 'readwrite', prefix);
    etcdctl('user', 'add', `${user.name}:${user.password}`);
    etcdctl('user', 'grant-role', user.name, user.name);
  }
  etcdctl('auth', 'enable');
}
