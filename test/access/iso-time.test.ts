import { describe, expect, it } from 'vitest';
import { iso } from '../../src/clock.js';

// iso() keeps the date and time to the second from its last call and writes only the
// milliseconds; it must write exactly what Date#toISOString writes, whatever order it is called in.
describe('iso', () => {
  it('writes what toISOString writes, across seconds, days, years and back in time', () => {
    const at = [
      0,
      1,
      9,
      10,
      99,
      100,
      999,
      1000,
      1001,
      Date.UTC(2026, 10, 23, 23, 59, 59, 999),
      Date.UTC(2026, 10, 24),
      Date.UTC(2024, 1, 29, 12, 0, 0, 5),
      Date.UTC(9999, 11, 31, 23, 59, 59, 999),
    ];
    let x = 0x2545f491;
    for (let i = 0; i < 5000; i++) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      const base = Date.UTC(2026, 10, 23) + (x >>> 0);
      at.push(base, base + 1, base - 1, base + 999);
    }
    for (const ms of [...at, ...at.slice().reverse()]) expect(iso(ms), String(ms)).toBe(new Date(ms).toISOString());
  });

  it('falls back to toISOString for what the fast path does not cover', () => {
    for (const ms of [-1, -1000.5, 1.5, 1_000_000.999, Date.UTC(10000, 0, 1), 8.64e15])
      expect(iso(ms)).toBe(new Date(ms).toISOString());
    expect(() => iso(Number.NaN)).toThrow(RangeError);
  });
});
