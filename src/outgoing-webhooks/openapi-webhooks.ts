import { CATALOGUE, TEST_EVENT } from '../feed/catalogue.js';

// The outgoing webhooks in the OpenAPI document's `webhooks` section (OpenAPI 3.1):
// one entry per catalogue event, the body every delivery has and the headers it is
// signed with. docs/webhooks-outgoing.md shows each event's data.

const WHEN: Record<string, string> = {
  'access.granted': 'A scan was granted. data: the real-time AccessGranted fields and the access event uuid.',
  'access.denied': 'A scan was denied. data: the real-time AccessDenied fields and the access event uuid.',
  'attendee.created': 'An attendee was made. data: attendee_id and the attendee as REST shows it.',
  'attendee.updated':
    'An attendee changed. data: attendee_id, the attendee as REST shows it, and previous_attributes (the changed fields before the change).',
  'attendee.deleted':
    'An attendee was deleted. data: {attendee_id, id, previous_attributes} (the attendee as it was; absent when another process, such as the CLI, deleted it).',
  'attendee.imported':
    'A bulk import or attendee sync, as one event. data: {count, credentials, from_version, to_version, changed}; GET attendees?changed_since=<from_version - 1> lists it.',
  'sync.link_down': "An edge's link to its cloud went down (told on the edge). data: edge_id, reason, since.",
  'sync.link_up': "An edge's link to its cloud is up again (told on the edge). data: edge_id, down_since, at.",
  'sync.conflict':
    'Sync flagged an uploaded access event or recorded a field conflict, or a later upload cleared a flag (told on the cloud). data: the conflict as GET .../sync/conflicts shows it; a clearing sends the same conflict (same id) with cleared_at set.',
  'credential.created': 'A credential was issued. data: the credential as REST shows it.',
  'credential.revoked': 'A credential was revoked. data: the credential as REST shows it.',
  'access_point.updated':
    'An access point was made or changed. data: the access point as REST shows it, its readers without gateway_id and status (live state; reader.offline tells it).',
  'access_point.deleted': 'An access point was deleted. data: {id}.',
  'zone.capacity_reached':
    'A grant filled a zone to its capacity (again only after it emptied to 90 %). data: {zone_id, capacity, current_count, timestamp}.',
  'gateway.online': "A gateway's reported status became online. data: the gateway, timestamp.",
  'gateway.offline': "A gateway's reported status became offline. data: the gateway, timestamp.",
  'reader.offline':
    'A reader went offline. data: {reader_id, status, connected_via, gateway_status, last_seen, last_scan, timestamp}.',
  'webhook.endpoint_disabled':
    'A subscription was disabled (410 Gone, failing for webhook.disableAfterHours, or its owner lost access to the project). data: {subscription_id, url, reason: gone | failing | owner_lost_access}.',
  [TEST_EVENT]:
    'POST /api/v1/webhook-subscriptions/{id}/test, to that subscription only. data: {subscription_id, message}.',
};

export function openApiWebhooks(headerPrefix: string): Record<string, unknown> {
  // A subscription signs in one scheme (signing.ts): each scheme's headers are declared, required
  // only when every delivery sends them (OpenAPI cannot make a header depend on the subscription).
  const header = (name: string, required: boolean, description: string) => ({
    name,
    in: 'header',
    required,
    description,
    schema: { type: 'string' },
  });
  const sha256 = (what: string) => `${what} (signature_scheme sha256 only)`;
  const standard = (what: string) => `${what} (signature_scheme standard only: Standard Webhooks)`;
  const out: Record<string, unknown> = {};
  for (const event of [...CATALOGUE, TEST_EVENT]) {
    out[event] = {
      post: {
        operationId: `webhook.${event}`,
        tags: ['Outgoing webhooks'],
        summary: event,
        description: `${WHEN[event] ?? ''} Signed as docs/webhooks-outgoing.md says (signature_scheme sha256: X-${headerPrefix}-Signature; standard: webhook-id, webhook-timestamp, webhook-signature). Answer 2xx within webhook.timeoutMs; 410 disables the subscription.`,
        parameters: [
          header(`X-${headerPrefix}-Event`, true, 'the event name'),
          header(
            `X-${headerPrefix}-Signature`,
            false,
            sha256('sha256=<hex HMAC-SHA256 of the raw body with the current secret>; always sent'),
          ),
          header(
            `X-${headerPrefix}-Signature-Previous`,
            false,
            sha256('the same with the previous secret, during the grace period after a rotation'),
          ),
          header(
            `X-${headerPrefix}-Delivery-ID`,
            false,
            sha256('the same on every attempt of one delivery: deduplicate by it; always sent'),
          ),
          header(`X-${headerPrefix}-Timestamp`, false, sha256('Unix seconds of the attempt; always sent')),
          header(
            'webhook-id',
            false,
            standard('the delivery id, the same on every attempt: deduplicate by it; always sent'),
          ),
          header('webhook-timestamp', false, standard('Unix seconds of the attempt; always sent')),
          header(
            'webhook-signature',
            false,
            standard(
              'space-separated v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">, one per secret that signs (two during a rotation); always sent',
            ),
          ),
        ],
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['id', 'event', 'timestamp', 'project_id', 'data'],
                properties: {
                  id: { type: 'string', description: 'the event id (the same for every subscription)' },
                  event: { type: 'string', enum: [event] },
                  timestamp: { type: 'string', format: 'date-time' },
                  project_id: { type: 'integer' },
                  data: { type: 'object', additionalProperties: true },
                },
              },
            },
          },
        },
        responses: {
          '200': { description: 'Accepted (any 2xx)' },
          '410': { description: 'Gone: the subscription is disabled at once' },
        },
      },
    };
  }
  return out;
}
