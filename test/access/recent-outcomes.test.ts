import { describe, expect, it } from 'vitest';
import { RecentOutcomes, type RememberedOutcome } from '../../src/access/recent-outcomes.js';

// The in-memory window of decided request ids (docs/engine.md: idempotency): what is found
// while a scan is pending and once it settled, what a failure forgets, what the ring evicts.
describe('RecentOutcomes', () => {
  const made = (n: number, granted: boolean): RememberedOutcome => ({
    uuid: `0190${String(n).padStart(4, '0')}-abcd-7def-8123-4567890abcde`,
    granted,
    reason: granted ? null : 'blocklisted',
    accessPointId: 10 + n,
    zoneId: granted ? 3 : null,
    attendeeId: granted ? 100 + n : null,
    decidedAtMs: 1_790_000_000_000 + n,
  });
  const recent = (capacity: number) => new RecentOutcomes<RememberedOutcome & { replayed: true }>(capacity, (r) => ({ ...r, replayed: true }));

  it('answers the pending promise first, then the settled outcome rebuilt exactly, per scope', async () => {
    const memo = recent(8);
    const pending = Promise.resolve(made(1, true) as RememberedOutcome & { replayed: true });
    const { slot, sequence } = memo.remember(1, 7, 'req-1', pending);
    expect(memo.find(7, 'req-1')).toBe(pending);
    expect(memo.find(-7, 'req-1')).toBeUndefined(); // access point 7 is another scope than reader 7
    memo.settle(slot, sequence, made(1, true));
    expect(memo.find(7, 'req-1')).toEqual({ ...made(1, true), replayed: true });
    const denied = memo.remember(1, -7, 'req-1', Promise.resolve(made(2, false) as RememberedOutcome & { replayed: true }));
    memo.settle(denied.slot, denied.sequence, made(2, false));
    expect(memo.find(-7, 'req-1')).toEqual({ ...made(2, false), replayed: true });
    expect(memo.find(7, 'req-1')).toEqual({ ...made(1, true), replayed: true });
  });

  it('forgets a failed scan, so its retry is decided anew', () => {
    const memo = recent(8);
    const { slot, sequence } = memo.remember(1, 7, 'req-1', new Promise(() => {}));
    memo.forget(slot, sequence);
    expect(memo.find(7, 'req-1')).toBeUndefined();
  });

  it('evicts the oldest entry past its capacity and says which, ignoring late settles of evicted entries', () => {
    const memo = recent(3);
    const first = memo.remember(2, 1, 'a', new Promise(() => {}));
    for (const id of ['b', 'c']) expect(memo.remember(2, 1, id, new Promise(() => {})).evicted).toBeNull();
    const fourth = memo.remember(2, 1, 'd', new Promise(() => {}));
    expect(fourth.evicted).toEqual({ projectId: 2, scope: 1, requestId: 'a' });
    expect(fourth.slot).toBe(first.slot);
    expect(memo.find(1, 'a')).toBeUndefined();
    memo.settle(first.slot, first.sequence, made(9, true)); // 'a' settles after it was evicted
    expect(memo.find(1, 'd')).toBeInstanceOf(Promise);
    memo.forget(first.slot, first.sequence);
    expect(memo.find(1, 'd')).toBeInstanceOf(Promise);
    for (const id of ['b', 'c', 'd']) expect(memo.find(1, id)).toBeDefined();
  });
});
