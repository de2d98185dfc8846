import { sign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { createSource } from '../helpers/signed-webhooks.js';
import { webhookPoster, WEBHOOK_TEST_ENV, type WebhookPost } from '../helpers/webhooks.js';

// POST /webhook/v1/attendee-sync (docs/webhooks-incoming.md).

const A = '/api/v1/projects/default/default';
const envelope = { team_slug: 'default', project_slug: 'default' };

describe('attendee-sync', () => {
  let gh: TestAppliance;
  let admin: string;
  let api: ReturnType<typeof client>;
  let post: WebhookPost;
  const sync = (sync_mode: string, attendees: unknown[]) => post({ ...envelope, sync_mode, attendees });
  const byExternalId = async (externalId: string) => {
    const found = (await api.get(`${A}/attendees?search=${encodeURIComponent(externalId)}`)).body.data as {
      external_id: string;
    }[];
    return found.find((a) => a.external_id === externalId) as Record<string, unknown> | undefined;
  };
  const count = async () => (await api.get(`${A}/attendees?per_page=1`)).body.meta.total as number;

  beforeAll(async () => {
    gh = await startAppliance(WEBHOOK_TEST_ENV);
    admin = await gh.token();
    api = client(gh, admin);
    post = webhookPoster(gh, '/webhook/v1/attendee-sync');
    for (const slug of ['guest', 'vip'])
      expect((await api.post(`${A}/attendee-types`, { name: slug, slug })).status).toBe(201);
  });
  afterAll(() => gh.destroy());

  it('upserts: creates new external ids, updates known ones, and reports each bad record by index while applying the good ones', async () => {
    expect(
      (
        await api.post(`${A}/attendees`, {
          first_name: 'Ada',
          last_name: 'Byron',
          email: 'ada@example.test',
          external_id: 'U-1',
        })
      ).status,
    ).toBe(201);
    const res = await sync('upsert', [
      { external_id: 'U-1', first_name: 'Ada', last_name: 'Lovelace', email: 'ADA@example.test', attendee_type: 'vip' },
      {
        external_id: 'U-2',
        first_name: 'Grace',
        last_name: 'Hopper',
        email: 'grace@example.test',
        attendee_type: 'guest',
      },
      { external_id: 'U-3', first_name: 'Bad', email: 'not-an-email' },
      { first_name: 'Nobody' },
      { external_id: 'U-4', first_name: 'Stow', attendee_type: 'stowaway' },
      { external_id: 'U-5', first_name: 'Twin A' },
      { external_id: 'U-5', first_name: 'Twin B' },
      { external_id: 'U-6', last_name: 'Nameless' },
      'not a record',
    ]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      results: {
        created: 1,
        updated: 1,
        skipped: 0,
        errors: [
          { index: 2, external_id: 'U-3', messages: ['The email field is invalid: Invalid email address.'] },
          { index: 3, external_id: null, messages: ['The external_id field is required.'] },
          { index: 4, external_id: 'U-4', messages: ['The attendee type "stowaway" does not exist in this project.'] },
          { index: 5, external_id: 'U-5', messages: ['The external_id "U-5" occurs more than once in this request.'] },
          { index: 6, external_id: 'U-5', messages: ['The external_id "U-5" occurs more than once in this request.'] },
          { index: 7, external_id: 'U-6', messages: ['The first_name field is required to create an attendee.'] },
          {
            index: 8,
            external_id: null,
            messages: [
              'The record must be an object with external_id, first_name, last_name, email and attendee_type.',
            ],
          },
        ],
      },
    });
    expect(await byExternalId('U-1')).toMatchObject({
      first_name: 'Ada',
      last_name: 'Lovelace',
      email: 'ada@example.test',
      attendee_type: 'vip',
      status: 'active',
    });
    expect(await byExternalId('U-2')).toMatchObject({
      first_name: 'Grace',
      last_name: 'Hopper',
      attendee_type: 'guest',
    });
    for (const id of ['U-3', 'U-4', 'U-5', 'U-6']) expect(await byExternalId(id), id).toBeUndefined();
    expect(await count()).toBe(2);
  });

  it('creates only new external ids in create mode: known ones are skipped, untouched', async () => {
    const res = await sync('create', [
      { external_id: 'U-1', first_name: 'Someone else' },
      { external_id: 'C-1', first_name: 'Katherine', last_name: 'Johnson' },
      { external_id: 'C-2', first_name: 'Dorothy', email: 'dorothy@' },
      { external_id: 'C-3' },
    ]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      results: {
        created: 1,
        updated: 0,
        skipped: 1,
        errors: [
          { index: 2, external_id: 'C-2', messages: ['The email field is invalid: Invalid email address.'] },
          { index: 3, external_id: 'C-3', messages: ['The first_name field is required to create an attendee.'] },
        ],
      },
    });
    expect(await byExternalId('U-1')).toMatchObject({ first_name: 'Ada', last_name: 'Lovelace' });
    expect(await byExternalId('C-1')).toMatchObject({
      first_name: 'Katherine',
      last_name: 'Johnson',
      email: null,
      attendee_type: null,
    });
  });

  it('updates only known external ids in update mode: unknown and unchanged ones are skipped, absent fields kept, null clears', async () => {
    const before = (await byExternalId('U-2'))!;
    const res = await sync('update', [
      { external_id: 'U-2', last_name: 'Murray Hopper', email: null },
      { external_id: 'NEW-1', first_name: 'Not created' },
      { external_id: 'C-1', first_name: 'Katherine', last_name: 'Johnson' },
      { external_id: 'U-1', attendee_type: 'nope' },
      { external_id: 'U-1', attendee_type: '' },
    ]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      results: {
        created: 0,
        updated: 1,
        skipped: 2,
        errors: [
          {
            index: 3,
            external_id: 'U-1',
            messages: [
              'The external_id "U-1" occurs more than once in this request.',
              'The attendee type "nope" does not exist in this project.',
            ],
          },
          { index: 4, external_id: 'U-1', messages: ['The external_id "U-1" occurs more than once in this request.'] },
        ],
      },
    });
    const after = (await byExternalId('U-2'))!;
    expect(after).toMatchObject({
      first_name: 'Grace',
      last_name: 'Murray Hopper',
      email: null,
      attendee_type: 'guest',
    });
    expect(after.version).toBeGreaterThan(before.version as number);
    expect(await byExternalId('NEW-1')).toBeUndefined();
    expect(await byExternalId('U-1')).toMatchObject({ attendee_type: 'vip' });
  });

  it('takes 10,000 records in one request', async () => {
    const records = (n: number, name: (i: number) => string) =>
      Array.from({ length: n }, (_, i) => ({
        external_id: `BULK-${i}`,
        first_name: name(i),
        last_name: `Number ${i}`,
        email: `bulk${i}@example.test`,
        attendee_type: i % 2 ? 'guest' : 'vip',
      }));
    const before = await count();
    const created = await sync(
      'upsert',
      records(10_000, () => 'Bulk'),
    );
    expect(created.status).toBe(200);
    expect(created.body).toEqual({ success: true, results: { created: 10_000, updated: 0, skipped: 0, errors: [] } });
    expect(await count()).toBe(before + 10_000);
    const changed = await sync(
      'upsert',
      records(10_000, (i) => (i % 2 ? 'Bulk' : 'Renamed')),
    );
    expect(changed.body).toEqual({
      success: true,
      results: { created: 0, updated: 5_000, skipped: 5_000, errors: [] },
    });
    expect(await byExternalId('BULK-4242')).toMatchObject({ first_name: 'Renamed', attendee_type: 'vip' });
    expect(await byExternalId('BULK-4243')).toMatchObject({ first_name: 'Bulk', attendee_type: 'guest' });
    expect(await count()).toBe(before + 10_000);
  });

  it('answers an envelope that fails validation with 400 {error, message, errors} and writes nothing', async () => {
    const before = await count();
    const attendees = [{ external_id: 'V-1', first_name: 'Never' }];
    const cases: [unknown, Record<string, string[]>][] = [
      [
        { ...envelope, attendees },
        { sync_mode: ['The sync_mode field is invalid: Invalid option: expected one of "upsert"|"create"|"update".'] },
      ],
      [
        { ...envelope, sync_mode: 'merge', attendees },
        { sync_mode: ['The sync_mode field is invalid: Invalid option: expected one of "upsert"|"create"|"update".'] },
      ],
      // fieldErrorsFromZod (src/errors.ts) calls every wrong type "required": zod 4 leaves issue.input out.
      [
        { ...envelope, sync_mode: 'upsert', attendees: 'V-1' },
        { attendees: ['The attendees field is invalid: Invalid input: expected array, received string.'] },
      ],
      [{ ...envelope, sync_mode: 'upsert' }, { attendees: ['The attendees field is required.'] }],
      [
        { project_slug: 'default', sync_mode: 'upsert', attendees },
        { team_slug: ['The team_slug field is required.'] },
      ],
      [
        {
          ...envelope,
          sync_mode: 'upsert',
          attendees: Array.from({ length: 10_001 }, (_, i) => ({ external_id: `V-${i}`, first_name: 'Never' })),
        },
        { attendees: ['The attendees field is invalid: at most 10000 records are taken in one request.'] },
      ],
    ];
    for (const [body, errors] of cases) {
      const res = await post(body);
      expect(res.status, JSON.stringify(errors)).toBe(400);
      expect(res.body).toEqual({ error: 'validation_failed', message: Object.values(errors)[0]![0], errors });
    }
    const json = await post.rawBody('{"team_slug": "default", ');
    expect(json.status).toBe(400);
    expect(json.body).toEqual({
      error: 'malformed_json',
      message: expect.stringMatching(/^The request body is not valid JSON: /),
    });
    const form = await post.rawBody('sync_mode=upsert', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(form.status).toBe(415);
    expect(form.body).toEqual({
      error: 'unsupported_media_type',
      message: 'Unsupported content type "application/x-www-form-urlencoded": send application/json.',
    });
    expect(await count()).toBe(before);
  });

  it('answers 404 in the webhook envelope when the slugs name no project', async () => {
    const res = await post({
      team_slug: 'default',
      project_slug: 'nope',
      sync_mode: 'upsert',
      attendees: [{ external_id: 'X-1', first_name: 'Lost' }],
    });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      error: 'unknown_project',
      message: 'No project "default/nope": team_slug and project_slug name none.',
    });
    expect(await byExternalId('X-1')).toBeUndefined();
  });

  it('applies a request in one transaction: a write that fails part-way leaves nothing of it behind', async () => {
    const before = await count();
    const db = gh.app.deps.store.db;
    // A failure injected at the database edge, after the earlier records' writes have run.
    db.exec(
      "CREATE TEMP TRIGGER sync_boom BEFORE INSERT ON attendees WHEN NEW.first_name = 'Boom' BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
    );
    try {
      const res = await sync('upsert', [
        { external_id: 'U-1', first_name: 'Changed' },
        { external_id: 'T-1', first_name: 'Written first' },
        { external_id: 'T-2', first_name: 'Boom' },
      ]);
      expect(res.status).toBe(500);
    } finally {
      db.exec('DROP TRIGGER sync_boom');
    }
    expect(await count()).toBe(before);
    expect(await byExternalId('U-1')).toMatchObject({ first_name: 'Ada' });
    expect(await byExternalId('T-1')).toBeUndefined();
  });

  it('makes synced attendees and their type changes visible to the decision engine without a restart', async () => {
    const zone = (await api.post(`${A}/access-zones`, { name: 'VIP lounge', requires_ticket: true })).body.data.id;
    const vip = ((await api.get(`${A}/attendee-types`)).body.data as { id: number; slug: string }[]).find(
      (t) => t.slug === 'vip',
    )!;
    expect((await api.put(`${A}/attendee-types/${vip.id}`, { zone_ids: [zone] })).status).toBe(200);
    const door = (await api.post(`${A}/access-points`, { name: 'Lounge door', access_zone_id: zone })).body.data.id;
    const scan = async (value: string) =>
      (await api.post(`${A}/access-points/${door}/scan`, { credential_value: value })).body;

    expect(
      (await sync('create', [{ external_id: 'E-1', first_name: 'Edith', attendee_type: 'guest' }])).body.results
        .created,
    ).toBe(1);
    const edith = (await byExternalId('E-1'))!;
    expect((await api.post(`${A}/attendees/${edith.id}/credentials`, { value: 'EDITH-1' })).status).toBe(201);
    expect(await scan('EDITH-1')).toMatchObject({ access_granted: false, reason: 'not_authorized' });
    expect((await sync('update', [{ external_id: 'E-1', attendee_type: 'vip' }])).body.results.updated).toBe(1);
    expect(await scan('EDITH-1')).toMatchObject({
      access_granted: true,
      attendee: { id: edith.id, first_name: 'Edith' },
    });
  });

  it("refuses a request signed by another project's source with 403, and takes one signed by its own", async () => {
    expect((await api.post('/api/v1/projects', { name: 'Other venue', slug: 'other' })).status).toBe(201);
    const other = await createSource(gh, admin, 'attendee-sync', { project: '/api/v1/projects/default/other' });
    const own = await createSource(gh, admin, 'attendee-sync');
    const body = { ...envelope, sync_mode: 'upsert', attendees: [{ external_id: 'S-1', first_name: 'Signed' }] };
    const raw = JSON.stringify(body);
    const mismatch = await post(body, { 'X-Svc-Signature': await sign(other.secret, raw) });
    expect(mismatch.status).toBe(403);
    expect(mismatch.body).toEqual({
      error: 'source_project_mismatch',
      message: 'The webhook source that signed this request belongs to another project.',
    });
    expect(await byExternalId('S-1')).toBeUndefined();
    const ok = await post(body, { 'X-Svc-Signature': await sign(own.secret, raw) });
    expect(ok.status).toBe(200);
    expect(ok.body.results.created).toBe(1);
  });
});
