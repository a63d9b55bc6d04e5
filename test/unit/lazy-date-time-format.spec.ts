import { LazyDateTimeFormat, whileLoading } from '../../src/common/lazy-date-time-format';

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

  it('is Intl.DateTimeFormat only while the given load runs, even when the load throws', () => {
    const real = Intl.DateTimeFormat;
    expect(whileLoading(() => new Intl.DateTimeFormat(undefined, options))).toBeInstanceOf(LazyDateTimeFormat);
    expect(Intl.DateTimeFormat).toBe(real);
    expect(() => whileLoading(() => { throw new Error('module failed'); })).toThrow('module failed');
    expect(Intl.DateTimeFormat).toBe(real);
  });
});
