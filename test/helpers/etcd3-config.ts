import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { LoadedConfig, loadConfig } from '../../src/config/load-config';

/**
 * Loads a minimal configuration file whose `etcd3` section is the one given, as the agent would read it. The files go
 * to one temporary directory per test file, removed after its tests.
 */
export function etcd3ConfigLoader(): (etcd3: Record<string, unknown>, env?: NodeJS.ProcessEnv) => LoadedConfig {
  const dir = mkdtempSync(join(tmpdir(), 'stator-etcd3-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let written = 0;
  return (etcd3, env = {}) => {
    const path = join(dir, `config-${++written}.yml`);
    const doc = {
      scope: 'demo',
      name: 'n1',
      restapi: { listen: '127.0.0.1:8008' },
      etcd3,
      postgresql: { listen: '127.0.0.1:5432', data_dir: '/data/n1' },
    };
    writeFileSync(path, stringify(doc));
    return loadConfig(path, env);
  };
}
