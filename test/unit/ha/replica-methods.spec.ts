import { MethodOption, PostgresqlConfig } from '../../../src/config/config.types';
import { methodFlag } from '../../../src/config/custom-methods-config';
import { canCloneWithoutLeader, replicaMethodPlan } from '../../../src/ha/replica-methods';
import { bootstrapArguments, replicaMethodArguments } from '../../../src/postgresql/process/custom-methods';

/** The order of replica methods and the arguments their commands get, as the reference builds them. */
describe('replica and bootstrap methods', () => {
  const postgresql = (methods: Partial<PostgresqlConfig>) => methods as PostgresqlConfig;
  const restore = { command: '/restore.sh', options: { no_leader: true } };
  const standard = {
    scope: 'demo',
    datadir: '/data',
    connstring: 'host=10.0.0.1 port=5432 user=replicator dbname=postgres',
  };

  it('tries the listed methods in order, basebackup alone by default, and only no_leader methods without a member', () => {
    expect(replicaMethodPlan(postgresql({}), true).map((step) => step.name)).toEqual(['basebackup']);
    const both = postgresql({ create_replica_methods: ['restore', 'basebackup'], replica_methods: { restore } });
    expect(replicaMethodPlan(both, true).map((step) => step.name)).toEqual(['restore', 'basebackup']);
    expect(replicaMethodPlan(both, false).map((step) => step.name)).toEqual(['restore']);
    expect(canCloneWithoutLeader(both)).toBe(true);
    expect(canCloneWithoutLeader(postgresql({ create_replica_methods: ['basebackup'] }))).toBe(false);
  });

  it.each([
    [true, true],
    ['1', true],
    ['on', true],
    ['yes', true],
    [1, true],
    [false, false],
    ['0', false],
    ['false', false],
    ['maybe', false],
    [undefined, false],
  ])(
    'reads no_leader: %p as %p, as the reference reads YAML and the strings it gets from its own harness',
    (value, expected) => {
      const options: Record<string, MethodOption> = value === undefined ? {} : { no_leader: value };
      expect(methodFlag(options, 'no_leader')).toBe(expected);
      const restoreOnly = postgresql({
        create_replica_methods: ['restore'],
        replica_methods: { restore: { command: '/restore.sh', options } },
      });
      expect(canCloneWithoutLeader(restoreOnly)).toBe(expected);
    },
  );

  it('passes the section keys, then --scope, --role, --datadir and --connstring, booleans spelled as Python does', () => {
    expect(
      replicaMethodArguments(
        { command: '/restore.sh', options: { no_leader: true, stanza: 'main', 'process-max': 4 } },
        standard,
      ),
    ).toEqual([
      '--no_leader=True',
      '--stanza=main',
      '--process-max=4',
      '--scope=demo',
      '--role=replica',
      '--datadir=/data',
      `--connstring=${standard.connstring}`,
    ]);
  });

  it("with no_params passes only the user's own keys, without the flags that steer Stator", () => {
    expect(
      replicaMethodArguments(
        { command: '/restore.sh', no_params: true, options: { keep_data: true, no_leader: true, delta: true } },
        standard,
      ),
    ).toEqual(['--delta=True']);
  });

  it('gives a custom bootstrap --scope and --datadir first, or only its own keys with no_params', () => {
    expect(bootstrapArguments({ command: '/b.sh', options: { stanza: 'main' } }, 'demo', '/data')).toEqual([
      '--scope=demo',
      '--datadir=/data',
      '--stanza=main',
    ]);
    expect(
      bootstrapArguments({ command: '/b.sh', no_params: true, options: { stanza: 'main' } }, 'demo', '/data'),
    ).toEqual(['--stanza=main']);
  });
});
