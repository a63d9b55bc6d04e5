import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { loadConfig } from '../../src/config/load-config';
import { problemsIfAny } from '../helpers/config-problems';
import { removeDir, tmpDir } from '../helpers/tmp';

/** The `ctl` section in the agent's file: read (its certificate is what the agent shows other members), each bad value named. */
describe("the agent's ctl section", () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach(removeDir));
  const write = (ctl: unknown): string => {
    const dir = tmpDir('stator-ctl-config-');
    dirs.push(dir);
    const path = join(dir, 'stator.yml');
    const base = {
      scope: 'demo',
      name: 'node1',
      restapi: { listen: '127.0.0.1:8008' },
      etcd3: { hosts: ['127.0.0.1:2379'] },
      postgresql: { data_dir: '/tmp/data', listen: '127.0.0.1:5432' },
    };
    writeFileSync(path, stringify(ctl === undefined ? base : { ...base, ctl }));
    return path;
  };

  it("reads patronictl's keys without a warning, from the file and from PATRONI_CTL_* variables", () => {
    const { config, warnings } = loadConfig(
      write({
        insecure: 'off',
        cacert: '/etc/ca.pem',
        certfile: '/etc/c.pem',
        keyfile: '/etc/k.pem',
        keyfile_password: 1234,
        authentication: { username: 'u', password: 'p' },
      }),
      {},
    );
    expect(warnings).toEqual([]);
    expect(config.ctl).toEqual({
      insecure: false,
      cacert: '/etc/ca.pem',
      certfile: '/etc/c.pem',
      keyfile: '/etc/k.pem',
      keyfile_password: '1234',
      authentication: { username: 'u', password: 'p' },
    });
    const fromEnvironment = loadConfig(write(undefined), {
      PATRONI_CTL_INSECURE: 'true',
      PATRONI_CTL_CERTFILE: '/etc/c.pem',
      PATRONI_CTL_KEYFILE_PASSWORD: 'x',
    }).config;
    expect(fromEnvironment.ctl).toEqual({ insecure: true, certfile: '/etc/c.pem', keyfile_password: 'x' });
    expect(loadConfig(write(undefined), {}).config.ctl).toBeUndefined();
  });

  it.each([
    [{ insecure: 'maybe' }, ['ctl.insecure: must be a boolean (true/false, on/off, yes/no), got "maybe"']],
    [{ certfile: ['a'] }, ['ctl.certfile: must be a string, got ["a"]']],
    [{ certfile: '/c.pem', keyfile_password: { secret: 's3cret' } }, ['ctl.keyfile_password: must be a string']],
    [{ authentication: { username: 'u' } }, ['ctl.authentication: needs both username and password']],
    ['blue', ['ctl: must be a mapping, got "blue"']],
  ])('refuses ctl %j: %j', (ctl, problems) => {
    expect(problemsIfAny(() => loadConfig(write(ctl), {}))).toEqual(problems);
  });

  it('warns about a key it does not know and a keyfile without its certificate', () => {
    expect(loadConfig(write({ keyfile: '/k.pem', colour: 'blue' }), {}).warnings).toEqual([
      'unsupported key ctl.colour ignored',
      'ctl.keyfile: ignored without ctl.certfile (the certificate the key belongs to), as in Patroni',
    ]);
  });
});
