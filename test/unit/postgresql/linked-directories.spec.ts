import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { linkedDirectories, removeLinkedDirectories } from '../../../src/postgresql/process/linked-directories';

/**
 * A data directory whose WAL and a tablespace live on other volumes (initdb's `waldir`, CREATE TABLESPACE): removing
 * it removes what they hold too, as the reference's remove_data_directory does, so that a clone made again can put
 * its WAL there (pg_basebackup refuses a `--waldir` that is not empty).
 */
describe('the directories a data directory links to', () => {
  let root: string;
  let dataDir: string;
  let walVolume: string;
  let tablespaceVolume: string;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'stator-linked-'));
    dataDir = join(root, 'data');
    walVolume = join(root, 'wal-volume');
    tablespaceVolume = join(root, 'tablespace-volume');
    mkdirSync(join(dataDir, 'pg_tblspc'), { recursive: true });
    mkdirSync(join(walVolume, 'pg_wal', 'archive_status'), { recursive: true });
    writeFileSync(join(walVolume, 'pg_wal', '000000010000000000000001'), 'wal');
    mkdirSync(join(tablespaceVolume, 'PG_15_202209061', '5'), { recursive: true });
    symlinkSync(join(walVolume, 'pg_wal'), join(dataDir, 'pg_wal'));
    symlinkSync(tablespaceVolume, join(dataDir, 'pg_tblspc', '16384'));
    writeFileSync(join(dataDir, 'PG_VERSION'), '15\n');
  });

  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('finds the WAL directory and each tablespace by their links', async () => {
    expect((await linkedDirectories(dataDir)).sort()).toEqual([join(walVolume, 'pg_wal'), tablespaceVolume].sort());
  });

  it('removes what they link to and leaves the volumes themselves', async () => {
    await removeLinkedDirectories(dataDir);
    expect(existsSync(join(walVolume, 'pg_wal'))).toBe(false);
    expect(existsSync(tablespaceVolume)).toBe(false);
    expect(existsSync(walVolume)).toBe(true);
  });

  it('finds nothing in a data directory whose WAL is its own', async () => {
    rmSync(join(dataDir, 'pg_wal'));
    rmSync(join(dataDir, 'pg_tblspc', '16384'));
    mkdirSync(join(dataDir, 'pg_wal'));
    expect(await linkedDirectories(dataDir)).toEqual([]);
  });
});
