import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { hideSecrets, validateConfig } from '../../src/cli/validate-config';
import { removeDir, tmpDir } from '../helpers/tmp';

/** `stator --validate-config [--print] <file>`: what the operator reads and the exit code a script checks. */
const VALID = {
  scope: 'demo',
  name: 'n1',
  restapi: { listen: '127.0.0.1:8008', authentication: { username: 'admin', password: 'api-secret' } },
  etcd3: { hosts: ['127.0.0.1:2379'] },
  postgresql: {
    listen: '127.0.0.1:5432',
    data_dir: '/data/n1',
    authentication: { superuser: { username: 'postgres', password: 'su-secret', sslpassword: 'key-secret' } },
  },
};

let dir: string;
beforeAll(() => {
  dir = tmpDir('stator-validate-');
});
afterAll(() => removeDir(dir));

function file(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : stringify(content));
  return path;
}

function run(argv: string[], env: NodeJS.ProcessEnv = {}) {
  let stdout = '';
  let stderr = '';
  const code = validateConfig(argv, { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text), env });
  return { code, stdout, stderr };
}

describe('stator --validate-config', () => {
  it('exits 0 and prints nothing for a valid file', () => {
    expect(run(['--validate-config', file('valid.yml', VALID)])).toEqual({ code: 0, stdout: '', stderr: '' });
  });

  it('accepts the file before the flag and -i (Patroni command lines)', () => {
    expect(run([file('valid-2.yml', VALID), '--validate-config', '-i'])).toEqual({ code: 0, stdout: '', stderr: '' });
  });

  it('exits 1 with every problem, one line each, on stderr', () => {
    const path = file('bad.yml', { ...VALID, name: undefined, restapi: { listen: 'nowhere' } });
    const { code, stdout, stderr } = run(['--validate-config', path]);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr.trim().split('\n')).toEqual([
      'name: required (or PATRONI_NAME)',
      'restapi.listen: must be host:port, got "nowhere"',
    ]);
  });

  it('exits 1 naming an unreadable file', () => {
    const { code, stderr } = run(['--validate-config', join(dir, 'missing.yml')]);
    expect(code).toBe(1);
    expect(stderr).toBe(`${join(dir, 'missing.yml')}: cannot read the configuration file (ENOENT)\n`);
  });

  it('exits 0 with the warnings on stderr', () => {
    const { code, stderr } = run(['--validate-config', file('warned.yml', { ...VALID, consul: { host: 'x' } })]);
    expect(code).toBe(0);
    expect(stderr).toBe('WARNING: unsupported key consul ignored (only etcd3 is supported as DCS)\n');
  });

  it('--print writes the file with the environment overrides, passwords hidden', () => {
    const path = file('print.yml', VALID);
    const { code, stdout, stderr } = run(['--validate-config', '--print', path], {
      PATRONI_NAME: 'from-env',
      PATRONI_REPLICATION_PASSWORD: 'env-secret',
    });
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    const printed = parse(stdout) as typeof VALID & {
      postgresql: { authentication: { replication: { password: string } } };
    };
    expect(printed.name).toBe('from-env');
    expect(printed.restapi.authentication).toEqual({ username: 'admin', password: '********' });
    expect(printed.postgresql.authentication.superuser).toEqual({
      username: 'postgres',
      password: '********',
      sslpassword: '********',
    });
    expect(printed.postgresql.authentication.replication.password).toBe('********');
    expect(stdout).not.toMatch(/secret/);
    expect(printed.etcd3).toEqual(VALID.etcd3);
  });

  it('-p prints too, and nothing is printed when the file is invalid', () => {
    expect(parse(run(['--validate-config', '-p', file('p.yml', VALID)]).stdout)).toMatchObject({ scope: 'demo' });
    expect(run(['--validate-config', '-p', file('p-bad.yml', { ...VALID, scope: undefined })])).toMatchObject({
      code: 1,
      stdout: '',
    });
  });

  it('refuses --print without --validate-config, unknown options and two files, with usage (exit 2)', () => {
    const path = file('usage.yml', VALID);
    expect(run(['--print', path])).toMatchObject({
      code: 2,
      stdout: '',
      stderr: expect.stringMatching(/^stator: --print: can only be used with --validate-config\nusage:/),
    });
    expect(run(['--validate-config', '--pritn', path])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^stator: unknown option --pritn\n/),
    });
    expect(run(['--validate-config', path, path])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^stator: at most one configuration file\n/),
    });
  });

  it('hides nested and listed passwords, and leaves other values alone', () => {
    const at = new Date('2026-01-01T00:00:00Z');
    expect(hideSecrets({ a: [{ keyfile_password: 'x' }], password: null, b: { PASSWORD: 1 }, port: 5432, at })).toEqual(
      {
        a: [{ keyfile_password: '********' }],
        password: null,
        b: { PASSWORD: '********' },
        port: 5432,
        at,
      },
    );
  });
});
