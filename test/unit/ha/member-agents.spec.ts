import { ClusterView, MemberData } from '../../../src/dcs/dcs.port';
import { agentOf, MemberAgents } from '../../../src/ha/member-agents';

const key = (version: string, statorVersion?: string): MemberData => ({
  conn_url: 'postgres://127.0.0.1:5432/postgres',
  api_url: 'http://127.0.0.1:8008/patroni',
  state: 'running',
  role: 'replica',
  version,
  ...(statorVersion ? { stator_version: statorVersion } : {}),
});

const view = (members: Record<string, MemberData>): ClusterView =>
  ({ members: Object.entries(members).map(([name, data]) => ({ name, data, modRevision: '1' })) }) as unknown as ClusterView;

describe('MemberAgents', () => {
  it('names the agent from stator_version, else from Patroni\'s version', () => {
    expect(agentOf(key('4.1.4', '0.1.0'))).toBe('stator 0.1.0');
    expect(agentOf(key('3.0.2'))).toBe('patroni 3.0.2');
    expect(agentOf(key(''))).toBe('unknown');
  });

  it('reports each member when it first appears, then only when its agent changes (a rolling migration, and back)', () => {
    const agents = new MemberAgents();
    expect(agents.see(view({ n1: key('3.0.2'), n2: key('3.0.2') }))).toEqual([
      { member: 'n1', agent: 'patroni 3.0.2', version: '3.0.2', previous: null },
      { member: 'n2', agent: 'patroni 3.0.2', version: '3.0.2', previous: null },
    ]);
    expect(agents.see(view({ n1: key('3.0.2'), n2: key('3.0.2') }))).toEqual([]);
    expect(agents.see(view({ n1: key('3.0.2'), n2: key('4.1.4', '0.1.0') }))).toEqual([
      { member: 'n2', agent: 'stator 0.1.0', version: '4.1.4', previous: 'patroni 3.0.2' },
    ]);
    // n2 stopped (key expired), then back on the same agent: nothing new.
    expect(agents.see(view({ n1: key('3.0.2') }))).toEqual([]);
    expect(agents.see(view({ n1: key('3.0.2'), n2: key('4.1.4', '0.1.0') }))).toEqual([]);
    expect(agents.see(view({ n1: key('3.0.2'), n2: key('3.0.2') }))).toEqual([
      { member: 'n2', agent: 'patroni 3.0.2', version: '3.0.2', previous: 'stator 0.1.0' },
    ]);
  });

  it('remembers a bounded number of members', () => {
    const agents = new MemberAgents();
    for (let round = 0; round < 3; round++) {
      const members: Record<string, MemberData> = {};
      for (let i = 0; i < 600; i++) members[`m${round}-${i}`] = key('3.0.2');
      agents.see(view(members));
    }
    expect((agents as unknown as { agents: Map<string, string> }).agents.size).toBeLessThanOrEqual(1000);
  });
});
