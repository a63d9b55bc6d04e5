import { LazyDateTimeFormat } from '../../src/common/lazy-date-time-format';
import { withPropertyReplaced } from '../../src/common/while-loading';

describe('LazyDateTimeFormat', () => {
  const options: Intl.DateTimeFormatOptions = { year: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric', day: '2-digit', month: '2-digit' };
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
    expect(withPropertyReplaced(Intl, 'DateTimeFormat', LazyDateTimeFormat, () => new Intl.DateTimeFormat())).toBeInstanceOf(LazyDateTimeFormat);
    expect(Intl.DateTimeFormat).toBe(real);
    expect(() => withPropertyReplaced(Intl, 'DateTimeFormat', LazyDateTimeFormat, () => { throw new Error('module failed'); })).toThrow('module failed');
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
