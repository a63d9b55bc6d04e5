import { archiverCommand } from '../../../src/postgresql/process/archive-command';
import { parseControlData } from '../../../src/postgresql/real-postgres-process';

const WAL = '00000001000000000000000A';

describe('archive_command for the shutdown checkpoint of demote-cluster (as PostgreSQL and Patroni fill it in)', () => {
  it.each([
    ['%p is the path under the data directory, %f the name', 'cp %p /archive/%f', `cp pg_wal/${WAL} /archive/${WAL}`],
    ['%% is a percent sign', 'echo 100%% && cp %p /a/%f', `echo 100% && cp pg_wal/${WAL} /a/${WAL}`],
    ['%r is the first segment, as Patroni', 'keep %r', 'keep 000000010000000000000001'],
    ['an unknown placeholder and a trailing percent stay as written', 'run %x %', 'run %x %'],
    [
      'the usual test-and-copy',
      'test ! -f /arch/%f && cp %p /arch/%f',
      `test ! -f /arch/${WAL} && cp pg_wal/${WAL} /arch/${WAL}`,
    ],
  ])('%s', (_what, template, expected) => {
    expect(archiverCommand(template, WAL)).toBe(expected);
  });
});

describe("pg_controldata's REDO WAL file", () => {
  it('names the segment that holds the shutdown checkpoint', () => {
    const text = [
      'Database cluster state:               shut down',
      'Latest checkpoint location:           0/A000028',
      "Latest checkpoint's REDO location:    0/A000028",
      `Latest checkpoint's REDO WAL file:    ${WAL}`,
      "Latest checkpoint's TimeLineID:       1",
    ].join('\n');
    expect(parseControlData(text)).toMatchObject({
      clusterState: 'shut down',
      checkpointLsn: 0x0a000028,
      redoWalFile: WAL,
      timeline: 1,
    });
  });
});
