import { boundsFor, runModelCheck } from '../../../src/model-check/cli';
import { breadthFirst, randomWalks } from '../../../src/model-check/search';

/**
 * The bounded run of `npm run model-check` that CI affords: every interleaving of a 3-node
 * cluster's cycles, time, faults (2), an operator action and writes (3), in asynchronous and
 * synchronous mode, then seeded random walks with more faults; no invariant may be violated.
 */
describe('the HA decisions, model-checked (bounded)', () => {
  it.each([
    ['asynchronous', 'off'],
    ['synchronous', 'on'],
  ] as const)(
    '%s mode: no invariant is violated in 40,000 states and 150 random walks of 300 steps',
    (_label, mode) => {
      const search = breadthFirst({
        mode,
        bounds: boundsFor(mode, 2, 1, 3),
        maxDepth: 1000,
        maxStates: 40_000,
        progressEvery: 64,
      });
      expect(search.violation).toBeNull();
      expect(search.states).toBe(40_000);
      // Every state within 3 steps (some at 4): the fence faults (issue 34) widened each level.
      expect(search.depth).toBeGreaterThanOrEqual(3);
      // Every kind of step was taken, but resume (it needs a second operator action after pause) and the faults of
      // the failsafe and watchdog searches (--failsafe, --watchdog; failsafe.spec.ts, watchdog.spec.ts) and of the
      // searches that name a hang (hung-rule.spec.ts).
      expect(
        Object.entries(search.coverage)
          .filter(([, n]) => n === 0)
          .map(([kind]) => kind),
      ).toEqual(['pgHang', 'peerCut', 'peerHeal', 'watchdogFail', 'resume']);

      const walks = randomWalks({ mode, bounds: boundsFor(mode, 8, 4, 12, 6), walks: 150, steps: 300, seed: 19 });
      expect(walks.violation).toBeNull();
      expect(walks.coverage.resume).toBeGreaterThan(0);
    },
  );

  it.each([
    ['strict synchronous', 'strict'],
    ['quorum', 'quorum'],
  ] as const)('%s mode: no invariant is violated in 15,000 states and 50 random walks of 300 steps', (_label, mode) => {
    expect(
      breadthFirst({ mode, bounds: boundsFor(mode, 2, 1, 3), maxDepth: 1000, maxStates: 15_000, progressEvery: 64 })
        .violation,
    ).toBeNull();
    expect(
      randomWalks({ mode, bounds: boundsFor(mode, 8, 4, 12, 6), walks: 50, steps: 300, seed: 19 }).violation,
    ).toBeNull();
  });

  it.each([
    ['asynchronous', 'off'],
    ['synchronous', 'on'],
  ] as const)(
    '%s mode without any fence: decide() alone keeps every invariant while the agent runs, in 10,000 states and 50 walks',
    (_label, mode) => {
      const search = breadthFirst({
        mode,
        bounds: boundsFor(mode, 2, 1, 3, 1, true),
        maxDepth: 1000,
        maxStates: 10_000,
        progressEvery: 64,
      });
      expect(search.violation).toBeNull();
      // The one exemption (a frozen or crashed agent's primary, with no fence) is reached, and counted, not passed in silence.
      expect(search.exempt).toBeGreaterThan(0);
      expect(search.coverage.fenceKill).toBe(0);
      const walks = randomWalks({ mode, bounds: boundsFor(mode, 8, 4, 12, 6, true), walks: 50, steps: 300, seed: 19 });
      expect(walks.violation).toBeNull();
      expect(walks.exempt).toBeGreaterThan(0);
    },
  );

  it('npm run model-check reports states, states/s, depth and coverage per mode, and refuses bad options', () => {
    const out: string[] = [];
    const err: string[] = [];
    const io = { stdout: (t: string) => out.push(t), stderr: (t: string) => err.push(t) };
    expect(runModelCheck(['--states', '2000', '--walks', '5', '--walk-steps', '50'], io)).toBe(0);
    const text = out.join('');
    expect(text).toMatch(
      /\[off\] exhaustive: 2000 distinct states, \d+ transitions, depth \d+ \(every state within \d+ steps, some at \d+\), [\d.]+ s, \d+ states\/s/,
    );
    expect(text).toMatch(/\[on\] coverage: cycle \d+, read \d+, tick \d+/);
    expect(text).toContain('no invariant violated');
    expect(text).toMatch(/\[off\] exempt \(agent and fence both gone, a primary nothing alive can stop\): \d+ states/);

    expect(runModelCheck(['--states', 'many'], io)).toBe(2);
    expect(err.join('')).toContain("--states: a whole number is needed, got 'many'");
    expect(runModelCheck(['--modes', 'any'], io)).toBe(2);
    expect(err.join('')).toContain("--modes: unknown mode 'any' (async, sync, strict, quorum)");
  });
});
