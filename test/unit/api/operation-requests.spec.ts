import {
  failsafeBody,
  parseFailsafeCall,
  parseReinitialize as reinitializeFrom,
  parseRestart as restartFrom,
  parseSwitchover as switchoverFrom,
  reinitializeBody,
  reloadBody,
  restartBody,
  switchoverBody,
} from '../../../src/api/operation-requests';
import { refusal } from './refusal';
import { failsafeView } from '../../../src/ha/failsafe/failsafe-view';
import { cluster, leaderKey } from '../ha/snapshot-factory';

describe('POST /failsafe bodies', () => {
  const call = { name: 'n1', conn_url: 'postgres://h/postgres', api_url: 'http://h:8008/patroni' };

  it('are checked by their pipe before the handler: a JSON object with the three fields', () => {
    expect(failsafeBody.transform(call)).toEqual(call);
    expect(refusal(() => failsafeBody.transform(undefined))).toEqual({
      status: 400,
      text: 'Request body must be a JSON object',
    });
    expect(refusal(() => failsafeBody.transform([call]))).toEqual({
      status: 400,
      text: 'Request body must be a JSON object',
    });
    expect(refusal(() => failsafeBody.transform({ ...call, api_url: 7 }))).toEqual({
      status: 400,
      text: 'api_url: must be a non-empty string of at most 2048 characters',
    });
  });

  it("keeps the leader's slot positions, leaving out what is not a slot name with a WAL position", () => {
    expect(
      parseFailsafeCall({
        ...call,
        slots: { n2: 100, test_physical: 0, 'Bad-Name': 5, cdc: '7', neg: -1, huge: 2 ** 60 },
      }),
    ).toEqual({ ...call, slots: { n2: 100, test_physical: 0 } });
    expect(parseFailsafeCall({ ...call, slots: 'junk' })).toEqual(call);
    expect(parseFailsafeCall(call)).toEqual(call);
  });

  it('gives a replica the last view read with the failsafe leader and its positions in place of /status', () => {
    const last = cluster({
      leader: leaderKey('n2'),
      status: { value: { optime: 10, slots: { n1: 5 }, retain_slots: ['n1'] }, modRevision: '4' },
    });
    const view = failsafeView(last, { ...call, slots: { n2: 100 } })!;
    expect(view.leader?.value).toBe('n1');
    expect(view.status?.value).toEqual({ optime: 10, slots: { n2: 100 }, retain_slots: ['n1'] });
    expect(failsafeView(last, call)).toBeNull();
    expect(failsafeView(null, { ...call, slots: {} })).toBeNull();
  });
});
import { mergeConfig } from '../../../src/ha/node-operations';
import { restartDue, restartFilterMismatch, versionNumber } from '../../../src/ha/scheduled-restart';

const now = Date.parse('2026-06-01T12:00:00Z');

// What the endpoints do: the body pipe (class-validator DTO), then the mapping to the typed request.
const parseSwitchover = (kind: 'switchover' | 'failover', body: unknown, paused: boolean, at: number) =>
  switchoverFrom(kind, switchoverBody.transform(body), paused, at);
const parseRestart = (body: unknown, paused: boolean, at: number) =>
  restartFrom(restartBody.transform(body), paused, at);
const parseReinitialize = (body: unknown) => reinitializeFrom(reinitializeBody.transform(body));

describe('POST /reload bodies', () => {
  it('may be absent or any JSON object (no field is read), and nothing else', () => {
    expect(refusal(() => reloadBody.transform(undefined))).toBeNull();
    expect(refusal(() => reloadBody.transform({ anything: 1 }))).toBeNull();
    expect(refusal(() => reloadBody.transform('now'))).toEqual({
      status: 400,
      text: 'Request body must be a JSON object',
    });
  });
});

describe('POST /switchover and /failover bodies (reference 1.7, checks in order)', () => {
  it.each([
    ['failover', {}, false, 400, 'Failover could be performed only to a specific candidate'],
    ['failover', { foo: 'bar' }, false, 400, 'Failover could be performed only to a specific candidate'],
    ['switchover', { candidate: 'n2' }, false, 400, 'Switchover could be performed only from a specific leader'],
    [
      'failover',
      { candidate: 'n2', scheduled_at: '2026-06-01T13:00:00+02:00' },
      false,
      400,
      "Failover can't be scheduled",
    ],
    [
      'switchover',
      { leader: 'n1', scheduled_at: '2026-06-01T13:00:00Z' },
      true,
      400,
      "Can't schedule switchover in the paused state",
    ],
    [
      'switchover',
      { leader: 'n1', scheduled_at: '2026-06-01T13:00:00' },
      false,
      400,
      'Timezone information is mandatory for the scheduled switchover',
    ],
    [
      'switchover',
      { leader: 'n1', scheduled_at: '2026-06-01T11:00:00Z' },
      false,
      422,
      'Cannot schedule switchover in the past',
    ],
    [
      'switchover',
      { leader: 'n1', scheduled_at: 'tomorrow' },
      false,
      422,
      'Unable to parse scheduled timestamp. It should be in an unambiguous format, e.g. ISO 8601',
    ],
    [
      'switchover',
      { leader: 'n1' },
      true,
      400,
      'Switchover is possible only to a specific candidate in a paused state',
    ],
    ['switchover', { leader: 'n1', candidate: 'n1' }, false, 400, 'Switchover target and source are the same'],
    ['switchover', { leader: 7 }, false, 400, 'leader: must be a string'],
    [
      'switchover',
      { leader: 'n1', bogus: 1 },
      false,
      400,
      'Unknown field: bogus (accepted: leader, candidate, scheduled_at, site)',
    ],
    ['switchover', { leader: 'n1', site: 2 }, false, 400, 'site: must be a string'],
    [
      'switchover',
      { leader: 'n1', site: 'dc2' },
      true,
      400,
      'Switchover is possible only to a specific candidate in a paused state',
    ],
    ['failover', { site: 'dc2' }, false, 400, 'Failover could be performed only to a specific candidate'],
    ['switchover', [1, 2], false, 400, 'Request body must be a JSON object'],
  ] as const)('%s %j (paused %s) → %i %s', (kind, body, paused, status, text) => {
    expect(refusal(() => parseSwitchover(kind, body, paused, now))).toEqual({ status, text });
  });

  it('accepts member as an alias of candidate and keeps the timestamp offset', () => {
    expect(
      parseSwitchover(
        'switchover',
        { leader: 'n1', member: 'n2', scheduled_at: '2026-06-01T16:00:00+02:00' },
        false,
        now,
      ),
    ).toEqual({
      kind: 'switchover',
      leader: 'n1',
      candidate: 'n2',
      scheduledAt: { at: Date.parse('2026-06-01T14:00:00Z'), text: '2026-06-01T16:00:00+02:00' },
    });
  });

  it('carries a site, and drops an empty one', () => {
    expect(parseSwitchover('switchover', { leader: 'n1', site: 'dc2' }, false, now)).toEqual({
      kind: 'switchover',
      leader: 'n1',
      site: 'dc2',
    });
    expect(parseSwitchover('switchover', { leader: 'n1', site: '' }, false, now)).toEqual({
      kind: 'switchover',
      leader: 'n1',
    });
  });

  it('treats a failover that names the leader as a switchover', () => {
    expect(parseSwitchover('failover', { leader: 'n1', candidate: 'n2' }, false, now).kind).toBe('switchover');
  });
});

describe('POST /restart bodies (reference 1.8)', () => {
  it.each([
    [{ schedule: '2026-06-01T13:00:00Z' }, true, 500, "Can't schedule restart in the paused state"],
    [{ schedule: '2026-06-01T13:00:00' }, false, 400, 'Timezone information is mandatory for the scheduled restart'],
    [{ schedule: '2026-06-01T10:00:00Z' }, false, 422, 'Cannot schedule restart in the past'],
    [{ role: 'master' }, false, 400, 'PostgreSQL role should be either primary, standby_leader, or replica'],
    [{ postgres_version: '15' }, false, 400, 'Invalid PostgreSQL version format: X.Y or X.Y.Z is accepted: 15'],
    [{ timeout: -1 }, false, 400, 'Timeout should be a positive number of seconds'],
    [{ timeout: '10 parsecs' }, false, 400, 'Timeout should be a positive number of seconds'],
    [{ when: 'now' }, false, 400, 'Unknown filter for the scheduled restart: when'],
    [
      { role: 'master', when: 'now' },
      false,
      400,
      'PostgreSQL role should be either primary, standby_leader, or replica',
    ],
  ] as const)('%j (paused %s) → %i %s', (body, paused, status, text) => {
    expect(refusal(() => parseRestart(body, paused, now))).toEqual({ status, text });
  });

  it('reads every filter, with timeouts in units and restart_pending turned on by its presence', () => {
    expect(
      parseRestart(
        { role: 'replica', postgres_version: '15.19', timeout: '2min', restart_pending: 'False' },
        false,
        now,
      ),
    ).toEqual({
      role: 'replica',
      postgres_version: '15.19',
      timeout: 120,
      restart_pending: true,
    });
    expect(parseRestart(undefined, false, now)).toEqual({});
  });
});

describe('POST /reinitialize bodies', () => {
  it('takes force and from_leader, refuses anything else', () => {
    expect(parseReinitialize({ force: true })).toEqual({ force: true, fromLeader: false });
    expect(parseReinitialize(undefined)).toEqual({ force: false, fromLeader: false });
    expect(refusal(() => parseReinitialize({ force: 'yes' }))).toEqual({
      status: 400,
      text: 'force: must be true or false',
    });
    expect(refusal(() => parseReinitialize({ wipe: true }))).toEqual({
      status: 400,
      text: 'Unknown field: wipe (accepted: force, from_leader)',
    });
  });
});

describe('PATCH /config merge', () => {
  it('merges objects, replaces scalars, removes keys set to null', () => {
    const current = {
      ttl: 30,
      loop_wait: 10,
      postgresql: { use_slots: true, parameters: { max_connections: 100, work_mem: '4MB' } },
    };
    expect(
      mergeConfig(current, {
        ttl: 20,
        pause: true,
        postgresql: { parameters: { max_connections: 101, work_mem: null } },
      }),
    ).toEqual({
      ttl: 20,
      loop_wait: 10,
      pause: true,
      postgresql: { use_slots: true, parameters: { max_connections: 101 } },
    });
  });
});

describe('scheduled restarts', () => {
  it('wait until due, run within ⌊1.5·loop_wait⌋ after, and are stale later', () => {
    expect(restartDue({ at: now + 1 }, now, 10)).toBe('wait');
    expect(restartDue({ at: now - 15_000 }, now, 10)).toBe('run');
    expect(restartDue({ at: now - 16_000 }, now, 10)).toBe('stale');
  });

  it('check role, version and pending restart', () => {
    const sample = { serverVersion: 150018, pendingRestart: {} } as never;
    expect(restartFilterMismatch({ role: 'replica' }, { role: 'primary', sample })).toBe('role primary is not replica');
    expect(restartFilterMismatch({ postgres_version: '15.18' }, { role: 'primary', sample })).toBe(
      'PostgreSQL 150018 is not older than 15.18',
    );
    expect(restartFilterMismatch({ postgres_version: '15.19' }, { role: 'primary', sample })).toBeNull();
    expect(restartFilterMismatch({ restart_pending: true }, { role: 'primary', sample })).toBe('no restart is pending');
    expect(versionNumber('16.2')).toBe(160002);
  });
});
