import { execFileSync } from 'node:child_process';
import { LazyDateTimeFormat } from '../../src/common/lazy-date-time-format';
import { withPropertyReplaced } from '../../src/common/while-loading';

describe('LazyDateTimeFormat', () => {
  const options: Intl.DateTimeFormatOptions = {
    year: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
    day: '2-digit',
    month: '2-digit',
  };
  const instant = Date.UTC(2026, 10, 26, 5, 11, 33);

  it('formats as the real Intl.DateTimeFormat with the same locales and options', () => {
    const real = new Intl.DateTimeFormat(undefined, options);
    const lazy = new LazyDateTimeFormat(undefined, options);
    expect(lazy.format(instant)).toBe(real.format(instant));
    expect(lazy.formatToParts(instant)).toEqual(real.formatToParts(instant));
    expect(lazy.resolvedOptions()).toEqual(real.resolvedOptions());
    expect(new LazyDateTimeFormat('de-DE', { timeZone: 'UTC' }).format(instant)).toBe('26.11.2026');
  });
});

describe('withPropertyReplaced', () => {
  it('replaces the property only while the load runs, even when the load throws', () => {
    const real = Intl.DateTimeFormat;
    expect(
      withPropertyReplaced(Intl, 'DateTimeFormat', LazyDateTimeFormat, () => new Intl.DateTimeFormat()),
    ).toBeInstanceOf(LazyDateTimeFormat);
    expect(Intl.DateTimeFormat).toBe(real);
    expect(() =>
      withPropertyReplaced(Intl, 'DateTimeFormat', LazyDateTimeFormat, () => {
        throw new Error('module failed');
      }),
    ).toThrow('module failed');
    expect(Intl.DateTimeFormat).toBe(real);
  });

  it('puts back a lazy getter as a getter, and removes a property that was not there', () => {
    const owner: Record<string, unknown> = {};
    let reads = 0;
    Object.defineProperty(owner, 'lazy', { get: () => ++reads, configurable: true, enumerable: false });
    expect(withPropertyReplaced(owner, 'lazy', undefined, () => typeof owner.lazy)).toBe('undefined');
    expect(reads).toBe(0);
    expect(Object.getOwnPropertyDescriptor(owner, 'lazy')?.get).toBeDefined();
    withPropertyReplaced(owner, 'absent', 1, () => expect(owner.absent).toBe(1));
    expect('absent' in owner).toBe(false);
  });
});

/**
 * The guard of the one start-up trick kept (src/cli/load-dependencies-lightly.ts; docs/benchmarks.md): it stays only
 * while it saves at least 5 MiB. These fail when an upgrade of @nestjs/common or Node makes it useless or breaks it:
 * then remove the trick (or measure again and adapt it).
 */
describe('the Intl.DateTimeFormat trick still pays', () => {
  it("@nestjs/common's loggers build their formatters while they load, and under the trick build lazy ones", () => {
    let lazyBuilt = 0;
    class CountingLazyFormat extends LazyDateTimeFormat {
      constructor(...args: ConstructorParameters<typeof LazyDateTimeFormat>) {
        super(...args);
        lazyBuilt++;
      }
    }
    jest.isolateModules(() => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- a fresh load of the package, as the agent's first
      withPropertyReplaced(Intl, 'DateTimeFormat', CountingLazyFormat, () => require('@nestjs/common'));
    });
    // Fewer than the two logger modules: the package no longer builds them at load, and the trick saves nothing.
    expect(lazyBuilt).toBeGreaterThanOrEqual(2);
  });

  it("building @nestjs/common's formatter makes at least 5 MiB of Node's ICU data resident", () => {
    const script = `
      const rssFile = () => Number(/RssFile:\\s+(\\d+)/.exec(require('node:fs').readFileSync('/proc/self/status', 'utf8'))[1]);
      const before = rssFile();
      new Intl.DateTimeFormat(undefined, { year: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric', day: '2-digit', month: '2-digit' });
      process.stdout.write(String((rssFile() - before) / 1024));`;
    const addedMiB = Number(execFileSync(process.execPath, ['-e', script]).toString());
    expect(addedMiB).toBeGreaterThanOrEqual(5);
  });
});
