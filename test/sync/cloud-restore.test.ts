import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  converged,
  type Edge,
  mqttReader,
  type Node,
  scan,
  seedCloud,
  SyncWorld,
  until,
} from '../helpers/sync-world.js';

// A cloud restored from a backup (docs/sync.md: a cloud restored from a backup): started from
// an older copy of its data, it lacks events the edge had uploaded, and its change versions are
// behind the edge's cursors. The edge finds itself ahead, says so, uploads again what the cloud
// lacks, and pulls everything again (dropping rows the cloud no longer has); a revocation and
// an edit made on the restored cloud reach it. A cloud that only restarted changes nothing.
// Real processes; the backup is a copy of the cloud's data directory taken while it was stopped
// (and, on PostgreSQL, its database's pg_dump, restored with pg_restore).

const metric = (text: string, name: string) =>
  Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);

describe('a cloud restored from a backup (processes)', () => {
  const world = new SyncWorld();
  let edge: Edge;
  let venue: { zone: number; entry: number; exit: number };
  const backup = mkdtempSync(join(tmpdir(), 'gatehouse-backup-'));
  const attendee = async (node: Node, externalId: string) =>
    (await node.api('GET', `/attendees?search=${externalId}`)).body.data[0] as Record<string, any> | undefined;

  beforeAll(async () => {
    await world.startCloud();
    venue = await seedCloud(world.cloud, 100);
    expect(
      (await world.cloud.api('POST', '/readers', { identifier: 'GATE-R', type: 'qr', access_point_id: venue.entry }))
        .status,
    ).toBe(201);
    edge = await world.addEdge('east', { GATEHOUSE_SYNC_UPLOAD_BATCH: '50' });
    await until(
      'the tickets and the reader on the edge',
      async () => [
        (await attendee(edge.node, 'X-100'))?.id,
        (await edge.node.api('GET', '/readers')).body.data?.length,
      ],
      ([a, r]) => a !== undefined && r === 1,
      60_000,
    );
    // The backup: the cloud's data directory, copied while it is stopped.
    await world.cloud.stop();
    world.cloud.backupStore(backup);
    await world.restartCloud();
  }, 120_000);
  afterAll(async () => {
    await world.destroy();
    rmSync(backup, { recursive: true, force: true });
  });

  it('goes on as before when the cloud only restarted', async () => {
    for (let i = 1; i <= 60; i++) await scan(edge.node, i % 4 === 0 ? venue.exit : venue.entry, `T-${i}`);
    await converged(edge.node, world.cloud);
    await world.cloud.stop();
    await world.restartCloud();
    for (let i = 61; i <= 80; i++) await scan(edge.node, venue.entry, `T-${i}`);
    await converged(edge.node, world.cloud);
    expect((await edge.node.api('GET', '/sync/status')).body.data.cloud_rollback).toBeNull();
  }, 120_000);

  it('finds the cloud behind it, uploads again what it lost, pulls everything again, and hears the restored cloud', async () => {
    // After the backup: more scans, a rename and a new ticket on the cloud, all reaching the edge.
    const reader = await mqttReader(edge.node, 'GATE-R');
    for (let i = 1; i <= 40; i++) await reader.scan(`T-${i}`);
    await converged(edge.node, world.cloud);
    const x5 = (await attendee(world.cloud, 'X-5'))!;
    expect((await world.cloud.api('PUT', `/attendees/${x5.id}`, { first_name: 'Renamed' })).status).toBe(200);
    const late = await world.cloud.api('POST', '/attendees', {
      first_name: 'Late',
      last_name: 'Ticket',
      attendee_type: 'guest',
      external_id: 'X-LATE',
    });
    expect(late.status).toBe(201);
    expect(
      (await world.cloud.api('POST', `/attendees/${late.body.data.id}/credentials`, { kind: 'qr', value: 'T-LATE' }))
        .status,
    ).toBe(201);
    await until(
      'the rename and the new ticket on the edge',
      async () => [
        (await attendee(edge.node, 'X-5'))?.first_name,
        (await scan(edge.node, venue.entry, 'T-LATE')).access_granted,
      ],
      ([name, granted]) => name === 'Renamed' && granted === true,
      30_000,
      300,
    );
    const edgeEvents = (await edge.node.events()).length;

    // The cloud is restored from the backup: none of the edge's events, nor the rename, nor the ticket.
    await world.cloud.stop();
    world.cloud.restoreStore(backup);
    await world.restartCloud();

    const status = (
      await until(
        'the edge to find the cloud behind it',
        () => edge.node.api('GET', '/sync/status'),
        (r) => r.body.data.cloud_rollback !== null,
        30_000,
        200,
      )
    ).body.data;
    expect(status.cloud_rollback.pulled_from_start).toBe(true);
    expect(status.cloud_rollback.resent_items).toBeGreaterThanOrEqual(edgeEvents);
    expect(
      metric((await edge.node.api('GET', '/metrics')).text, 'gatehouse_sync_cloud_rollback_timestamp_seconds'),
    ).toBeGreaterThan(0);
    // Every event again on the cloud, each once.
    await converged(edge.node, world.cloud);
    // What the restored cloud no longer has is gone from the edge; what it has is as it has it.
    await until(
      'the edge to hold what the restored cloud holds',
      async () => [
        (await attendee(edge.node, 'X-5'))?.first_name,
        (await scan(edge.node, venue.entry, 'T-LATE')).reason,
      ],
      ([name, reason]) => name === 'Guest5' && reason === 'invalid_credential',
      30_000,
      300,
    );
    // A revocation and an edit made on the restored cloud reach the edge (REST and MQTT scans).
    const x7 = (await attendee(world.cloud, 'X-7'))!;
    const c7 = (await world.cloud.api('GET', `/attendees/${x7.id}/credentials`)).body.data[0];
    expect((await world.cloud.api('DELETE', `/credentials/${c7.id}`)).status).toBeLessThan(300);
    expect(
      (await world.cloud.api('PUT', `/attendees/${(await attendee(world.cloud, 'X-8'))!.id}`, { first_name: 'Edited' }))
        .status,
    ).toBe(200);
    await until(
      'the revocation and the edit on the edge',
      async () => [
        (await scan(edge.node, venue.entry, 'T-7')).access_granted,
        (await attendee(edge.node, 'X-8'))?.first_name,
      ],
      ([granted, name]) => granted === false && name === 'Edited',
      30_000,
      300,
    );
    expect((await reader.scan('T-7')).access_granted).toBe(false);
    await reader.close();
  }, 180_000);
});
