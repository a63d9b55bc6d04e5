import { withVersionNames } from '../../src/postgresql/parameter-renames';

describe('parameters renamed between PostgreSQL versions', () => {
  it.each([
    [{ wal_keep_segments: 100 }, 15, { wal_keep_size: '1600MB' }],
    [{ wal_keep_segments: '8' }, 13, { wal_keep_size: '128MB' }],
    [{ wal_keep_segments: 100, wal_keep_size: '1GB' }, 15, { wal_keep_size: '1GB' }],
    [{ wal_keep_size: '1GB' }, 12, { wal_keep_segments: 64 }],
    [{ wal_keep_size: 100 }, 12, { wal_keep_segments: 7 }],
    [{ wal_keep_segments: 8 }, 12, { wal_keep_segments: 8 }],
    [{ work_mem: '4MB' }, 15, { work_mem: '4MB' }],
  ])('%j on PostgreSQL %i → %j', (given, version, expected) => {
    expect(withVersionNames(given, version)).toEqual(expected);
  });
});
