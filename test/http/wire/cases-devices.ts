import type { TestResponse } from '../../helpers/appliance.js';
import type { SourceKind } from '../../helpers/signed-webhooks.js';
import type { Operation } from './check.js';
import { c, unique, type Venue } from './fixtures.js';
import { pipelined } from './pipelined.js';
import { A, type Case, type World } from './world.js';

// Readers and gateways, webhook sources and the incoming-webhook log, and the five incoming
// webhooks (each sent signed by a source of its kind, then the same bytes again: the first
// answer, with X-Svc-Replayed).

export function deviceCases(w: World, v: Venue): Case[] {
  const source = (name: string) => w.create(`${A}/integrations/webhooks`, { kind: 'access-event', name });
  const gateway = () => w.create(`${A}/gateways`, { identifier: `GW-${unique()}` });
  const loginBody = { reader_identifier: 'R-1' };
  return [
    c('readers.login', 202, 'a reader of the project', () =>
      w.send({ method: 'POST', path: `${A}/readers/login`, json: loginBody }),
    ),
    c('readers.login', 202, 'a project that does not exist: the same answer, no login (docs/security.md)', () =>
      w.send({ method: 'POST', path: '/api/v1/projects/nope/nope/readers/login', json: loginBody }),
    ),
    c('readers.login', 202, 'a reader the project does not have: the same answer, no login', () =>
      w.send({ method: 'POST', path: `${A}/readers/login`, json: { reader_identifier: 'R-NONE' } }),
    ),
    c('readers.logins', 200, 'the pending logins', () => w.api('GET', `${A}/readers/logins`)),
    c('readers.verify-otp', 200, 'the one-time password staff read out', async () => {
      await w.send({ method: 'POST', path: `${A}/readers/login`, json: loginBody });
      const otp = (await w.api('GET', `${A}/readers/logins`)).body.data[0].otp as string;
      return w.send({ method: 'POST', path: '/api/v1/reader-otp/verify', json: { ...loginBody, otp } });
    }),
    c('readers.verify-otp', 422, 'a wrong one-time password', () =>
      w.send({ method: 'POST', path: '/api/v1/reader-otp/verify', json: { ...loginBody, otp: '000000' } }),
    ),
    c('readers.revoke-token', 204, 'a reader', () => w.api('DELETE', `${A}/readers/${v.reader}/token`)),
    c('readers.revoke-token', 404, 'a reader that does not exist', () => w.api('DELETE', `${A}/readers/999999/token`)),

    c('gateways.index', 200, 'a page', () => w.api('GET', `${A}/gateways`)),
    c('gateways.show', 200, 'a gateway', () => w.api('GET', `${A}/gateways/${v.gateway}`)),
    c('gateways.show', 404, 'an id that names nothing', () => w.api('GET', `${A}/gateways/999999`)),
    c('gateways.store', 201, 'a new identifier', () =>
      w.api('POST', `${A}/gateways`, { identifier: `GW-${unique()}` }),
    ),
    c('gateways.store', 422, 'an identifier taken', () => w.api('POST', `${A}/gateways`, { identifier: 'GW-1' })),
    c('gateways.update', 200, 'a new name', () => w.api('PUT', `${A}/gateways/${v.gateway}`, { name: 'Gate one' })),
    c('gateways.update', 404, 'an id that names nothing', () =>
      w.api('PUT', `${A}/gateways/999999`, { name: 'Nobody' }),
    ),
    c('gateways.destroy', 204, 'a gateway made for it', async () =>
      w.api('DELETE', `${A}/gateways/${await gateway()}`),
    ),
    c('gateways.destroy', 404, 'an id that names nothing', () => w.api('DELETE', `${A}/gateways/999999`)),
    c('gateways.rotate-token', 201, 'a gateway', () => w.api('POST', `${A}/gateways/${v.gateway}/token`)),
    c('gateways.rotate-token', 404, 'an id that names nothing', () => w.api('POST', `${A}/gateways/999999/token`)),

    c('webhook-sources.index', 200, 'a page', () => w.api('GET', `${A}/integrations/webhooks`)),
    c('webhook-sources.store', 201, 'a new source', () =>
      w.api('POST', `${A}/integrations/webhooks`, { kind: 'gateway-status', name: `Source ${unique()}` }),
    ),
    c('webhook-sources.store', 422, 'an address that is no address', () =>
      w.api('POST', `${A}/integrations/webhooks`, {
        kind: 'gateway-status',
        name: 'Bad',
        ip_allowlist: ['not an address'],
      }),
    ),
    c('webhook-sources.show', 200, 'a source', async () =>
      w.api('GET', `${A}/integrations/webhooks/${await source('shown')}`),
    ),
    c('webhook-sources.show', 404, 'an id that names nothing', () => w.api('GET', `${A}/integrations/webhooks/999999`)),
    c('webhook-sources.update', 200, 'a new name', async () =>
      w.api('PUT', `${A}/integrations/webhooks/${await source('renamed')}`, { name: 'Renamed' }),
    ),
    c('webhook-sources.update', 404, 'an id that names nothing', () =>
      w.api('PUT', `${A}/integrations/webhooks/999999`, { name: 'Nobody' }),
    ),
    c('webhook-sources.rotate-secret', 201, 'a source', async () =>
      w.api('POST', `${A}/integrations/webhooks/${await source('rotated')}/rotate-secret`, { grace_minutes: 0 }),
    ),
    c('webhook-sources.rotate-secret', 404, 'an id that names nothing', () =>
      w.api('POST', `${A}/integrations/webhooks/999999/rotate-secret`, {}),
    ),
    c('webhook-sources.destroy', 204, 'a source made for it', async () =>
      w.api('DELETE', `${A}/integrations/webhooks/${await source('removed')}`),
    ),
    c('webhook-sources.destroy', 404, 'an id that names nothing', () =>
      w.api('DELETE', `${A}/integrations/webhooks/999999`),
    ),
    ...webhookCases(w),
    // Read last, so they list what the cases above posted.
    c('incoming-webhooks.index', 200, "the project's log", () => w.api('GET', `${A}/incoming-webhooks?per_page=100`)),
    c('incoming-webhooks.all', 200, 'the whole log', () => w.api('GET', '/api/v1/incoming-webhooks?per_page=100')),
    c('uploads.index', 200, 'the uploads recorded', () => w.api('GET', `${A}/uploads`)),
  ];
}

/** A body each incoming webhook accepts in the venue of fixtures.ts (each names records of its own). */
export const acceptedBodies: Record<SourceKind, string> = {
  'access-event': JSON.stringify({ reader_id: 'R-1', credential_value: 'CRED-1', request_id: 'wire-1' }),
  'gateway-status': JSON.stringify({ gateway_id: 'GW-1', status: 'online' }),
  'attendee-sync': JSON.stringify({
    team_slug: 'default',
    project_slug: 'default',
    sync_mode: 'upsert',
    attendees: [{ external_id: 'SYNC-1', first_name: 'Synced' }],
  }),
  'registration-partner': JSON.stringify({
    event_type: 'registration.created',
    event_id: 'EV-1',
    data: { registration_id: 'REG-1', attendee: { first_name: 'Reg' } },
  }),
  'upload-finalized': JSON.stringify({ name: 'notes.txt', bucket: 'uploads', contentType: 'text/plain', size: '12' }),
};

const operationOf: Record<SourceKind, string> = {
  'access-event': 'webhooks.access-event',
  'gateway-status': 'webhooks.mqtt-gateway-status',
  'attendee-sync': 'webhooks.attendee-sync',
  'registration-partner': 'webhooks.registration-partner',
  'upload-finalized': 'webhooks.large-upload-finalized',
};

function webhookCases(w: World): Case[] {
  const json = (body: unknown) => JSON.stringify(body);
  const accepted = (kind: SourceKind) => w.signed(kind, acceptedBodies[kind]);
  const [scan, status, sync, created, upload] = [
    accepted('access-event'),
    accepted('gateway-status'),
    accepted('attendee-sync'),
    accepted('registration-partner'),
    accepted('upload-finalized'),
  ] as const;
  // A retry of an accepted body: its first answer again, marked (docs/webhooks-incoming.md).
  const again = 'the same signed bytes again';
  const replayed = { headers: ['X-Svc-Replayed'] };
  return [
    c('webhooks.access-event', 200, 'a scan at a reader', scan),
    c('webhooks.access-event', 200, again, scan, replayed),
    c(
      'webhooks.access-event',
      404,
      'a reader that does not exist',
      w.signed('access-event', json({ reader_id: 'R-NONE', credential_value: 'CRED-1' })),
    ),
    c(
      'webhooks.access-event',
      409,
      'a reader at no door',
      w.signed('access-event', json({ reader_id: 'R-FREE', credential_value: 'CRED-1' })),
    ),
    c('webhooks.mqtt-gateway-status', 200, 'a gateway report', status),
    c('webhooks.mqtt-gateway-status', 200, again, status, replayed),
    c(
      'webhooks.mqtt-gateway-status',
      404,
      'a gateway that does not exist',
      w.signed('gateway-status', json({ gateway_id: 'GW-NONE', status: 'online' })),
    ),
    c('webhooks.attendee-sync', 200, 'a record to upsert', sync),
    c('webhooks.attendee-sync', 200, again, sync, replayed),
    c(
      'webhooks.attendee-sync',
      403,
      "another project than the source's",
      w.signed(
        'attendee-sync',
        json({ team_slug: 'default', project_slug: 'other', sync_mode: 'upsert', attendees: [] }),
      ),
    ),
    c(
      'webhooks.attendee-sync',
      404,
      'a project that does not exist',
      w.signed(
        'attendee-sync',
        json({ team_slug: 'default', project_slug: 'nope', sync_mode: 'upsert', attendees: [] }),
      ),
    ),
    c('webhooks.registration-partner', 200, 'a registration', created),
    c('webhooks.registration-partner', 200, again, created, replayed),
    c(
      'webhooks.registration-partner',
      409,
      'a registration id already created',
      w.signed(
        'registration-partner',
        json({
          event_type: 'registration.created',
          event_id: 'EV-2',
          data: { registration_id: 'REG-1', attendee: { first_name: 'Reg' } },
        }),
      ),
    ),
    c(
      'webhooks.registration-partner',
      404,
      'an update of a registration that does not exist',
      w.signed(
        'registration-partner',
        json({
          event_type: 'registration.updated',
          event_id: 'EV-3',
          data: { registration_id: 'REG-NONE', attendee: { first_name: 'Nobody' } },
        }),
      ),
    ),
    c('webhooks.large-upload-finalized', 200, 'a finished upload', upload),
    c('webhooks.large-upload-finalized', 200, again, upload, replayed),
  ];
}

/** Each accepted body written twice on one connection (wire/pipelined.ts), on an appliance with
 * incomingWebhooks.replayWaitMs 0. Where the document says the route can still be handling the
 * first when the second is read (it declares request_in_progress), the second is told at once to
 * send it again; elsewhere the first has its answer before the second is read, which gets it. */
export function inFlightCases(w: World, ops: Map<string, Operation>): Case[] {
  return (Object.keys(acceptedBodies) as SourceKind[]).flatMap((kind) => {
    const op = operationOf[kind];
    let pair: Promise<TestResponse[]> | null = null;
    const twice = async () => {
      const req = await w.signedRequest(kind, acceptedBodies[kind]);
      return pipelined(w.gh.url, [req, req]);
    };
    const answer = (i: number) => async () => (await (pair ??= twice()))[i]!;
    const inFlight = (
      ops.get(op)?.spec.responses['409'] as { description?: string } | undefined
    )?.description?.includes('`request_in_progress`');
    return [
      c(op, 200, 'the first of two identical signed bodies written together', answer(0)),
      inFlight
        ? c(op, 409, 'the second, while the first is still being handled', answer(1), { error: 'request_in_progress' })
        : c(op, 200, 'the second, read once the first was answered', answer(1), { headers: ['X-Svc-Replayed'] }),
    ];
  });
}
