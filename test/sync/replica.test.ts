import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WrittenChange } from '../../src/access/changed-rows.js';
import type { ExternalChanges } from '../../src/access/external-changes.js';
import { ProjectRepository } from '../../src/accounts/projects.js';
import { TeamRepository } from '../../src/accounts/teams.js';
import { systemClock } from '../../src/clock.js';
import { Store } from '../../src/store/database.js';
import type { Change } from '../../src/sync/protocol.js';
import { Replica } from '../../src/sync/replica.js';

// The edge's replica under any order of arrival (docs/sync.md: the edge's replica): seeded
// random schedules of pages and revocations for the same few rows, delivered in any order, some
// twice, written by the Replica class into a real SQLite file. The rows end as the newest change
// of each (by cloud version) leaves them, and the decision index is told of exactly the changes
// that were newer than what the edge held when they arrived. Some rows are there before any
// download, with no version held (an edge's own row, an edge upgraded in place): the first
// change to arrive for them is taken. SEED=<n> runs the schedules of one printed seed again.

const SCHEDULES = 300;
const EDGE_ROW = 2 ** 32 + 1; // a walk-in credential the edge made itself (venue/row-ids.ts)

/** mulberry32: small, seedable, good enough to pick schedules. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Row = { entity: 'attendee' | 'credential'; id: number };
const ROWS: Row[] = [
  { entity: 'attendee', id: 1 },
  { entity: 'attendee', id: 2 },
  { entity: 'credential', id: 1 },
  { entity: 'credential', id: 2 },
  { entity: 'credential', id: EDGE_ROW },
];
const key = (r: { entity: string; id: number }) => `${r.entity}:${r.id}`;

/** A cloud history of the rows (versions rising, with gaps), and batches of it as an edge may receive them: pages and revocations, any order. */
function schedule(next: () => number): { history: Change[]; batches: Change[][] } {
  const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)]!;
  const history: Change[] = [];
  let version = 100;
  for (let n = 5 + Math.floor(next() * 20); n > 0; n--) {
    version += 1 + Math.floor(next() * 3);
    const row = pick(ROWS);
    if (next() < 0.2) history.push({ ...row, op: 'delete', version });
    else if (row.entity === 'attendee')
      history.push({ ...row, op: 'upsert', version, data: { attendee_type_id: 1, first_name: `v${version}`, last_name: 'Row', status: pick(['active', 'cancelled']), extra: '{}' } });
    else {
      const revoked = next() < 0.4;
      const data = {
        attendee_id: pick([1, 2]),
        value: `V-${row.id}`,
        kind: 'barcode',
        status: revoked ? 'revoked' : 'active',
        revoked_at: revoked ? `2026-01-01T00:00:${String(version % 60).padStart(2, '0')}.000Z` : null,
      };
      history.push({ ...row, op: 'upsert', version, data });
    }
  }
  const batches: Change[][] = [];
  for (let n = 1 + Math.floor(next() * 6); n > 0; n--) {
    const revocations = next() < 0.4; // GET .../sync/revocations: revoked credentials only
    batches.push(history.filter((c) => (!revocations || (c.op === 'upsert' && c.data?.status === 'revoked')) && next() < 0.5));
  }
  // Each row's newest change arrives at least once, so the rows must end as the cloud has them.
  const newest = new Map(history.map((c) => [key(c), c]));
  for (const change of newest.values()) pick(batches).push(change);
  for (const batch of batches) batch.sort((a, b) => a.version - b.version);
  for (let i = batches.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [batches[i], batches[j]] = [batches[j]!, batches[i]!];
  }
  return { history, batches };
}

describe('the replica', () => {
  const seed = Number(process.env.SEED ?? Math.floor(Math.random() * 2 ** 31));
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-replica-'));
  const store = new Store({ dataDir: dir, synchronous: 'NORMAL' }, pino({ level: 'silent' }));
  let projectId = 0;
  let told: WrittenChange[] = [];
  let replica: Replica;

  beforeAll(() => {
    store.start();
    const team = new TeamRepository(store.db, systemClock).create('Default', 'default');
    projectId = new ProjectRepository(store.db, systemClock).create({ teamId: team.id, name: 'Default', slug: 'default', timezone: 'UTC' }).id;
    const index = { written: async (_p: number, _from: number, _to: number, changes: readonly WrittenChange[]) => void told.push(...changes) };
    replica = new Replica(store.db, systemClock, index as unknown as ExternalChanges);
    console.log(`replica schedules: SEED=${seed}`);
  });
  afterAll(() => {
    store.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The rows as the edge holds them, in the columns the history varies. */
  const held = () => [
    ...(store.db.prepare('SELECT id, first_name, status FROM attendees ORDER BY id').all() as Record<string, unknown>[]).map((r) => `attendee:${r.id}:${r.first_name}:${r.status}`),
    ...(store.db.prepare('SELECT id, attendee_id, status, revoked_at FROM credentials ORDER BY id').all() as Record<string, unknown>[]).map(
      (r) => `credential:${r.id}:${r.attendee_id}:${r.status}:${r.revoked_at}`,
    ),
  ];
  /** The same rows as a change leaves them. */
  const asRow = (c: Change) =>
    c.entity === 'attendee' ? `attendee:${c.id}:${c.data!.first_name}:${c.data!.status}` : `credential:${c.id}:${c.data!.attendee_id}:${c.data!.status}:${c.data!.revoked_at}`;

  /** Empty venue tables and versions; the edge's own row and an upgraded edge's row, with no version held. */
  function reset(): void {
    for (const table of ['credentials', 'attendees', 'tombstones', 'replica_versions']) store.db.prepare(`DELETE FROM ${table}`).run();
    const now = new Date().toISOString();
    store.db
      .prepare(
        "INSERT INTO attendees (id, project_id, attendee_type_id, first_name, last_name, status, extra, version, created_at, updated_at) VALUES (1, ?, NULL, 'old', 'Row', 'active', '{}', 1, ?, ?)",
      )
      .run(projectId, now, now);
    store.db
      .prepare("INSERT INTO credentials (id, project_id, attendee_id, value, kind, status, version, created_at, updated_at) VALUES (?, ?, 1, ?, 'barcode', 'active', 2, ?, ?)")
      .run(EDGE_ROW, projectId, `V-${EDGE_ROW}`, now, now);
  }

  it('ends every schedule of pages and revocations as the newest change of each row, and tells the index only what it wrote', async () => {
    const next = random(seed);
    for (let run = 0; run < SCHEDULES; run++) {
      const { history, batches } = schedule(next);
      reset();
      const where = `SEED=${seed}, schedule ${run}: ${JSON.stringify(batches.map((b) => b.map((c) => `${key(c)}@${c.version}${c.op === 'delete' ? '-' : ''}`)))}`;
      // The model: per row the version held and whether the row is there.
      const version = new Map<string, number>();
      const present = new Set(['attendee:1', `credential:${EDGE_ROW}`]);
      for (const batch of batches) {
        const expected: string[] = [];
        for (const c of batch) {
          if ((version.get(key(c)) ?? -1) >= c.version) continue;
          version.set(key(c), c.version);
          if (c.op === 'upsert') expected.push(`upsert ${key(c)}`), present.add(key(c));
          else if (present.delete(key(c))) expected.push(`delete ${key(c)}`);
        }
        told = [];
        await replica.apply(projectId, batch);
        expect(
          told.map((w) => `${w.op} ${key(w)}`),
          where,
        ).toEqual(expected);
      }
      const newest = new Map(history.map((c) => [key(c), c]));
      const untouched = ['attendee:1:old:active', `credential:${EDGE_ROW}:1:active:null`].filter((r) => !newest.has(r.split(':').slice(0, 2).join(':')));
      const cloud = [...newest.values()].filter((c) => c.op === 'upsert').map(asRow);
      expect(held().sort(), where).toEqual([...cloud, ...untouched].sort());
    }
  }, 60_000);
});
