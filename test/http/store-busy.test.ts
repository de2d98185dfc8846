import BetterSqlite3 from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProcessAppliance, type ProcessAppliance } from '../helpers/process-appliance.js';

// Issue 22 item 6: a write that cannot get SQLite's write lock within store.busyTimeoutMs is
// answered 503 store_busy with Retry-After in the route's envelope, counted in /metrics, and
// leaves nothing written. Another connection (this test, as a CLI command would) holds the
// lock with BEGIN IMMEDIATE for longer than the appliance's busy timeout, lowered to 250 ms.

const A = '/api/v1/projects/default/default';

describe("a write while another connection holds the store's write lock", () => {
  let gh: ProcessAppliance;
  let token: string;
  let lock: BetterSqlite3.Database;
  let guest: number;
  let zone: number;
  let gate: number;
  let syncSecret: string;
  let otp: string;
  const get = (path: string, as = token) => gh.request('GET', path, { token: as });
  const send = (method: string, path: string, body: unknown) => gh.request(method, path, { token, body });
  const attendeeCount = async () => (await get(`${A}/attendees?per_page=1`)).body.meta.total as number;
  const busyCounts = async () => {
    const text = (await get('/metrics')).text;
    return Object.fromEntries(
      [...text.matchAll(/^gatehouse_store_busy_total\{route="([^"]+)"\} (\d+)$/gm)].map((m) => [m[1]!, Number(m[2])]),
    );
  };

  beforeAll(async () => {
    gh = await startProcessAppliance({ GATEHOUSE_STORE_BUSY_TIMEOUT_MS: '250' });
    token = await gh.token();
    zone = (await send('POST', `${A}/access-zones`, { name: 'Hall', requires_ticket: true })).body.data.id;
    gate = (await send('POST', `${A}/access-points`, { name: 'Hall door', access_zone_id: zone, direction: 'both' }))
      .body.data.id;
    guest = (await send('POST', `${A}/attendee-types`, { name: 'Guest' })).body.data.id;
    expect(
      (
        await send('POST', `${A}/attendees/import`, [
          { first_name: 'Ada', last_name: 'Lovelace', credential_value: 'BUSY-1', attendee_type: 'guest' },
        ])
      ).status,
    ).toBe(200);
    expect((await send('POST', `${A}/readers`, { identifier: 'R-BUSY', access_point_id: gate })).status).toBe(201);
    const source = await send('POST', `${A}/integrations/webhooks`, { kind: 'attendee-sync', name: 'CRM' });
    syncSecret = source.body.secret;
    expect((await gh.request('POST', `${A}/readers/login`, { body: { reader_identifier: 'R-BUSY' } })).status).toBe(
      202,
    );
    otp = (await get(`${A}/readers/logins`)).body.data[0].otp;
    lock = new BetterSqlite3(join(gh.dataDir, 'gatehouse.db'));
    lock.pragma('busy_timeout = 20000');
  }, 90_000);
  afterAll(async () => {
    if (lock?.inTransaction) lock.exec('ROLLBACK');
    lock?.close();
    await gh?.destroy();
  });

  it('answers 503 store_busy with Retry-After in the envelope, counts it, writes nothing, and takes the retry once the lock is free', async () => {
    const before = await attendeeCount();
    const unused = await gh.token(); // its first use writes last_used_at: under the lock that is skipped, not a failure
    lock.exec('BEGIN IMMEDIATE');
    try {
      const create = await send('POST', `${A}/attendees`, { first_name: 'Blocked', last_name: 'Writer' });
      expect(create.status).toBe(503);
      expect(create.headers.get('retry-after')).toBe('1');
      expect(create.body).toEqual({
        message: expect.stringMatching(
          /^The store is busy with other writes and this change could not be made within 0\.25 s; nothing of it was written/,
        ),
        retry_after: 1,
      });

      const zones = await send('PUT', `${A}/attendee-types/${guest}`, { zone_ids: [zone] });
      expect(zones.status).toBe(503);
      expect(zones.headers.get('retry-after')).toBe('1');

      const syncBody = {
        team_slug: 'default',
        project_slug: 'default',
        sync_mode: 'upsert',
        attendees: [
          { external_id: 'CRM-1', first_name: 'Grace' },
          { external_id: 'CRM-2', first_name: 'Edith' },
        ],
      };
      const sync = await gh.signedPost('/webhook/v1/attendee-sync', syncBody, syncSecret);
      expect(sync.status).toBe(503);
      expect(sync.headers.get('retry-after')).toBe('1');
      expect(sync.body).toEqual({
        error: 'store_busy',
        message: expect.stringMatching(/^The store is busy/),
        retry_after: 1,
      });

      const verify = await gh.request('POST', '/api/v1/reader-otp/verify', {
        body: { otp, reader_identifier: 'R-BUSY' },
      });
      expect(verify.status).toBe(503);
      expect(verify.body.retry_after).toBe(1);

      // Reads and scans go on: the doors are decided from memory and the journal.
      expect((await get(`${A}/attendees?per_page=1`, unused)).status).toBe(200);
      const scan = await send('POST', `${A}/access-points/${gate}/scan`, { credential_value: 'BUSY-1' });
      expect(scan.status).toBe(200);
      expect(scan.body).toMatchObject({ access_granted: false, reason: 'not_authorized' }); // the zone change never happened

      const P = '/api/v1/projects/{teamSlug}/{projectSlug}';
      expect(await busyCounts()).toEqual({
        [`${P}/attendees`]: 1,
        [`${P}/attendee-types/{attendeeTypeId}`]: 1,
        '/webhook/v1/attendee-sync': 1,
        '/api/v1/reader-otp/verify': 1,
      });
    } finally {
      lock.exec('ROLLBACK');
    }

    // Nothing of any refused write is in the store.
    expect(await attendeeCount()).toBe(before);
    expect((await get(`${A}/attendee-types/${guest}`)).body.data.zone_ids).toEqual([]);
    expect((await get(`${A}/attendees?search=CRM-`)).body.data).toEqual([]);
    expect((await get(`${A}/readers/logins`)).body.data).toMatchObject([{ reader_identifier: 'R-BUSY', attempts: 0 }]);

    // The same requests again, now that the lock is free: each applied once.
    expect((await send('POST', `${A}/attendees`, { first_name: 'Blocked', last_name: 'Writer' })).status).toBe(201);
    expect((await send('PUT', `${A}/attendee-types/${guest}`, { zone_ids: [zone] })).status).toBe(200);
    const synced = await gh.signedPost(
      '/webhook/v1/attendee-sync',
      {
        team_slug: 'default',
        project_slug: 'default',
        sync_mode: 'upsert',
        attendees: [
          { external_id: 'CRM-1', first_name: 'Grace' },
          { external_id: 'CRM-2', first_name: 'Edith' },
        ],
      },
      syncSecret,
    );
    expect(synced.status).toBe(200);
    expect(synced.body.results).toMatchObject({ created: 2, updated: 0 });
    expect(
      (await gh.request('POST', '/api/v1/reader-otp/verify', { body: { otp, reader_identifier: 'R-BUSY' } })).status,
    ).toBe(200);
    expect(await attendeeCount()).toBe(before + 3);
    await expect
      .poll(
        async () =>
          (await send('POST', `${A}/access-points/${gate}/scan`, { credential_value: 'BUSY-1' })).body.access_granted,
        { timeout: 10_000 },
      )
      .toBe(true);
    expect(gh.proc.output.filter((line) => line.includes('unhandled error'))).toEqual([]);
  });
});
