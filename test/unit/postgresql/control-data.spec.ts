import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PostgresqlConfig } from '../../../src/config/config.types';
import { CommandRunner } from '../../../src/postgresql/process/commands';
import { ControlDataReader } from '../../../src/postgresql/process/control-data';
import { LocalPostgres } from '../../../src/postgresql/process/local-postgres';

/**
 * pg_controldata is run again only when pg_control changed: a stand-in pg_controldata prints the file and counts
 * its runs, so a stale answer (the old content after a write) or a needless run shows.
 */
describe('ControlDataReader', () => {
  let dir: string;
  let reader: (secondsAfterWrites: number) => ControlDataReader;
  const controlFile = () => join(dir, 'data', 'global', 'pg_control');
  const runs = () => readFileSync(join(dir, 'runs'), 'utf8').split('\n').filter(Boolean).length;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'stator-control-data-spec-'));
    mkdirSync(join(dir, 'data', 'global'), { recursive: true });
    mkdirSync(join(dir, 'bin'));
    const program = join(dir, 'bin', 'pg_controldata');
    writeFileSync(program, `#!/bin/sh\necho run >> ${join(dir, 'runs')}\ncat "$2/global/pg_control"\n`);
    chmodSync(program, 0o755);
    writeFileSync(join(dir, 'runs'), '');
    const config = {
      data_dir: join(dir, 'data'),
      bin_dir: join(dir, 'bin'),
      authentication: { superuser: { username: 'postgres' }, replication: { username: 'replicator' } },
      // The agent's own user: no switch of user when the tests do not run as root.
      os_user: process.getuid?.() === 0 ? 'root' : (process.env.USER ?? 'root'),
    } as PostgresqlConfig;
    const local = new LocalPostgres({ name: 'n1', config });
    // The reader's wall clock set ahead: it reads as long after pg_control's last write.
    reader = (secondsAfterWrites) =>
      new ControlDataReader(local, new CommandRunner(config), () => Date.now() + secondsAfterWrites * 1000);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('answers again from the last run while pg_control is the one it read, settled', async () => {
    writeFileSync(controlFile(), 'Database cluster state: shut down\n');
    const tenSecondsLater = reader(10);
    expect(await tenSecondsLater.read()).toBe('Database cluster state: shut down\n');
    expect(await tenSecondsLater.read()).toBe('Database cluster state: shut down\n');
    expect(runs()).toBe(1);
  });

  it('runs pg_controldata again once pg_control was written, at the same length', async () => {
    writeFileSync(controlFile(), 'Latest checkpoint location: 0/1000000\n');
    const tenSecondsLater = reader(10);
    await tenSecondsLater.read();
    writeFileSync(controlFile(), 'Latest checkpoint location: 0/2000000\n');
    expect(await tenSecondsLater.read()).toBe('Latest checkpoint location: 0/2000000\n');
    expect(runs()).toBe(2);
  });

  it('does not reuse a reading of a pg_control written less than a second before it', async () => {
    writeFileSync(controlFile(), 'Database cluster state: in production\n');
    const rightAfter = reader(0);
    await rightAfter.read();
    expect(await rightAfter.read()).toBe('Database cluster state: in production\n');
    expect(runs()).toBe(2);
  });

  it('runs again for a data directory replaced by another (a new clone)', async () => {
    writeFileSync(controlFile(), 'Database system identifier: 1\n');
    const tenSecondsLater = reader(10);
    await tenSecondsLater.read();
    rmSync(join(dir, 'data'), { recursive: true });
    mkdirSync(join(dir, 'data', 'global'), { recursive: true });
    writeFileSync(controlFile(), 'Database system identifier: 2\n');
    expect(await tenSecondsLater.read()).toBe('Database system identifier: 2\n');
    expect(runs()).toBe(2);
  });
});
