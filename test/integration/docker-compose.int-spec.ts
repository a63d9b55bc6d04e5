import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { parse } from 'yaml';
import { readFileSync } from 'node:fs';

const composeFile = join(__dirname, '..', '..', 'docker-compose.yml');

describe('docker-compose.yml', () => {
  it("is accepted by Debian's docker-compose (no engine needed)", () => {
    expect(() => execFileSync('docker-compose', ['-f', composeFile, 'config', '-q'], { stdio: 'pipe' })).not.toThrow();
  });

  it('runs etcd and three agents configured through Patroni environment variables', () => {
    const compose = parse(readFileSync(composeFile, 'utf8'), { merge: true }) as { services: Record<string, { environment?: Record<string, string> }> };
    const agents = Object.entries(compose.services).filter(([, service]) => service.environment?.PATRONI_NAME);
    expect(agents).toHaveLength(3);
    for (const [, service] of agents) expect(service.environment?.PATRONI_ETCD3_HOSTS).toBeTruthy();
  });
});
