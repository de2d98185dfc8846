import { sign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { createSource } from '../helpers/signed-webhooks.js';
import { webhookPoster, WEBHOOK_TEST_ENV, type WebhookPost } from '../helpers/webhooks.js';

// POST /webhook/v1/registration-partner (docs/webhooks-incoming.md).

const A = '/api/v1/projects/default/default';

const event = (
  event_type: string,
  event_id: string,
  registration_id: string,
  attendee?: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) => ({
  event_type,
  event_id,
  data: { registration_id, ...(attendee ? { attendee } : {}), ...extra },
  timestamp: '2026-11-23T12:00:00Z',
});

describe('registration-partner', () => {
  let gh: TestAppliance;
  let admin: string;
  let api: ReturnType<typeof client>;
  let post: WebhookPost;
  let door: number;
  const scan = async (value: string) =>
    (await api.post(`${A}/access-points/${door}/scan`, { credential_value: value })).body;
  const registration = async (id: string) => {
    const found = (
      (await api.get(`${A}/attendees?search=${encodeURIComponent(id)}`)).body.data as { external_id: string }[]
    ).find((a) => a.external_id === id);
    return found as Record<string, any> | undefined;
  };
  const credentialsOf = async (attendeeId: number) =>
    (await api.get(`${A}/attendees/${attendeeId}/credentials`)).body.data as Record<string, any>[];
  const count = (sql: string) => (gh.app.deps.store.db.prepare(sql).get() as { n: number }).n;
  const counts = () => ({
    attendees: count('SELECT COUNT(*) AS n FROM attendees'),
    credentials: count('SELECT COUNT(*) AS n FROM credentials'),
    checkIns: count('SELECT COUNT(*) AS n FROM check_ins'),
    events: count('SELECT COUNT(*) AS n FROM partner_events'),
  });

  beforeAll(async () => {
    gh = await startAppliance(WEBHOOK_TEST_ENV);
    admin = await gh.token();
    api = client(gh, admin);
    post = webhookPoster(gh, '/webhook/v1/registration-partner');
    const zone = (await api.post(`${A}/access-zones`, { name: 'Hall' })).body.data.id;
    door = (await api.post(`${A}/access-points`, { name: 'Hall door', access_zone_id: zone })).body.data.id;
  });
  afterAll(() => gh.destroy());

  it('creates an attendee with a generated credential on registration.created, and the engine grants it', async () => {
    const res = await post(
      event('registration.created', 'evt-1', 'R-1', {
        first_name: 'Ada',
        last_name: 'Lovelace',
        email: 'Ada@Example.test',
      }),
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      event_id: 'evt-1',
      outcome: 'created',
      attendee_id: expect.any(Number),
      credential_value: expect.stringMatching(/^REG-[A-Z2-7]{24}$/),
      message: `Registration "R-1" created attendee ${res.body.attendee_id} with a credential.`,
    });
    expect(await registration('R-1')).toMatchObject({
      id: res.body.attendee_id,
      first_name: 'Ada',
      last_name: 'Lovelace',
      email: 'ada@example.test',
      external_id: 'R-1',
      status: 'active',
    });
    expect(await credentialsOf(res.body.attendee_id)).toMatchObject([
      { value: res.body.credential_value, status: 'active' },
    ]);
    expect(await scan(res.body.credential_value)).toMatchObject({
      access_granted: true,
      attendee: { id: res.body.attendee_id, first_name: 'Ada' },
    });
  });

  it('uses the credential_value the partner gives, and refuses one already in use', async () => {
    const res = await post(
      event('registration.created', 'evt-2', 'R-2', { first_name: 'Grace' }, { credential_value: 'PARTNER-TICKET-2' }),
    );
    expect(res.body).toMatchObject({ outcome: 'created', credential_value: 'PARTNER-TICKET-2' });
    expect(await registration('R-2')).toMatchObject({ first_name: 'Grace', last_name: '', email: null });
    const before = counts();
    const taken = await post(
      event('registration.created', 'evt-3', 'R-3', { first_name: 'Copy' }, { credential_value: 'PARTNER-TICKET-2' }),
    );
    expect(taken.status).toBe(400);
    expect(taken.body).toEqual({
      error: 'validation_failed',
      message: 'The credential value is already in use in this project.',
      errors: { 'data.credential_value': ['The credential value is already in use in this project.'] },
    });
    expect(counts()).toEqual(before);
  });

  it('changes name and email on registration.updated, keeping what it does not name', async () => {
    const res = await post(
      event('registration.updated', 'evt-4', 'R-1', { last_name: 'King', email: 'countess@example.test' }),
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      event_id: 'evt-4',
      outcome: 'updated',
      attendee_id: expect.any(Number),
      message: 'Registration "R-1" updated.',
    });
    expect(await registration('R-1')).toMatchObject({
      first_name: 'Ada',
      last_name: 'King',
      email: 'countess@example.test',
    });
  });

  it('revokes the credentials and cancels the attendee on registration.cancelled, and the engine denies them', async () => {
    const ada = (await registration('R-1'))!;
    const [credential] = await credentialsOf(ada.id);
    expect((await api.post(`${A}/attendees/${ada.id}/credentials`, { value: 'ADA-SPARE' })).status).toBe(201);
    const res = await post(event('registration.cancelled', 'evt-5', 'R-1'));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      event_id: 'evt-5',
      outcome: 'cancelled',
      attendee_id: ada.id,
      message: 'Registration "R-1" cancelled; 2 credentials revoked.',
    });
    expect(await registration('R-1')).toMatchObject({ status: 'cancelled' });
    expect((await credentialsOf(ada.id)).map((c) => c.status)).toEqual(['revoked', 'revoked']);
    expect(await scan(credential!.value)).toMatchObject({ access_granted: false, reason: 'invalid_credential' });
    expect(await scan('ADA-SPARE')).toMatchObject({ access_granted: false, reason: 'invalid_credential' });
  });

  it('records a check-in on attendee.checked_in, at the time the partner gives, without an access event', async () => {
    const accessEvents = (await api.get(`${A}/access-events`)).body.meta.total;
    const res = await post(event('attendee.checked_in', 'evt-6', 'R-2'));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      event_id: 'evt-6',
      outcome: 'checked_in',
      attendee_id: expect.any(Number),
      message: 'Check-in of registration "R-2" recorded.',
    });
    const listed = (await api.get(`${A}/attendees/check-ins`)).body.data as { event_id: string }[];
    expect(listed.find((c) => c.event_id === 'evt-6')).toEqual({
      id: expect.any(Number),
      attendee_id: res.body.attendee_id,
      registration_id: 'R-2',
      event_id: 'evt-6',
      checked_in_at: '2026-11-23T12:00:00.000Z',
      received_at: expect.any(String),
    });
    expect((await api.get(`${A}/access-events`)).body.meta.total).toBe(accessEvents);
  });

  it('applies an event sent three times once, acknowledging the replays', async () => {
    const created = event('registration.created', 'evt-7', 'R-7', { first_name: 'Hedy', last_name: 'Lamarr' });
    const checkIn = event('attendee.checked_in', 'evt-8', 'R-7');
    const before = counts();
    const first = await post(created);
    expect(first.body.outcome).toBe('created');
    // The identical signed body again (within 300 s) gets the first answer from the gate...
    const identical = await post(created);
    expect({
      status: identical.status,
      text: identical.text,
      replayed: identical.headers.get('x-svc-replayed'),
    }).toEqual({ status: 200, text: first.text, replayed: 'true' });
    // ...and the event sent again otherwise (re-serialised: a sender's retry after the window,
    // or with other whitespace) is acknowledged by its event_id and not applied.
    for (let i = 1; i <= 2; i++) {
      const again = await post.rawBody(JSON.stringify(created, null, i));
      expect(again.status).toBe(200);
      expect(again.body).toEqual({
        success: true,
        event_id: 'evt-7',
        outcome: 'replayed',
        attendee_id: first.body.attendee_id,
        message: expect.stringMatching(
          /^Event "evt-7" \(registration\.created: created\) was applied at .+; it is not applied again\.$/,
        ),
      });
    }
    for (let i = 0; i < 3; i++)
      expect((await post.rawBody(JSON.stringify(checkIn, null, i))).body.outcome).toBe(
        i === 0 ? 'checked_in' : 'replayed',
      );
    // The same event_id with another body is still the same event.
    expect((await post({ ...checkIn, timestamp: '2026-11-23T12:05:00Z' })).body.outcome).toBe('replayed');
    expect(counts()).toEqual({
      attendees: before.attendees + 1,
      credentials: before.credentials + 1,
      checkIns: before.checkIns + 1,
      events: before.events + 2,
    });
  });

  it('answers events about an unknown registration with 404 and records nothing, so they apply once it exists', async () => {
    const before = counts();
    for (const type of ['registration.updated', 'registration.cancelled', 'attendee.checked_in']) {
      const res = await post(event(type, `evt-u-${type}`, 'R-404', { first_name: 'Later' }));
      expect(res.status, type).toBe(404);
      expect(res.body).toEqual({
        error: 'unknown_registration',
        message: 'No attendee has the registration id "R-404"; the event was not applied or recorded.',
      });
    }
    expect(counts()).toEqual(before);
    expect((await post(event('registration.created', 'evt-9', 'R-404', { first_name: 'Now' }))).body.outcome).toBe(
      'created',
    );
    const late = await post(
      event('registration.updated', 'evt-u-registration.updated', 'R-404', { first_name: 'Later' }),
    );
    expect(late.body.outcome).toBe('updated');
    expect(await registration('R-404')).toMatchObject({ first_name: 'Later' });
  });

  it('refuses registration.created for a registration it knows (409), changing nothing', async () => {
    const before = counts();
    const res = await post(event('registration.created', 'evt-10', 'R-2', { first_name: 'Again' }));
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      error: 'registration_exists',
      message: 'The registration "R-2" already has an attendee; send registration.updated to change it.',
    });
    expect(counts()).toEqual(before);
    expect(await registration('R-2')).toMatchObject({ first_name: 'Grace' });
  });

  it('answers payloads that fail validation with 400 {error, message, errors}, and malformed JSON with 400 malformed_json', async () => {
    const before = counts();
    const cases: [unknown, Record<string, string[]>][] = [
      [
        event('registration.deleted', 'evt-v1', 'R-2'),
        {
          event_type: [
            'The event_type field is invalid: Invalid option: expected one of "registration.created"|"registration.updated"|"registration.cancelled"|"attendee.checked_in".',
          ],
        },
      ],
      [
        { event_type: 'registration.updated', data: { registration_id: 'R-2', attendee: {} } },
        { event_id: ['The event_id field is required.'] },
      ],
      [{ event_type: 'registration.cancelled', event_id: 'evt-v2' }, { data: ['The data field is required.'] }],
      [
        event('registration.cancelled', 'evt-v3', ''),
        {
          'data.registration_id': [
            'The data.registration_id field is invalid: Too small: expected string to have >=1 characters.',
          ],
        },
      ],
      [
        event('registration.created', 'evt-v4', 'R-v4', { last_name: 'Only' }),
        { 'data.attendee.first_name': ['The data.attendee.first_name field is required.'] },
      ],
      [
        event('registration.created', 'evt-v5', 'R-v5'),
        { 'data.attendee.first_name': ['The data.attendee.first_name field is required.'] },
      ],
      [event('registration.updated', 'evt-v6', 'R-2'), { 'data.attendee': ['The data.attendee field is required.'] }],
      [
        event('registration.updated', 'evt-v7', 'R-2', { email: 'nope' }),
        { 'data.attendee.email': ['The data.attendee.email field is invalid: Invalid email address.'] },
      ],
      [
        { ...event('attendee.checked_in', 'evt-v8', 'R-2'), timestamp: 'yesterday' },
        { timestamp: ['The timestamp field is invalid: Invalid ISO datetime.'] },
      ],
    ];
    for (const [body, errors] of cases) {
      const res = await post(body);
      expect(res.status, JSON.stringify(errors)).toBe(400);
      expect(res.body).toEqual({ error: 'validation_failed', message: Object.values(errors)[0]![0], errors });
    }
    const json = await post.rawBody('{"event_type": "registration.created", ');
    expect(json.status).toBe(400);
    expect(json.body).toEqual({
      error: 'malformed_json',
      message: expect.stringMatching(/^The request body is not valid JSON: /),
    });
    expect(counts()).toEqual(before);
  });

  it("applies a signed event in its source's project; unsigned, it needs the only project there is", async () => {
    expect((await api.post('/api/v1/projects', { name: 'Second venue', slug: 'second' })).status).toBe(201);
    const unsigned = await post.unsigned(event('registration.created', 'evt-11', 'R-11', { first_name: 'Unplaced' }));
    expect(unsigned.status).toBe(409);
    expect(unsigned.body).toEqual({
      error: 'project_required',
      message: 'More than one project exists: sign the request with a webhook source, which names its project.',
    });
    const source = await createSource(gh, admin, 'registration-partner', {
      project: '/api/v1/projects/default/second',
    });
    const body = event('registration.created', 'evt-11', 'R-11', { first_name: 'Placed' });
    const signed = await post(body, { 'X-Partner-Signature': await sign(source.secret, JSON.stringify(body)) });
    expect(signed.status).toBe(200);
    expect(signed.body.outcome).toBe('created');
    const second = (await api.get('/api/v1/projects/default/second/attendees')).body.data;
    expect(second).toMatchObject([{ id: signed.body.attendee_id, external_id: 'R-11', first_name: 'Placed' }]);
    expect(await registration('R-11')).toBeUndefined();
  });
});
