import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { boundsFor } from '../../../src/model-check/bounds';
import { runModelCheck } from '../../../src/model-check/cli';
import { DiskLevel } from '../../../src/model-check/levels';
import { bootstrappedCluster } from '../../../src/model-check/model';
import { ACTION_KINDS } from '../../../src/model-check/model-types';
import { actionCode, actionOf, PathTable } from '../../../src/model-check/path-table';
import { breadthFirst, SearchOptions } from '../../../src/model-check/search';
import { FingerprintSet } from '../../../src/model-check/state-store';

/** `--checkpoint DIR` and `--resume DIR`: a search killed after a level goes on from it to the same counts. */
describe('checkpoints of the exhaustive search', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'stator-mc-checkpoint-spec-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const options: SearchOptions = {
    mode: 'on',
    bounds: boundsFor('on', 2, 1, 3, 1, false),
    maxDepth: 3,
    maxStates: 1_000_000,
    progressEvery: 16,
  };
  const counts = (r: ReturnType<typeof breadthFirst>) => ({
    states: r.states,
    transitions: r.transitions,
    depth: r.depth,
    exhausted: r.exhausted,
    coverage: r.coverage,
    progressChecks: r.progressChecks,
    exempt: r.exempt,
    violation: r.violation,
  });

  let whole: ReturnType<typeof breadthFirst>;
  beforeAll(() => (whole = breadthFirst(options)));

  it.each([1, 2])('a search interrupted after level %i and resumed counts what an uninterrupted one does', (k) => {
    const killed = () =>
      breadthFirst({
        ...options,
        checkpoint: dir,
        onLevel: (depth) => {
          if (depth === k) throw new Error('killed');
        },
      });
    expect(killed).toThrow('killed');
    expect(readdirSync(dir).sort()).toEqual([`current.json`, `depth-${k}`, 'levels']);
    const levels: number[] = [];
    const resumed = breadthFirst({ ...options, checkpoint: dir, onLevel: (depth) => levels.push(depth) });
    expect(levels).toEqual([1, 2, 3].filter((d) => d > k));
    expect(counts(resumed)).toEqual(counts(whole));
  });

  it('refuses the checkpoint of another search', () => {
    breadthFirst({ ...options, maxDepth: 1, checkpoint: dir });
    expect(() => breadthFirst({ ...options, checkpoint: dir })).toThrow(/of another search/);
  });

  it('the command line: --checkpoint, then --resume with the same options, reports what a run without them does', () => {
    const out = (argv: string[], resume = false) => {
      const lines: string[] = [];
      const io = { stdout: (t: string) => lines.push(t), stderr: () => undefined };
      const code = resume ? runModelCheck(['--resume', dir], io) : runModelCheck(argv, io);
      return {
        code,
        text: lines
          .join('')
          .replace(/[\d.]+ s, \d+ states\/s/g, 'T')
          .replace(/in [\d.]+ s/g, 'T'),
      };
    };
    const argv = ['--modes', 'async,sync', '--depth', '2', '--walks', '2', '--walk-steps', '20'];
    const plain = out(argv);
    const first = out([...argv, '--checkpoint', dir]);
    expect(first).toEqual(plain);
    expect(out([], true)).toEqual(plain);
    expect(out([...argv, '--checkpoint', dir]).code).toBe(2);
    expect(existsSync(join(dir, 'on', 'done.json'))).toBe(true);
  });
});

describe('the path table', () => {
  it('codes every action in a byte and gives back the path', () => {
    for (const kind of ACTION_KINDS)
      for (const node of [-1, 0, 1, 2]) {
        const code = actionCode({ kind, node, label: '' });
        expect(code).toBeLessThan(256);
        expect(actionOf(code)).toMatchObject({ kind, node });
      }
    expect(actionOf(actionCode({ kind: 'cycle', node: 1, label: '' })).label).toBe('cycle n2');
    expect(actionOf(actionCode({ kind: 'tick', node: -1, label: '' })).label).toBe('tick');
    const table = new PathTable(2);
    table.push(-1, 0);
    for (let i = 1; i < 100; i++)
      table.push(Math.floor((i - 1) / 2), actionCode({ kind: 'write', node: i % 3, label: '' }));
    const back = PathTable.fromBuffers(table.toBuffers().parents, table.toBuffers().codes);
    expect(back.size).toBe(100);
    expect(back.pathTo(99)).toEqual(table.pathTo(99));
    expect(table.pathTo(99).map((a) => a.node)).toEqual([2, 2, 2, 0, 1, 0]);
  });

  it('a fingerprint table written out and read back knows the same keys', () => {
    const set = new FingerprintSet(1 << 4);
    for (let i = 0; i < 1000; i++) set.add(`k${i}`);
    const back = FingerprintSet.fromBuffer(Buffer.from(set.toBuffer()));
    expect(back.size).toBe(1000);
    expect(back.add('k7')).toBe(false);
    expect(back.add('k1000')).toBe(true);
  });

  it('a level on disk without a directory has no name in the file system', () => {
    const level = new DiskLevel(4096);
    level.push(bootstrappedCluster('on'), 7);
    expect(level.file).toBeNull();
    expect([...level.entries()].map(({ id }) => id)).toEqual([7]);
    level.discard();
  });
});
