import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Postgres, startPostgres } from '../helpers/postgres.js';
import { runCli } from '../helpers/process.js';
import { converged, drained, type Edge, type Node, scan, seedCloud, SyncWorld, until } from '../helpers/sync-world.js';

// Moving a cloud from SQLite to PostgreSQL (`gatehouse cloud migrate --to …`; docs/operations.md),
// real processes: a cloud with an enrolled edge, uploads and walk-ins behind it, is stopped,
// copied, and started on PostgreSQL; the edge goes on as if the cloud had only restarted: its
// uploads continue exactly once, its pull continues from its cursor, its walk-ins keep their ids.

describe('a SQLite cloud moved to PostgreSQL (processes)', () => {
  const world = new SyncWorld();
  let pg: Postgres;
  let cloud: Node;
  let edge: Edge;
  let entry: number;
  let url: string;

  beforeAll(async () => {
    pg = startPostgres();
    url = pg.database();
    cloud = await world.startCloud(); // on SQLite (this folder is not in the run on PostgreSQL)
    entry = (await seedCloud(cloud, 5)).entry;
    edge = await world.addEdge('north');
    // The venue pulled before the first scan: its last ticket (T-5, imported last) known at the edge.
    await until(
      'the last ticket on the edge',
      async () => {
        const id = (await edge.node.api('GET', '/attendees?search=X-5')).body.data?.[0]?.id as number | undefined;
        if (id === undefined) return [];
        return ((await edge.node.api('GET', `/attendees/${id}/credentials`)).body.data ?? []) as { value: string }[];
      },
      (credentials) => credentials.some((c) => c.value === 'T-5'),
      60_000,
    );
    for (let i = 1; i <= 5; i++) expect((await scan(edge.node, entry, `T-${i}`)).access_granted).toBe(true);
    const walkIn = await edge.node.api('POST', '/attendees', {
      first_name: 'Walk',
      last_name: 'In',
      attendee_type: 'guest',
    });
    expect(walkIn.status).toBe(201);
    await drained(edge.node);
    await converged(edge.node, cloud);
  }, 120_000);
  afterAll(async () => {
    await world.destroy();
    pg?.stop();
  }, 60_000);

  it('refuses a target that is not empty or not PostgreSQL, copying nothing', async () => {
    const other = pg.database();
    const first = await runCli(['cloud', 'migrate', '--to', 'mysql://x/y'], cloud.cliEnv);
    expect(first.code).not.toBe(0);
    expect(first.stderr).toMatch(/--to must be a PostgreSQL URL/);
    // A database already holding a cloud: refused before a row is written.
    await cloud.stop();
    const copied = await runCli(['cloud', 'migrate', '--to', other], cloud.cliEnv);
    expect(copied.code, copied.stderr).toBe(0);
    const again = await runCli(['cloud', 'migrate', '--to', other], cloud.cliEnv);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toMatch(/is not empty \(.*rows.*\): nothing was copied/);
    await world.restartCloud();
  }, 120_000);

  it('copies every row, and the enrolled edge goes on syncing with the cloud on PostgreSQL', async () => {
    const eventsBefore = (await cloud.events()).length;
    const attendeesBefore = (await cloud.api('GET', '/attendees?per_page=100')).body.meta.total as number;
    await cloud.stop();
    const run = await runCli(['cloud', 'migrate', '--to', url], cloud.cliEnv);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as { rows: number; copied: Record<string, number>; to: string };
    expect(report.copied.access_events).toBe(eventsBefore);
    expect(report.copied.sync_edges).toBe(1);
    expect(report.to).not.toContain('password');
    cloud.useDatabase(url);
    await world.restartCloud();
    // The same data, now read from PostgreSQL.
    expect((await cloud.events()).length).toBe(eventsBefore);
    expect((await cloud.api('GET', '/attendees?per_page=100')).body.meta.total).toBe(attendeesBefore);
    // The edge goes on: new scans uploaded once, a change made on the cloud pulled, a walk-in numbered in its block.
    for (let i = 1; i <= 3; i++) expect((await scan(edge.node, entry, `T-${i}`)).access_granted).toBe(true);
    const late = (
      await cloud.api('POST', '/attendees', { first_name: 'Late', last_name: 'Ticket', attendee_type: 'guest' })
    ).body.data.id as number;
    await cloud.api('POST', `/attendees/${late}/credentials`, { kind: 'qr', value: 'LATE-1' });
    await until(
      'the late ticket at the edge',
      () => scan(edge.node, entry, 'LATE-1'),
      (d) => d.access_granted,
      30_000,
    );
    const walkIn = await edge.node.api('POST', '/attendees', {
      first_name: 'Second',
      last_name: 'Walk',
      attendee_type: 'guest',
    });
    expect(walkIn.status).toBe(201);
    await drained(edge.node);
    await converged(edge.node, cloud);
    // Every event the edge decided, before the move and after, on the cloud exactly once.
    const events = await cloud.events();
    expect(new Set(events.map((e) => e.uuid)).size).toBe(events.length);
    expect(events.map((e) => e.uuid).sort()).toEqual((await edge.node.events()).map((e) => e.uuid).sort());
    expect(events.length).toBeGreaterThanOrEqual(eventsBefore + 4);
    expect((await cloud.api('GET', `/attendees/${walkIn.body.data.id}`)).status).toBe(200);
    expect((await edge.node.api('GET', '/sync/status')).body.data).toMatchObject({
      last_error: null,
      cloud_rollback: null,
    });
  }, 120_000);
});
