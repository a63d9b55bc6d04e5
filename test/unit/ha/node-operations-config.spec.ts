import { HttpException } from '@nestjs/common';
import { ConfigBodyPipe } from '../../../src/api/dto/config-body.pipe';
import { ManualClock } from '../../../src/common/clock';
import { ClusterView } from '../../../src/dcs/dcs.port';
import { MemoryDcs, MemoryDcsBackend } from '../../../src/dcs/memory-dcs';
import { HaNode } from '../../../src/ha/ha-node';
import { NodeOperations } from '../../../src/ha/node-operations';

/** What the endpoints do first: the body pipe. */
const body = (document: unknown) => new ConfigBodyPipe().transform(document);

/**
 * PATCH and PUT /config against the in-memory DCS. The node stands in with the two things the
 * config endpoints use: its cluster view (here: read before another writer got in) and its event log.
 */
function setup() {
  const clock = new ManualClock();
  const backend = new MemoryDcsBackend(clock);
  const dcs = new MemoryDcs(backend, { namespace: '/service', scope: 'demo', name: 'node1', ttlSeconds: 30 });
  const recorded: { type: string; data: Record<string, unknown> }[] = [];
  let staleView: ClusterView | null = null;
  const node = {
    view: () => ({ config: { pause: false } }),
    refreshClusterView: async () => staleView ?? dcs.read(),
    recordCluster: (type: string, _cause: string, data: Record<string, unknown> = {}) => recorded.push({ type, data }),
    wake: () => undefined,
  } as unknown as HaNode;
  const warnings: string[] = [];
  const operations = new NodeOperations(node, dcs, clock, (message) => warnings.push(message));
  return {
    dcs,
    operations,
    recorded,
    warnings,
    /** The node's next reads return what the DCS holds now, even after others write. */
    freezeView: async () => (staleView = await dcs.read()),
  };
}

describe('PUT /config', () => {
  it('compares and sets like PATCH: a write based on a configuration that changed since is refused with 409', async () => {
    const { dcs, operations, freezeView } = setup();
    await dcs.setConfig({ ttl: 30, loop_wait: 10, retry_timeout: 10 });
    await freezeView();
    await dcs.setConfig({ ttl: 30, loop_wait: 10, retry_timeout: 10, pause: true }); // another operator, in between

    const answer = await operations.putConfig(body({ ttl: 20, loop_wait: 5, retry_timeout: 5 }));

    expect(answer.status).toBe(409);
    expect((await dcs.read()).config?.value).toEqual({ ttl: 30, loop_wait: 10, retry_timeout: 10, pause: true });
  });

  it('refuses what Stator does not act on, before writing anything', async () => {
    const { dcs } = setup();
    await dcs.setConfig({ ttl: 30 });

    expect(() => body({ ttl: 30, standby_cluster: { host: 'x', port: 0 } })).toThrow(HttpException);
    expect((await dcs.read()).config?.value).toEqual({ ttl: 30 });
  });
});

describe('PATCH /config', () => {
  it('stores timings that break loop_wait + 2*retry_timeout <= ttl, as the reference, and warns how they are clamped', async () => {
    const { dcs, operations } = setup();
    await dcs.setConfig({ ttl: 30, loop_wait: 2, retry_timeout: 10 });

    const answer = await operations.patchConfig(body({ ttl: 20 }));

    expect(answer).toMatchObject({
      status: 200,
      warnings: [
        'loop_wait lowered from 2 to 1 because loop_wait + 2*retry_timeout must be <= ttl (20) (the stored value is kept)',
        'retry_timeout lowered from 10 to 9 because loop_wait + 2*retry_timeout must be <= ttl (20) (the stored value is kept)',
      ],
    });
    expect((await dcs.read()).config?.value).toEqual({ ttl: 20, loop_wait: 2, retry_timeout: 10 });
  });

  it('records what changed, not the whole document, and warns about timings it clamps where they act', async () => {
    const { dcs, operations, recorded, warnings } = setup();
    const comment = 'x'.repeat(50_000);
    await dcs.setConfig({ ttl: 30, comment_kept_by_another_tool: comment });

    const answer = await operations.patchConfig(
      body({ ttl: 20, loop_wait: 2, retry_timeout: 10, postgresql: { use_unix_socket_repl: true } }),
    );

    const clamped = [
      'loop_wait lowered from 2 to 1 because loop_wait + 2*retry_timeout must be <= ttl (20) (the stored value is kept)',
      'retry_timeout lowered from 10 to 9 because loop_wait + 2*retry_timeout must be <= ttl (20) (the stored value is kept)',
    ];
    expect(answer).toMatchObject({ status: 200, warnings: clamped });
    expect(warnings).toEqual(clamped.map((warning) => `PATCH /config: ${warning}`));
    expect(recorded).toEqual([
      {
        type: 'config.changed',
        data: {
          set: { ttl: 20, loop_wait: 2, retry_timeout: 10, postgresql: { use_unix_socket_repl: true } },
          removed: [],
        },
      },
    ]);
  });

  it('refuses 1e20 as ttl with the key and the range, and writes nothing', async () => {
    const { dcs, operations, recorded } = setup();
    await dcs.setConfig({ ttl: 30 });

    const answer = await operations.patchConfig(body({ ttl: 1e20 }));

    expect(answer).toMatchObject({
      status: 400,
      body: { message: 'ttl: must be an integer from 5 to 86400, got 100000000000000000000' },
    });
    expect((await dcs.read()).config?.value).toEqual({ ttl: 30 });
    expect(recorded).toEqual([]);
  });
});
