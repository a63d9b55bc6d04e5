import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The fence's Python held to the TypeScript's standard, in `npm test`: `mypy --strict`, its unittest suite
 * (test/fence: protocol against fence-protocol.json, deadlines, when it stops PostgreSQL, the watchdog device)
 * and flake8 (settings in .flake8). Each runs with Debian's tools and the interpreter the fence runs under.
 */
const ROOT = join(__dirname, '..', '..');
const FENCE_SOURCES = join('src', 'postgresql', 'fence');
const FENCE_TESTS = join('test', 'fence');
// The fence's own choice when `fence.python` is not set (src/postgresql/process/fence-program.ts).
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

function pythonFiles(): string[] {
  return [FENCE_SOURCES, FENCE_TESTS].flatMap((dir) =>
    readdirSync(join(ROOT, dir))
      .filter((name) => name.endsWith('.py'))
      .map((name) => join(dir, name)),
  );
}

/** Runs a tool from the checkout's root; fails with everything it printed unless it exits 0. */
function check(program: string, args: string[]): string {
  const run = spawnSync(program, args, {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
  });
  const output = `${run.stdout ?? ''}${run.stderr ?? ''}`;
  if (run.error)
    throw new Error(`${program} could not run: ${run.error.message} (Debian: apt-get install mypy flake8)`);
  if (run.status !== 0) throw new Error(`${program} ${args.join(' ')} exited ${run.status}:\n${output}`);
  return output;
}

describe("the fence's Python", () => {
  it('passes mypy --strict', () => {
    // No cache: a cold run takes about 3 s, and nothing is written into the checkout.
    expect(check('mypy', ['--strict', '--cache-dir', '/dev/null', ...pythonFiles()])).toMatch(
      /^Success: no issues found/m,
    );
  }, 120_000);

  it('passes its unit tests', () => {
    const output = check(PYTHON, [
      '-W',
      'error::ResourceWarning',
      '-m',
      'unittest',
      'discover',
      '-s',
      FENCE_TESTS,
      '-t',
      FENCE_TESTS,
    ]);
    expect(output).toMatch(/^Ran [1-9]\d* tests? in /m);
    expect(output).toMatch(/^OK$/m);
  }, 120_000);

  it('passes flake8', () => {
    expect(check('flake8', [FENCE_SOURCES, FENCE_TESTS])).toBe('');
  }, 120_000);
});
