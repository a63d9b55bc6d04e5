import { ClusterView, MemberData } from '../../../src/dcs/dcs.port';
import { agentOf, describeAgent, MemberAgents } from '../../../src/ha/member-agents';

const key = (version: string, statorVersion?: string, runtime?: string): MemberData => ({
  conn_url: 'postgres://127.0.0.1:5432/postgres',
  api_url: 'http://127.0.0.1:8008/patroni',
  state: 'running',
  role: 'replica',
  version,
  ...(statorVersion ? { stator_version: statorVersion } : {}),
  ...(runtime ? { stator_runtime: runtime } : {}),
});

const view = (members: Record<string, MemberData>): ClusterView =>
  ({
    members: Object.entries(members).map(([name, data]) => ({ name, data, modRevision: '1' })),
  }) as unknown as ClusterView;

describe('MemberAgents', () => {
  it("names the agent from stator_version, else from Patroni's version", () => {
    expect(agentOf(key('4.1.4', '0.1.0'))).toBe('stator 0.1.0');
    expect(agentOf(key('3.0.2'))).toBe('patroni 3.0.2');
    expect(agentOf(key(''))).toBe('unknown');
  });

  it('reports each member when it first appears, then only when its agent changes (a rolling migration, and back)', () => {
    const agents = new MemberAgents();
    expect(agents.see(view({ n1: key('3.0.2'), n2: key('3.0.2') }))).toEqual([
      { member: 'n1', agent: 'patroni 3.0.2', version: '3.0.2', runtime: null, previous: null, previousRuntime: null },
      { member: 'n2', agent: 'patroni 3.0.2', version: '3.0.2', runtime: null, previous: null, previousRuntime: null },
    ]);
    expect(agents.see(view({ n1: key('3.0.2'), n2: key('3.0.2') }))).toEqual([]);
    expect(agents.see(view({ n1: key('3.0.2'), n2: key('4.1.4', '0.1.0') }))).toEqual([
      {
        member: 'n2',
        agent: 'stator 0.1.0',
        version: '4.1.4',
        runtime: null,
        previous: 'patroni 3.0.2',
        previousRuntime: null,
      },
    ]);
    // n2 stopped (key expired), then back on the same agent: nothing new.
    expect(agents.see(view({ n1: key('3.0.2') }))).toEqual([]);
    expect(agents.see(view({ n1: key('3.0.2'), n2: key('4.1.4', '0.1.0') }))).toEqual([]);
    expect(agents.see(view({ n1: key('3.0.2'), n2: key('3.0.2') }))).toEqual([
      {
        member: 'n2',
        agent: 'patroni 3.0.2',
        version: '3.0.2',
        runtime: null,
        previous: 'stator 0.1.0',
        previousRuntime: null,
      },
    ]);
  });

  it('reports a member again when its agent moves to another runtime (a rolling upgrade onto another Node line)', () => {
    const agents = new MemberAgents();
    expect(agents.see(view({ n1: key('0.1.0', '0.1.0', 'node 20.20.2') }))).toEqual([
      {
        member: 'n1',
        agent: 'stator 0.1.0',
        version: '0.1.0',
        runtime: 'node 20.20.2',
        previous: null,
        previousRuntime: null,
      },
    ]);
    expect(agents.see(view({ n1: key('0.1.0', '0.1.0', 'node 20.20.2') }))).toEqual([]);
    const [change] = agents.see(view({ n1: key('0.1.0', '0.1.0', 'node 24.21.0') }));
    expect(change).toEqual({
      member: 'n1',
      agent: 'stator 0.1.0',
      version: '0.1.0',
      runtime: 'node 24.21.0',
      previous: 'stator 0.1.0',
      previousRuntime: 'node 20.20.2',
    });
    expect(describeAgent(change)).toBe('stator 0.1.0 on node 24.21.0');
    expect(describeAgent({ agent: 'patroni 3.0.2', runtime: null })).toBe('patroni 3.0.2');
  });

  it('remembers a bounded number of members', () => {
    const agents = new MemberAgents();
    for (let round = 0; round < 3; round++) {
      const members: Record<string, MemberData> = {};
      for (let i = 0; i < 600; i++) members[`m${round}-${i}`] = key('3.0.2');
      agents.see(view(members));
    }
    expect((agents as unknown as { agents: Map<string, unknown> }).agents.size).toBeLessThanOrEqual(1000);
  });
});
