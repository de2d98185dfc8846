import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PtyPair, ptyConfigFile } from '../helpers/pty.js';
import { type Edge, seedCloud, SyncWorld, until } from '../helpers/sync-world.js';

// Issue 27, item 8: a reader plugged into an edge keeps deciding while the cloud link is down,
// and its scans reach the cloud afterwards like any other (source `bridge`, the edge's id, the
// raw scan time). On an edge the device's reader comes from the cloud: it is not made locally.

describe('bridge scans on an edge through an outage', () => {
  const world = new SyncWorld();
  let edge: Edge;
  let entry: number;
  let dir: string;
  let pair: PtyPair;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-bridge-sync-'));
    pair = await PtyPair.open(dir, 'edge');
    await world.startCloud();
    ({ entry } = await seedCloud(world.cloud, 20));
    expect(
      (await world.cloud.api('POST', '/readers', { identifier: 'DOOR-SERIAL', type: 'rfid', access_point_id: entry }))
        .status,
    ).toBe(201);
    edge = await world.addEdge('door', {
      GATEHOUSE_BRIDGE_REOPEN_MIN_MS: '50',
      GATEHOUSE_BRIDGE_REOPEN_MAX_MS: '200',
      GATEHOUSE_CONFIG: ptyConfigFile(dir),
    });
    await until(
      'the reader and tickets on the edge',
      async () => [
        (await edge.node.api('GET', '/readers?per_page=100')).body.data?.length,
        (await edge.node.api('GET', '/attendees?search=X-20')).body.data?.length,
      ],
      ([readers, tickets]) => readers === 1 && tickets === 1,
      60_000,
    );
  }, 120_000);
  afterAll(async () => {
    await pair.kill();
    await world.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('decides bridge scans offline, and the cloud gets them once the link is back', async () => {
    // A reader the cloud does not have cannot be made on the edge.
    const missing = await edge.node.api('POST', '/bridge/devices', {
      name: 'Nowhere',
      path: pair.device,
      reader_identifier: 'NOT-ON-CLOUD',
      framing: 'line',
    });
    expect(missing.status).toBe(422);
    expect(missing.body.errors.reader_identifier[0]).toMatch(/come from the cloud/);

    const res = await edge.node.api('POST', '/bridge/devices', {
      name: 'Door',
      path: pair.device,
      reader_identifier: 'DOOR-SERIAL',
      framing: 'line',
      feedback: { grant: '06', deny: '15' },
    });
    expect(res.status, res.text).toBe(201);
    await until(
      'connected',
      async () => (await edge.node.api('GET', `/bridge/devices/${res.body.data.id}`)).body.data.connected,
      (c) => c === true,
      10_000,
      20,
    );

    edge.proxy.set('cut');
    await until(
      'the link down',
      async () => (await edge.node.api('GET', '/sync/status')).body.data.online,
      (online) => online === false,
      20_000,
    );
    for (const value of ['T-1', 'T-2', 'NOPE']) await pair.write(`${value}\r\n`);
    expect((await pair.receivedBytes(3)).toString('hex')).toBe('060615');
    const local = (await edge.node.events()).filter((e) => e.source === 'bridge');
    expect(local).toHaveLength(3);

    edge.proxy.set('pass');
    const uploaded = await until(
      'the bridge scans on the cloud',
      async () => (await world.cloud.events()).filter((e) => e.source === 'bridge'),
      (events) => events.length === 3,
      60_000,
      200,
    );
    const byUuid = new Map(local.map((e) => [e.uuid, e]));
    for (const e of uploaded) {
      expect(e.edge_id).toBe(edge.id);
      expect(e.scanned_at).toBe(byUuid.get(e.uuid)!.scanned_at);
      expect(e.granted).toBe(byUuid.get(e.uuid)!.granted);
    }
    expect(uploaded.map((e) => e.credential_value).sort()).toEqual(['NOPE', 'T-1', 'T-2']);
  });
});
