import { parseStandbyNames } from '../../../../src/postgresql/standby-names';
import { planPriority, SyncStep } from '../../../../src/ha/sync/priority-plan';

/** One cycle of the leader in priority mode: `/sync` standbys, synchronous_standby_names, what the standbys report. */
function plan(
  voters: string[],
  standbyNames: string,
  active: string[],
  confirmed: string[],
  strict = false,
): SyncStep[] {
  return planPriority({
    voters,
    currentValue: standbyNames,
    standbyNames: parseStandbyNames(standbyNames),
    active,
    confirmed,
    strict,
  });
}

const shape = (steps: SyncStep[]) =>
  steps.map((step) =>
    step.type === 'writeSync'
      ? `sync=${step.standbys.join(',') || '-'}`
      : step.type === 'setStandbyNames'
        ? `ssn=${step.value || "''"}`
        : step.type,
  );

describe('synchronous replication steps in priority mode (reference-behavior 3.9)', () => {
  it.each([
    // voters, SSN, active, confirmed, strict -> steps in order
    ['nothing to do without standbys', [], '', [], [], false, []],
    ['a new standby: the setting first, /sync once it is confirmed', [], '', ['b'], [], false, ['ssn=b', 'recheck']],
    ['the listed standby confirmed: into /sync', [], 'b', ['b'], ['b'], false, ['sync=b']],
    ['steady state', ['b'], 'b', ['b'], ['b'], false, []],
    ['the standby left: out of /sync first, then out of the setting', ['b'], 'b', [], [], false, ['sync=-', "ssn=''"]],
    [
      'swap b for c: /sync drops b before the setting names c',
      ['b'],
      'b',
      ['c'],
      [],
      false,
      ['sync=-', 'ssn=c', 'recheck'],
    ],
    ['two wanted, one confirmed so far', ['b'], 'b', ['b', 'c'], ['b'], false, ['ssn=2 (b,c)', 'recheck']],
    ['both confirmed', ['b'], '2 (b,c)', ['b', 'c'], ['b', 'c'], false, ['sync=b,c']],
    ['back to one: c leaves /sync before the setting', ['b', 'c'], '2 (b,c)', ['b'], ['b'], false, ['sync=b', 'ssn=b']],
    [
      'listed but not caught up: /sync does not keep a standby PostgreSQL does not confirm',
      ['b'],
      'b',
      ['b'],
      [],
      false,
      ['sync=-', 'recheck'],
    ],
    [
      'strict without standbys: placeholder',
      [],
      '',
      [],
      [],
      true,
      ['ssn=__patroni_strict_sync_replica_placeholder__', 'strictHold'],
    ],
    ['strict keeps the last synchronous standby listed', ['b'], 'b', [], [], true, ['strictHold']],
    ['strict already holding', [], '__patroni_strict_sync_replica_placeholder__', [], [], true, ['strictHold']],
    [
      'strict over: a standby is back',
      [],
      '__patroni_strict_sync_replica_placeholder__',
      ['b'],
      [],
      true,
      ['ssn=b', 'recheck'],
    ],
  ] as [string, string[], string, string[], string[], boolean, string[]][])(
    '%s',
    (_what, voters, ssn, active, confirmed, strict, expected) => {
      expect(shape(plan(voters, ssn, active, confirmed, strict))).toEqual(expected);
    },
  );

  it('never lists in /sync a standby the current setting does not make synchronous', () => {
    const names = ['b', 'c', 'd'];
    const subsets = (list: string[]) =>
      list.reduce<string[][]>((all, name) => [...all, ...all.map((s) => [...s, name])], [[]]);
    for (const voters of subsets(names)) {
      for (const listed of subsets(names)) {
        for (const active of subsets(names)) {
          const ssn =
            listed.length === 0 ? '' : listed.length === 1 ? listed[0] : `${listed.length} (${listed.join(',')})`;
          const confirmed = active.filter((n) => listed.includes(n));
          let inForce = listed;
          let inSync = voters;
          for (const step of plan(voters, ssn, active, confirmed)) {
            if (step.type === 'writeSync') {
              // A standby enters /sync only while the setting in force lists it.
              for (const standby of step.standbys) if (!inSync.includes(standby)) expect(inForce).toContain(standby);
              inSync = step.standbys;
            }
            if (step.type === 'setStandbyNames') {
              inForce = parseStandbyNames(step.value).members;
              // The setting drops a standby only after /sync let it go.
              for (const standby of inSync) expect(inForce).toContain(standby);
            }
          }
        }
      }
    }
  });
});
