import { formatStandbyNames, parseStandbyNames, STRICT_PLACEHOLDER } from '../../src/postgresql/standby-names';

describe('synchronous_standby_names as the reference writes it', () => {
  it.each([
    [[], null, false, ''],
    [['postgres-1'], null, false, '"postgres-1"'],
    [['b', 'a'], null, false, '2 (a,b)'],
    [['b', 'a'], 1, false, '1 (a,b)'],
    [[], 1, false, STRICT_PLACEHOLDER],
    [['*'], null, false, STRICT_PLACEHOLDER],
    [['node2', 'node1'], 1, true, 'ANY 1 (node1,node2)'],
    [['node1'], 1, true, 'ANY 1 (node1)'],
    [[], 1, true, `ANY 1 (${STRICT_PLACEHOLDER})`],
    [['first', 'Any', 'x"y'], null, false, '3 ("Any","first","x""y")'],
  ])('%j count %s quorum %s -> %s', (names, count, quorum, expected) => {
    expect(formatStandbyNames(names as string[], count as number | null, quorum as boolean)).toBe(expected);
  });

  it.each([
    ['', { kind: 'off', count: 0, members: [], hasStar: false }],
    ['"postgres-1"', { kind: 'priority', count: 1, members: ['postgres-1'], hasStar: false }],
    ['2 (a, "b c")', { kind: 'priority', count: 2, members: ['a', 'b c'], hasStar: false }],
    ['FIRST 1 (a,b)', { kind: 'priority', count: 1, members: ['a', 'b'], hasStar: false }],
    ['any 2 (a,b,c)', { kind: 'quorum', count: 2, members: ['a', 'b', 'c'], hasStar: false }],
    ['*', { kind: 'priority', count: 1, members: ['*'], hasStar: true }],
    [STRICT_PLACEHOLDER, { kind: 'priority', count: 1, members: [], hasStar: false }],
    [`ANY 1 (${STRICT_PLACEHOLDER})`, { kind: 'quorum', count: 1, members: [], hasStar: false }],
    ['a, b', { kind: 'priority', count: 1, members: ['a', 'b'], hasStar: false }],
  ])('reads %j', (value, expected) => {
    expect(parseStandbyNames(value)).toEqual(expected);
  });

  it('reads back every value it writes', () => {
    for (const names of [['a'], ['postgres-2', 'postgres-1'], ['x"y', 'any']]) {
      for (const quorum of [false, true]) {
        const parsed = parseStandbyNames(formatStandbyNames(names, 1, quorum));
        expect([...parsed.members].sort()).toEqual([...names].sort());
        expect(parsed.kind).toBe(quorum ? 'quorum' : 'priority');
      }
    }
  });

  it.each(['a b', 'a,', '(a)', 'a,,b', '1 (a', 'a;b'])('refuses %j as PostgreSQL would', (value) => {
    expect(() => parseStandbyNames(value)).toThrow(/unparsable synchronous_standby_names/);
  });

  it('parses a long hostile value in linear time and refuses an oversized one', () => {
    const long = Array.from({ length: 5000 }, (_, i) => `n${i}`).join(',');
    const started = process.hrtime.bigint();
    expect(parseStandbyNames(long).members).toHaveLength(5000);
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(500);
    expect(() => parseStandbyNames('a,'.repeat(40_000) + 'a')).toThrow(/longer than/);
  });
});
