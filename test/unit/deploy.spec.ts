import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { HEALTH_PATHS } from '../../src/api/health';
import { AGENT_NODE_FLAGS, agentEnvironmentAssignments, nodeWithFlags } from '../../src/cli/agent-node-flags';
import { buildMetrics } from '../../src/api/metrics';
import { leaderView, NOW } from './api/node-view-fixtures';
import { removeDir, tmpDir } from '../helpers/tmp';
import { agentWrapper } from '../../scripts/lib/debian-package';

/** What operators deploy beside Stator (deploy/): checked against the metrics and paths Stator really serves. */
const DEPLOY = join(__dirname, '..', '..', 'deploy');
const promtool = (...args: string[]) =>
  execFileSync('promtool', args, { cwd: DEPLOY, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

/** Every stator_* metric name the node exports. */
function exportedMetrics(): Set<string> {
  const text = buildMetrics(leaderView(), { scope: 'demo', version: '0.1.0', productKey: 'stator' }, NOW);
  return new Set([...text.matchAll(/^(stator_\w+)/gm)].map((m) => m[1]));
}

describe('deploy/', () => {
  it('ships alerting rules that promtool accepts and whose own tests pass (no primary, lag, streaming)', () => {
    expect(promtool('check', 'rules', 'prometheus-alerts.yml')).toContain('SUCCESS: 8 rules found');
    expect(promtool('test', 'rules', 'prometheus-alerts.test.yml')).toContain('SUCCESS');
  });

  it('uses only metrics Stator exports, in the alerts and the Grafana dashboard', () => {
    const exported = exportedMetrics();
    const texts = [
      readFileSync(join(DEPLOY, 'prometheus-alerts.yml'), 'utf8'),
      readFileSync(join(DEPLOY, 'grafana-dashboard.json'), 'utf8'),
    ];
    const used = new Set(texts.flatMap((text) => [...text.matchAll(/\b(stator_\w+)/g)].map((m) => m[1])));
    expect([...used].filter((name) => !exported.has(name))).toEqual([]);
    const dashboard = JSON.parse(texts[1]) as { panels: { targets: { expr: string }[] }[] };
    expect(dashboard.panels.length).toBeGreaterThan(5);
  });

  it('points the Kubernetes probes at Stator health paths', () => {
    const probes = parse(readFileSync(join(DEPLOY, 'kubernetes-probes.yaml'), 'utf8')) as Record<
      string,
      { httpGet: { path: string } }
    >;
    expect(probes.livenessProbe.httpGet.path).toBe('/liveness');
    expect(probes.readinessProbe.httpGet.path).toBe('/readiness');
    for (const probe of Object.values(probes)) expect(HEALTH_PATHS).toContain(probe.httpGet.path);
  });

  it('starts every agent with the V8 flags and malloc settings that bound its memory (shebang, Dockerfile, npm start)', () => {
    const root = join(__dirname, '..', '..');
    const environment = agentEnvironmentAssignments();
    expect(readFileSync(join(root, 'bin', 'stator.js'), 'utf8').split('\n')[0]).toBe(
      `#!/usr/bin/env -S ${environment} ${nodeWithFlags()}`,
    );
    const entry = /^ENTRYPOINT (.*)$/m.exec(readFileSync(join(root, 'Dockerfile'), 'utf8'))?.[1];
    expect(JSON.parse(entry ?? '[]')).toEqual(['node', ...AGENT_NODE_FLAGS, '/opt/stator/bin/stator.js']);
    const imageEnvironment = /^ENV (.*)$/m.exec(readFileSync(join(root, 'Dockerfile'), 'utf8'))?.[1].split(' ') ?? [];
    expect(imageEnvironment).toEqual(expect.arrayContaining(environment.split(' ')));
    const scripts = (
      JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
    ).scripts;
    expect(scripts.start).toBe(`${environment} ${nodeWithFlags()} bin/stator.js`);
  });

  describe('the systemd unit (stator.service)', () => {
    const unit = readFileSync(join(DEPLOY, 'stator.service'), 'utf8');
    const settings = (key: string) => [...unit.matchAll(new RegExp(`^${key}=(.*)$`, 'gm'))].map((m) => m[1]);

    it('passes systemd-analyze verify without a warning', () => {
      // verify checks that ExecStart's program exists: the package's wrapper, written here, stands for /usr/bin/stator
      // (test/integration/debian-package.int-spec.ts verifies the installed unit).
      const dir = tmpDir('stator-unit-');
      try {
        writeFileSync(join(dir, 'stator'), agentWrapper(), { mode: 0o755 });
        writeFileSync(
          join(dir, 'stator.service'),
          unit.replace('ExecStart=/usr/bin/stator ', `ExecStart=${join(dir, 'stator')} `),
        );
        const verify = spawnSync('systemd-analyze', ['verify', join(dir, 'stator.service')], { encoding: 'utf8' });
        expect({ status: verify.status, output: `${verify.stdout}${verify.stderr}` }).toEqual({
          status: 0,
          output: '',
        });
      } finally {
        removeDir(dir);
      }
    });

    it('is a notify service whose reload is SIGHUP and whose stop never kills PostgreSQL', () => {
      expect(settings('Type')).toEqual(['notify']);
      expect(settings('NotifyAccess')).toEqual(['all']);
      expect(settings('ExecReload')).toEqual(['/bin/kill -HUP $MAINPID']);
      expect(settings('KillMode')).toEqual(['process']);
      expect(settings('User')).toEqual(['postgres']);
      expect(settings('Restart')).toEqual(['on-failure']);
    });

    it('starts /usr/bin/stator (the package wrapper), with the same node flags and malloc setting as bin/stator.js, on /etc/stator/stator.yml', () => {
      expect(settings('ExecStart')).toEqual(['/usr/bin/stator /etc/stator/stator.yml']);
      expect(agentWrapper()).toContain(
        `exec env ${agentEnvironmentAssignments()} ${nodeWithFlags('"${STATOR_NODE:-/usr/bin/node}"')} /usr/lib/stator/bin/stator.js "$@"`,
      );
    });
  });
});
