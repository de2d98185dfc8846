import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IdTable } from '../../src/access/id-table.js';

// The venue index's table by row id (src/access/id-table.ts) must answer exactly as a Map would,
// whatever the ids: dense and in order as a load brings them, gaps, ids below the first, far
// beyond it, deleted and set again.
const seed = Number(process.env.SEED ?? Date.now() % 2 ** 31);

describe('IdTable', () => {
  it('answers as a Map for any sequence of sets and deletes (property)', () => {
    console.log(`IdTable property seed: ${seed} (SEED=${seed} replays it)`);
    const id = fc.oneof(
      fc.integer({ min: 0, max: 3000 }), // near one another: the array's part
      fc.integer({ min: 0, max: 2 ** 40 }), // anywhere: the Map's part
    );
    const op = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), id, value: fc.integer() }),
      fc.record({ kind: fc.constant('run' as const), id, length: fc.integer({ min: 1, max: 700 }) }),
      fc.record({ kind: fc.constant('delete' as const), id }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const table = new IdTable<number>();
        const model = new Map<number, number>();
        for (const o of ops) {
          if (o.kind === 'set') {
            table.set(o.id, o.value);
            model.set(o.id, o.value);
          } else if (o.kind === 'run') {
            for (let i = o.id; i < o.id + o.length; i++) {
              table.set(i, -i);
              model.set(i, -i);
            }
          } else {
            expect(table.delete(o.id)).toBe(model.delete(o.id));
          }
          expect(table.size).toBe(model.size);
        }
        for (const [k, v] of model) {
          expect(table.get(k)).toBe(v);
          expect(table.has(k)).toBe(true);
        }
        for (const o of ops) if (!model.has(o.id)) expect(table.get(o.id)).toBeUndefined();
        expect([...table.entries()].sort((a, b) => a[0] - b[0])).toEqual([...model].sort((a, b) => a[0] - b[0]));
        expect([...table.values()].sort()).toEqual([...model.values()].sort());
      }),
      { seed, numRuns: 300 },
    );
  });

  it('keeps ids loaded in order in its array: a million of them, each found again', () => {
    const table = new IdTable<{ id: number }>();
    for (let id = 7; id < 1_000_007; id++) table.set(id, { id });
    expect(table.size).toBe(1_000_000);
    for (let id = 7; id < 1_000_007; id += 997) expect(table.get(id)?.id).toBe(id);
    expect(table.get(6)).toBeUndefined();
    expect(table.get(1_000_007)).toBeUndefined();
  });
});
