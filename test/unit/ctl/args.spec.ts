import { spawnSync } from 'node:child_process';
import { parseCommandLine, UsageError } from '../../../src/ctl/args';
import { scheduleTime } from '../../../src/ctl/commands/handover';
import { freePort } from '../../helpers/ports';
import { statorctl } from './fake-node';

describe('statorctl command line', () => {
  it('takes flags before and after the command', () => {
    const line = parseCommandLine([
      '--api',
      'http://h:8008',
      'switchover',
      '--candidate',
      'node2',
      '--force',
      '--format',
      'json',
    ]);
    expect(line).toMatchObject({
      command: 'switchover',
      format: 'json',
      timeoutMs: 10_000,
      values: { api: 'http://h:8008', candidate: 'node2', force: true },
    });
  });

  it('resolves aliases and keeps member names', () => {
    expect(parseCommandLine(['doctor']).command).toBe('diagnose');
    expect(parseCommandLine(['restart', 'demo', 'node2', '--role', 'replica']).args).toEqual(['demo', 'node2']);
    expect(parseCommandLine(['edit-config', '-s', 'ttl=20', '-p', 'work_mem=8MB', '-p', 'a=b']).values).toMatchObject({
      set: ['ttl=20'],
      pg: ['work_mem=8MB', 'a=b'],
    });
  });

  it('prints its version for --version alone, as for the version command', async () => {
    const result = await statorctl(['--version']);
    expect(result).toMatchObject({ code: 0, stdout: (await statorctl(['version'])).stdout });
    expect(result.stdout).toMatch(/^statorctl \d+\.\d+\.\d+\n$/);
    expect(() => parseCommandLine(['list', '--version'])).toThrow('unknown flag --version');
  });

  it.each([
    [['list', '--bogus'], 'unknown flag --bogus'],
    [['lsit'], "unknown command 'lsit'"],
    [['list', '--candidate', 'x'], 'list does not take --candidate'],
    [['list', '--format', 'xml'], "--format: must be one of table, json, yaml, got 'xml'"],
    [['list', '--timeout', 'soon'], "--timeout: seconds from 0 to 3600, got 'soon'"],
    [['flush'], 'flush: needs one of switchover, restart'],
    [['audit', 'check'], "audit: 'check' is not one of verify, export, replay"],
    [['history', 'extra'], "history: unexpected argument 'extra'"],
    [['list', '--api'], "Option '--api <value>' argument missing"],
  ])('refuses %j naming what is wrong', (argv, message) => {
    expect(() => parseCommandLine(argv)).toThrow(UsageError);
    expect(() => parseCommandLine(argv)).toThrow(message);
  });

  it('answers a usage error with exit code 2, the message and no stack trace', async () => {
    const result = await statorctl(['switchover', '--candidat', 'node2']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('statorctl: unknown flag --candidat\n(statorctl --help for usage)\n');
    expect(result.stdout).toBe('');
  });

  it('needs a way to the cluster', async () => {
    const result = await statorctl(['list']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--api URL of any member, or -c stator.yml');
  });

  it('refuses an --api that is not http(s), and a config file it cannot read', async () => {
    expect((await statorctl(['list', '--api', 'ftp://x'])).stderr).toContain(
      "--api: http or https only, got 'ftp://x'",
    );
    const missing = await statorctl(['list', '-c', '/nonexistent/stator.yml']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('-c: cannot read /nonexistent/stator.yml: ENOENT');
  });

  it('reports an unreachable node with exit code 1', async () => {
    const port = await freePort();
    const result = await statorctl(['list', '--api', `http://127.0.0.1:${port}`, '--timeout', '2']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `Error: no member of --api http://127.0.0.1:${port} answers: http://127.0.0.1:${port}/cluster: connection refused\n`,
    );
  });

  it('prints help and completion scripts without a cluster', async () => {
    expect((await statorctl(['--help'])).stdout).toContain(
      'switchover [--leader NAME] [--candidate NAME | --site SITE] [--scheduled TIME|now] [--force]',
    );
    const bash = await statorctl(['completion', 'bash']);
    expect(bash.code).toBe(0);
    expect(bash.stdout).toContain('complete -F _statorctl statorctl');
    expect(bash.stdout).toContain('switchover) words="');
    expect((await statorctl(['completion', 'zsh'])).stdout).toContain('bashcompinit');
  });
});

describe('bash completion', () => {
  it("completes commands, a command's flags and --format values in bash", async () => {
    const script = (await statorctl(['completion', 'bash'])).stdout;
    const complete = (words: string[]) =>
      spawnSync(
        'bash',
        [
          '--noprofile',
          '--norc',
          '-c',
          `${script}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _statorctl; echo "\${COMPREPLY[*]}"`,
        ],
        { encoding: 'utf8' },
      ).stdout.trim();
    expect(complete(['statorctl', 'sw'])).toBe('switchover');
    expect(complete(['statorctl', '--api', 'http://x', 'switchover', '--ca'])).toBe('--candidate --cacert');
    expect(complete(['statorctl', 'list', '--format', ''])).toBe('table json yaml');
    expect(complete(['statorctl', 'audit', ''])).toMatch(/^verify export replay --from --to --at /);
  });
});

describe('schedule times', () => {
  it('keeps a time with an offset as given', () => {
    expect(scheduleTime('2030-01-31T12:00+01:00', true)).toBe('2030-01-31T12:00+01:00');
    expect(scheduleTime('2030-01-31 12:00:30Z', true)).toBe('2030-01-31T12:00:30Z');
  });

  it('reads a time without offset as local time', () => {
    const value = scheduleTime('2030-01-31 12:00', true);
    expect(value).toMatch(/^2030-01-31T12:00:00\.000[+-]\d\d:\d\d$/);
    expect(Date.parse(value)).toBe(new Date(2030, 0, 31, 12, 0).getTime());
  });

  it('refuses what is not a time or not in the calendar, naming the flag', () => {
    expect(() => scheduleTime('tomorrow', true)).toThrow("--scheduled: 'tomorrow': not YYYY-MM-DDTHH:MM");
    expect(() => scheduleTime('2030-02-30T12:00', true)).toThrow(
      "--scheduled: '2030-02-30T12:00': day 30 does not exist in 2030-02",
    );
  });
});
