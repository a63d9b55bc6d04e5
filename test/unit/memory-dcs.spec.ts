import { ManualClock } from '../../src/common/clock';
import { MemoryDcs, MemoryDcsBackend } from '../../src/dcs/memory-dcs';
import { DcsContractFixture, describeDcsContract } from '../contracts/dcs.contract';

/** The longest a test may move the manual clock while it waits for a condition. */
const MAX_PASS_TIME_MS = 10 * 60_000;

/** One backend per test; time moves only when a test moves it, so expiry lands on the exact millisecond. */
function memoryFixture(): DcsContractFixture {
  const clock = new ManualClock();
  const backend = new MemoryDcsBackend(clock);
  const opened: MemoryDcs[] = [];
  const passTime = async (ms: number) => {
    clock.advance(ms);
    backend.expireLeases();
  };
  return {
    scope: 'batman',
    clock,
    shortTtlSeconds: 30,
    expiryLatenessMs: 0,
    callDeadlineMs: 0,
    node(name, ttlSeconds) {
      const dcs = new MemoryDcs(backend, { namespace: '/service', scope: 'batman', name, ttlSeconds });
      opened.push(dcs);
      return dcs;
    },
    async putRaw(key, value) {
      backend.put(key, value);
    },
    async getRaw(key) {
      const entry = backend.get(key);
      return entry && { value: entry.value, lease: entry.lease };
    },
    passTime,
    // One millisecond at a time, so a test sees the first moment the condition holds.
    async passTimeUntil(condition, description) {
      for (let elapsed = 0; ; elapsed++) {
        const value = await condition();
        if (value) return value as NonNullable<Awaited<typeof value>>;
        if (elapsed >= MAX_PASS_TIME_MS) throw new Error(`${MAX_PASS_TIME_MS} ms passed without: ${description}`);
        await passTime(1);
      }
    },
    async cutOff() {
      backend.setReachable(false);
      return async () => backend.setReachable(true);
    },
    async dispose() {
      await Promise.all(opened.splice(0).map((dcs) => dcs.close()));
    },
  };
}

describeDcsContract(MemoryDcs.name, memoryFixture);
