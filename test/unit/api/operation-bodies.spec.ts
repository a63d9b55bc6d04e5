import 'reflect-metadata';
import { reinitializeBody, restartBody, switchoverBody } from '../../../src/api/operation-requests';

// The body pipes' own answers (before the mapping): what a client sees for null, a wrong type or a long name. The
// expected texts and fields were read from the class-validator pipe these rules replaced (same bodies, same answers).
const answer = (pipe: { transform: (body: unknown) => { fields: object } }, body: unknown) => {
  try {
    return JSON.stringify(pipe.transform(body).fields);
  } catch (error) {
    return (error as Error).message;
  }
};

describe('operation body rules', () => {
  it.each([
    [{ role: null }, 'PostgreSQL role should be either primary, standby_leader, or replica'],
    [{ postgres_version: null }, 'Invalid PostgreSQL version format: X.Y or X.Y.Z is accepted: null'],
    [
      { postgres_version: '1'.repeat(50) },
      `Invalid PostgreSQL version format: X.Y or X.Y.Z is accepted: ${'1'.repeat(37)}...`,
    ],
    [{ schedule: null }, 'schedule: must be an ISO 8601 timestamp with time zone'],
    [{ timeout: null }, 'Timeout should be a positive number of seconds'],
    [{ restart_pending: null }, '{"restart_pending":null}'],
    [
      { role: 'replica', postgres_version: '15.4', timeout: '2min' },
      '{"role":"replica","postgres_version":"15.4","timeout":"2min"}',
    ],
  ])('POST /restart %j → %s', (body, expected) => {
    expect(answer(restartBody, body)).toBe(expected);
  });

  it.each([
    [{ leader: null, candidate: 'n2' }, '{"leader":null,"candidate":"n2"}'],
    [{ leader: 'x'.repeat(257) }, 'leader: must be at most 256 characters'],
    [{ leader: 'x'.repeat(256) }, JSON.stringify({ leader: 'x'.repeat(256) })],
    [{ scheduled_at: null, leader: 'n1' }, '{"leader":"n1","scheduled_at":null}'],
    [{ site: 5, leader: 'n1' }, 'site: must be a string'],
    [{ member: ['n2'], leader: 'n1' }, 'member: must be a string'],
  ])('POST /switchover %j → %s', (body, expected) => {
    expect(answer(switchoverBody, body)).toBe(expected);
  });

  it.each([
    [{ force: null }, 'force: must be true or false'],
    [{ from_leader: 'yes' }, 'from_leader: must be true or false'],
    [{ 'from-leader': true }, '{"from-leader":true}'],
  ])('POST /reinitialize %j → %s', (body, expected) => {
    expect(answer(reinitializeBody, body)).toBe(expected);
  });
});
