import { describe, expect, it } from 'vitest';
import { ClockOffset } from '../src/clock-offset.js';

// The offset in force at any instant (src/clock-offset.ts): kept against the monotonic clock,
// so a step of the wall clock changes it at once, with no exchange with the cloud.

describe('clock offset', () => {
  const clocks = () => {
    const c = { wall: 1_000_000, mono: 50 };
    return {
      c,
      offset: new ClockOffset(
        2000,
        () => c.wall,
        () => c.mono,
      ),
    };
  };

  it('is unknown and unsynchronised until measured', () => {
    const { offset } = clocks();
    expect(offset.known).toBe(false);
    expect(offset.now()).toEqual({ offsetMs: null, synchronised: false });
  });

  it('follows a step of the wall clock at once, and falls back when the clock is corrected', () => {
    const { c, offset } = clocks();
    offset.measured(c.wall + 55, c.mono); // the cloud 55 ms ahead
    expect(offset.now()).toEqual({ offsetMs: 55, synchronised: true });
    c.wall += 1000;
    c.mono += 1000; // time passes
    expect(offset.now()).toEqual({ offsetMs: 55, synchronised: true });
    c.wall -= 3 * 3600_000; // NTP steps it back 3 hours, offline: no exchange
    expect(offset.now()).toEqual({ offsetMs: 3 * 3600_000 + 55, synchronised: false });
    c.wall += 3 * 3600_000; // and corrects it
    expect(offset.now()).toEqual({ offsetMs: 55, synchronised: true });
  });

  it('carries the last known offset over a restart, unsynchronised until measured in this run', () => {
    const { c, offset } = clocks();
    offset.carryOver(120);
    expect(offset.now()).toEqual({ offsetMs: 120, synchronised: false });
    offset.measured(c.wall + 80, c.mono);
    expect(offset.now()).toEqual({ offsetMs: 80, synchronised: true });
    offset.carryOver(999); // a measurement in this run wins
    expect(offset.now().offsetMs).toBe(80);
  });

  it('is unsynchronised beyond the tolerance, either way', () => {
    const { c, offset } = clocks();
    offset.measured(c.wall - 2001, c.mono);
    expect(offset.now()).toEqual({ offsetMs: -2001, synchronised: false });
    offset.measured(c.wall + 2000, c.mono);
    expect(offset.now()).toEqual({ offsetMs: 2000, synchronised: true });
  });
});
