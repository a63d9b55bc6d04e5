import { effectiveDynamicConfig, validateDynamicConfigKeys } from '../../src/config/dynamic-config';

describe("load_balancer_drain_ms (dynamic configuration, Stator's own key)", () => {
  const drainOf = (value: unknown) => effectiveDynamicConfig({ load_balancer_drain_ms: value as number }, {});

  it('defaults to 750 ms, longer than the shipped HAProxy check interval of 500 ms', () => {
    expect(effectiveDynamicConfig(null, {}).config.load_balancer_drain_ms).toBe(750);
  });

  it.each([
    [0, 0],
    [400, 400],
    ['1200', 1200],
    [120_000, 60_000],
    [-5, 0],
  ])('%p is used as %p', (value, expected) => {
    expect(drainOf(value).config.load_balancer_drain_ms).toBe(expected);
  });

  it('explains a value it does not use as written', () => {
    expect(drainOf('soon').adjustments).toEqual([
      'load_balancer_drain_ms "soon" in the DCS configuration is not an integer; using the default 750',
    ]);
  });

  it('refuses a write outside 0..60000 through /config', () => {
    expect(validateDynamicConfigKeys({ load_balancer_drain_ms: 500 })).toEqual([]);
    expect(validateDynamicConfigKeys({ load_balancer_drain_ms: 90_000 })).toHaveLength(1);
    expect(validateDynamicConfigKeys({ load_balancer_drain_ms: -1 })).toHaveLength(1);
  });
});
