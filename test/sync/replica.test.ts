import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WrittenChange } from '../../src/access/changed-rows.js';
import type { ExternalChanges } from '../../src/access/external-changes.js';
import { ProjectRepository } from '../../src/accounts/projects.js';
import { TeamRepository } from '../../src/accounts/teams.js';
import { systemClock } from '../../src/clock.js';
import { Store } from '../../src/store/database.js';
import type { Change } from '../../sync/protocol.js';
import { Replica } from '../../sync/replica.js';

// The edge's replica under any order of arrival (docs/sync.md: the edge's replica), a property
// test (fast-check): a cloud history of upserts and deletions for the same few rows, delivered as
// pages and revocation batches in any order, some changes twice, each written by the Replica
// class into a real SQLite file. The rows end as the newest change of each (by cloud version)
// leaves them, and the decision index is told of exactly the changes that were newer than what
// the edge held when they arrived. Some rows are there before any download with no version held
// (an edge's own row, an edge upgraded in place): the first change to arrive for them is taken.
// A failure prints fast-check's seed and path; SEED=<n> runs that seed again.

const EDGE_ROW = 2 ** 32 + 1; // a walk-in credential the edge made itself (venue/row-ids.ts)

type Row = { entity: 'attendee' | 'credential'; id: number };
const ROWS: Row[] = [
  { entity: 'attendee', id: 1 },
  { entity: 'attendee', id: 2 },
  { entity: 'credential', id: 1 },
  { entity: 'credential', id: 2 },
  { entity: 'credential', id: EDGE_ROW },
];
const key = (r: { entity: string; id: number }) => `${r.entity}:${r.id}`;
const MAX_STEPS = 25;

/** One change of the cloud's history: which row, after how big a gap in versions, and what. */
const step = fc.record({
  row: fc.nat({ max: ROWS.length - 1 }),
  gap: fc.integer({ min: 1, max: 3 }),
  op: fc.constantFrom('active', 'revoked', 'delete'),
  holder: fc.constantFrom(1, 2),
});
/** A batch as the edge may receive it: a page (any subset of the history) or revocations (revoked credentials only). */
const batch = fc.record({
  revocations: fc.boolean(),
  picks: fc.array(fc.boolean(), { minLength: MAX_STEPS, maxLength: MAX_STEPS }),
});
const scenario = fc.record({
  steps: fc.array(step, { minLength: 1, maxLength: MAX_STEPS }),
  batches: fc.array(batch, { minLength: 1, maxLength: 6 }),
  /** Which batch carries each row's newest change (again), so every row must end as the cloud has it. */
  newestIn: fc.array(fc.nat(), { minLength: ROWS.length, maxLength: ROWS.length }),
});
type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

function changes({ steps, batches, newestIn }: Scenario): { history: Change[]; delivered: Change[][] } {
  const history: Change[] = [];
  let version = 100;
  for (const s of steps) {
    version += s.gap;
    const row = ROWS[s.row]!;
    if (s.op === 'delete') history.push({ ...row, op: 'delete', version });
    else if (row.entity === 'attendee')
      history.push({
        ...row,
        op: 'upsert',
        version,
        data: {
          attendee_type_id: 1,
          first_name: `v${version}`,
          last_name: 'Row',
          status: s.op === 'active' ? 'active' : 'cancelled',
          extra: '{}',
        },
      });
    else {
      const revoked = s.op === 'revoked';
      const revokedAt = revoked ? `2026-01-01T00:00:${String(version % 60).padStart(2, '0')}.000Z` : null;
      history.push({
        ...row,
        op: 'upsert',
        version,
        data: {
          attendee_id: s.holder,
          value: `V-${row.id}`,
          kind: 'barcode',
          status: revoked ? 'revoked' : 'active',
          revoked_at: revokedAt,
        },
      });
    }
  }
  const delivered = batches.map((b) =>
    history.filter((c, i) => b.picks[i] && (!b.revocations || (c.op === 'upsert' && c.data?.status === 'revoked'))),
  );
  const newest = new Map(history.map((c) => [key(c), c]));
  for (const c of newest.values())
    delivered[newestIn[ROWS.findIndex((r) => key(r) === key(c))]! % delivered.length]!.push(c);
  for (const b of delivered) b.sort((a, z) => a.version - z.version);
  return { history, delivered };
}

describe('the replica', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-replica-'));
  const store = new Store({ dataDir: dir, synchronous: 'NORMAL' }, pino({ level: 'silent' }));
  let projectId = 0;
  let told: WrittenChange[] = [];
  let replica: Replica;

  beforeAll(() => {
    store.start();
    const team = new TeamRepository(store.db, systemClock).create('Default', 'default');
    projectId = new ProjectRepository(store.db, systemClock).create({
      teamId: team.id,
      name: 'Default',
      slug: 'default',
      timezone: 'UTC',
    }).id;
    const index = {
      written: async (_p: number, _from: number, _to: number, changes: readonly WrittenChange[]) =>
        void told.push(...changes),
    };
    replica = new Replica(store.db, systemClock, index as unknown as ExternalChanges);
  });
  afterAll(() => {
    store.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The rows as the edge holds them, in the columns the history varies. */
  const held = () => [
    ...(
      store.db.prepare('SELECT id, first_name, status FROM attendees ORDER BY id').all() as Record<string, unknown>[]
    ).map((r) => `attendee:${r.id}:${r.first_name}:${r.status}`),
    ...(
      store.db.prepare('SELECT id, attendee_id, status, revoked_at FROM credentials ORDER BY id').all() as Record<
        string,
        unknown
      >[]
    ).map((r) => `credential:${r.id}:${r.attendee_id}:${r.status}:${r.revoked_at}`),
  ];
  /** The same rows as a change leaves them. */
  const asRow = (c: Change) =>
    c.entity === 'attendee'
      ? `attendee:${c.id}:${c.data!.first_name}:${c.data!.status}`
      : `credential:${c.id}:${c.data!.attendee_id}:${c.data!.status}:${c.data!.revoked_at}`;

  /** Empty venue tables and versions; the edge's own row and an upgraded edge's row, with no version held. */
  function reset(): void {
    for (const table of ['credentials', 'attendees', 'tombstones', 'replica_versions'])
      store.db.prepare(`DELETE FROM ${table}`).run();
    const now = new Date().toISOString();
    store.db
      .prepare(
        "INSERT INTO attendees (id, project_id, attendee_type_id, first_name, last_name, status, extra, version, created_at, updated_at) VALUES (1, ?, NULL, 'old', 'Row', 'active', '{}', 1, ?, ?)",
      )
      .run(projectId, now, now);
    store.db
      .prepare(
        "INSERT INTO credentials (id, project_id, attendee_id, value, kind, status, version, created_at, updated_at) VALUES (?, ?, 1, ?, 'barcode', 'active', 2, ?, ?)",
      )
      .run(EDGE_ROW, projectId, `V-${EDGE_ROW}`, now, now);
  }

  it('ends every order of pages and revocations as the newest change of each row, and tells the index only what it wrote', async () => {
    const property = fc.asyncProperty(scenario, async (drawn) => {
      const { history, delivered } = changes(drawn);
      reset();
      // The model: per row the cloud version held and whether the row is there.
      const version = new Map<string, number>();
      const present = new Set(['attendee:1', `credential:${EDGE_ROW}`]);
      for (const b of delivered) {
        const expected: string[] = [];
        for (const c of b) {
          if ((version.get(key(c)) ?? -1) >= c.version) continue;
          version.set(key(c), c.version);
          if (c.op === 'upsert') expected.push(`upsert ${key(c)}`), present.add(key(c));
          else if (present.delete(key(c))) expected.push(`delete ${key(c)}`);
        }
        told = [];
        await replica.apply(projectId, b);
        expect(told.map((w) => `${w.op} ${key(w)}`)).toEqual(expected);
      }
      const newest = new Map(history.map((c) => [key(c), c]));
      const untouched = ['attendee:1:old:active', `credential:${EDGE_ROW}:1:active:null`].filter(
        (r) => !newest.has(r.split(':').slice(0, 2).join(':')),
      );
      const cloud = [...newest.values()].filter((c) => c.op === 'upsert').map(asRow);
      expect(held().sort()).toEqual([...cloud, ...untouched].sort());
    });
    await fc.assert(property, { numRuns: 300, ...(process.env.SEED ? { seed: Number(process.env.SEED) } : {}) });
  }, 60_000);
});
