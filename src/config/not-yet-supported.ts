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
  const { restapi } = config;
  if (restapi.certfile || restapi.keyfile || restapi.cafile) {
    problems.push('restapi.certfile: TLS for the REST API is not supported yet; remove certfile/keyfile/cafile to serve plain HTTP');
  }
  if (restapi.authentication) warnings.push('restapi.authentication: not enforced yet; this version serves only read endpoints (GET), which the reference never protects');
  if (restapi.allowlist?.length) warnings.push('restapi.allowlist: not enforced yet; this version serves only read endpoints (GET), which the reference never protects');
  return { problems, warnings };
}
