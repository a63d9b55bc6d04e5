import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { parse } from 'yaml';
import { existsSync, readFileSync } from 'node:fs';

const composeFile = join(__dirname, '..', '..', 'docker-compose.yml');

describe('docker-compose.yml', () => {
  it("is accepted by Debian's docker-compose (no engine needed)", () => {
    expect(() => execFileSync('docker-compose', ['-f', composeFile, 'config', '-q'], { stdio: 'pipe' })).not.toThrow();
  });

  it('runs three etcd members, three agents configured through Patroni environment variables, and HAProxy', () => {
    const compose = parse(readFileSync(composeFile, 'utf8'), { merge: true }) as {
      services: Record<string, { environment?: Record<string, string>; volumes?: string[]; image?: string }>;
    };
    const agents = Object.entries(compose.services).filter(([, service]) => service.environment?.PATRONI_NAME);
    expect(agents).toHaveLength(3);
    for (const [, service] of agents)
      expect(service.environment?.PATRONI_ETCD3_HOSTS).toBe('etcd1:2379,etcd2:2379,etcd3:2379');
    expect(Object.keys(compose.services).filter((name) => name.startsWith('etcd'))).toEqual([
      'etcd1',
      'etcd2',
      'etcd3',
    ]);
    const mounted = compose.services.haproxy.volumes![0].split(':')[0];
    expect(existsSync(join(__dirname, '..', '..', mounted))).toBe(true);
  });
});
