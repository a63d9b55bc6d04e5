import { execFileSync } from 'node:child_process';
import { EtcdHandle } from '../../scripts/lib/etcd';

export interface EtcdUser {
  name: string;
  password: string;
  /** Key prefixes the user may read and write; nothing else. */
  prefixes: string[];
}

/**
 * Turns on etcd's RBAC with etcdctl: a root user (etcd requires one), then each user with a role
 * limited to its prefixes. From then on every request needs a user's token.
 */
export function enableEtcdAuth(etcd: EtcdHandle, rootPassword: string, users: EtcdUser[]): void {
  const etcdctl = (...args: string[]) => execFileSync('etcdctl', [`--endpoints=${etcd.endpoint}`, ...args], { stdio: 'pipe', env: { ...process.env, ETCDCTL_API: '3' } });
  etcdctl('user', 'add', `root:${rootPassword}`);
  for (const user of users) {
    etcdctl('role', 'add', user.name);
    for (const prefix of user.prefixes) etcdctl('role', 'grant-permission', user.name, '--prefix=true', 'readwrite', prefix);
    etcdctl('user', 'add', `${user.name}:${user.password}`);
    etcdctl('user', 'grant-role', user.name, user.name);
  }
  etcdctl('auth', 'enable');
}
