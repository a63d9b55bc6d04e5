import { StatorConfig } from './config.types';

/**
 * Settings the loader accepts (they are Patroni's) but this version does not act on yet. A setting
 * that would silently change security or connectivity is refused; the rest are warned about.
 */
export function notYetSupported(config: StatorConfig): { problems: string[]; warnings: string[] } {
  const problems: string[] = [];
  const warnings: string[] = [];
  if (config.etcd3.protocol === 'https') problems.push('etcd3.protocol: https is not supported yet; use http on a trusted network');
  if (config.etcd3.username) problems.push('etcd3.username: etcd authentication is not supported yet');
  return { problems, warnings };
}
