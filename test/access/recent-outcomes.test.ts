import { describe, expect, it } from 'vitest';
import { RecentOutcomes, type RememberedOutcome } from '../../src/access/recent-outcomes.js';

// The in-memory window of decided request ids (docs/engine.md: idempotency): what is found
// while a scan is pending and once it settled, what a failure forgets, what the ring evicts.
describe('RecentOutcomes', () => {
  const made = (n: number, granted: boolean): RememberedOutcome => ({
    uuid: `0190${String(n).padStart(4, '0')}-abcd-7def-8123-4567890abcde`,
    granted,
    reason: granted ? null : n % 2 ? 'not_authorized' : 'blocklisted',
    reasonDetail: granted || n % 2 === 0 ? null : 'already_inside',
    accessPointId: 10 + n,
    zoneId: granted ? 3 : null,
    attendeeId: granted ? 100 + n : null,
    decidedAtMs: 1_790_000_000_000 + n,
  });
  const recent = (capacity: number) =>
    new RecentOutcomes<RememberedOutcome & { replayed: true }>(capacity, (r) => ({ ...r, replayed: true }));

  it('answers the pending promise first, then the settled outcome rebuilt exactly, per scope', async () => {
    const memo = recent(8);
    const pending = Promise.resolve(made(1, true) as RememberedOutcome & { replayed: true });
    const { slot, sequence } = memo.remember(1, 7, 'req-1', pending);
    expect(memo.find(7, 'req-1')).toBe(pending);
    expect(memo.find(-7, 'req-1')).toBeUndefined(); // access point 7 is another scope than reader 7
    memo.settle(slot, sequence, made(1, true));
    expect(memo.find(7, 'req-1')).toEqual({ ...made(1, true), replayed: true });
    const denied = memo.remember(
      1,
      -7,
      'req-1',
      Promise.resolve(made(2, false) as RememberedOutcome & { replayed: true }),
    );
    memo.settle(denied.slot, denied.sequence, made(2, false));
    expect(memo.find(-7, 'req-1')).toEqual({ ...made(2, false), replayed: true });
    expect(memo.find(7, 'req-1')).toEqual({ ...made(1, true), replayed: true });
    const detailed = memo.remember(
      1,
      8,
      'req-3',
      Promise.resolve(made(3, false) as RememberedOutcome & { replayed: true }),
    );
    memo.settle(detailed.slot, detailed.sequence, made(3, false));
    expect(memo.find(8, 'req-3')).toEqual({
      ...made(3, false),
      reason: 'not_authorized',
      reasonDetail: 'already_inside',
      replayed: true,
    });
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

  it('finds exactly what a plain Map model finds, through 20,000 random remembers, settles and forgets', () => {
    const capacity = 37;
    const memo = recent(capacity);
    const model = new Map<string, { slot: number; sequence: number; settled: RememberedOutcome | null }>();
    const bySlot = new Map<number, string>();
    let x = 0x9e3779b9;
    const rand = (n: number) => {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      return (x >>> 0) % n;
    };
    const live: { key: string; slot: number; sequence: number }[] = [];
    for (let step = 0; step < 20_000; step++) {
      const op = rand(10);
      if (op < 5 || live.length === 0) {
        const scope = rand(5) - 2 || 1;
        const requestId = `id-${rand(60)}`;
        const key = `${scope}|${requestId}`;
        if (model.has(key)) continue; // the service only remembers what it did not find
        const { slot, sequence, evicted } = memo.remember(1, scope, requestId, new Promise(() => {}));
        const old = bySlot.get(slot);
        if (old !== undefined) {
          const [oldScope, oldId] = old.split('|') as [string, string];
          expect(evicted).toEqual({ projectId: 1, scope: Number(oldScope), requestId: oldId });
          model.delete(old);
        } else expect(evicted).toBeNull();
        bySlot.set(slot, key);
        model.set(key, { slot, sequence, settled: null });
        live.push({ key, slot, sequence });
      } else {
        const pick = live.splice(rand(live.length), 1)[0]!;
        const entry = model.get(pick.key);
        if (op < 8) {
          const outcome = made(rand(1000), rand(2) === 0);
          memo.settle(pick.slot, pick.sequence, outcome);
          if (entry && entry.sequence === pick.sequence) entry.settled = outcome;
        } else {
          memo.forget(pick.slot, pick.sequence);
          if (entry && entry.sequence === pick.sequence) {
            model.delete(pick.key);
            bySlot.delete(pick.slot);
          }
        }
      }
      if (step % 97 === 0) {
        for (let scope = -2; scope <= 2; scope++) {
          for (let id = 0; id < 60; id++) {
            const key = `${scope}|id-${id}`;
            const found = memo.find(scope, `id-${id}`);
            const expected = model.get(key);
            if (!expected) expect(found, key).toBeUndefined();
            else if (expected.settled) expect(found, key).toEqual({ ...expected.settled, replayed: true });
            else expect(found, key).toBeInstanceOf(Promise);
          }
        }
      }
    }
  });
});
