import { z } from 'zod';
import { conditions } from '../responses.js';
import type { ScanService } from '../../access/scan-service.js';
import type { Logger } from '../../logger.js';
import { MAX_CREDENTIAL_VALUE, type ReaderScans } from '../../access/reader-scan.js';
import { AppError } from '../../errors.js';
import type { WebhookGate } from '../../webhooks/gate.js';
import { gatewayReportSchema, type Gateways } from '../../devices/gateways.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { refusalError, requestTickets, respondToScan, scanResponseSchema, requestIdField } from './scan.js';
import { webhookError } from '../resources.js';

// Incoming webhooks (spec: Endpoints, Incoming webhooks). POST /webhook/v1/access-event: a
// gateway reports a scan at one of its readers and gets the decision back. The reader is
// found by its identifier (in the project the webhook gate names, once sources are signed);
// the decision goes through the same ScanService as every other transport. Errors answer in
// the webhook envelope {error, message, errors?}.

const accessEventBody = z.object({
  reader_id: z.string().min(1).max(255).describe("the reader's identifier"),
  credential_value: z.string().min(1).max(MAX_CREDENTIAL_VALUE),
  scan_type: z.string().max(32).optional().describe('barcode, qr, rfid, nfc, ...; recorded as sent'),
  timestamp: z
    .union([z.iso.datetime({ offset: true }), z.number().int().nonnegative().describe('Unix seconds')])
    .optional()
    .describe('when the scan happened; default now (docs/engine.md: timestamps)'),
  request_id: requestIdField,
});

export interface WebhookRouteDeps {
  scans: ScanService;
  gateways: Gateways;
  readerScans: ReaderScans;
  gate: WebhookGate;
}

export function webhookRoutes({ scans, gateways, readerScans, gate }: WebhookRouteDeps): AnyRoute[] {
  const tickets = requestTickets(scans, 'webhook');
  return [
    defineRoute({
      method: 'POST',
      path: '/webhook/v1/mqtt-gateway-status',
      operationId: 'webhooks.mqtt-gateway-status',
      tags: ['Incoming webhooks'],
      summary: 'A gateway reports its status and its readers',
      description:
        "The same state the MQTT status topic updates (docs/mqtt.md). The gateway is found by `gateway_id` (its identifier). Answers `{success: true, message}` (the first of the two shapes the spec shows); reader ids the gateway's project does not know are named in the message, not an error.",
      ability: 'public',
      rateClass: 'none',
      envelope: 'webhook',
      webhook: 'gateway-status',
      body: gatewayReportSchema,
      responses: {
        200: { description: 'Recorded', schema: z.object({ success: z.literal(true), message: z.string() }) },
        404: { description: 'No gateway has this identifier', schema: webhookError },
        409: {
          description:
            'The identifier is used in more than one project: an unsigned request (incomingWebhooks.allowUnsigned) names none',
          schema: webhookError,
        },
      },
      handler: ({ body, koa }) => {
        const { projectId } = gate.admit('gateway-status', koa);
        const matches = gateways.withIdentifier(body.gateway_id, projectId);
        if (matches.length === 0) throw new AppError('unknown_gateway', { identifier: body.gateway_id });
        if (matches.length > 1) throw new AppError('ambiguous_gateway', { identifier: body.gateway_id });
        const { unknownReaders } = gateways.report(matches[0]!, body);
        const message = unknownReaders.length
          ? `Gateway status recorded; unknown reader ids ignored: ${unknownReaders.slice(0, 20).join(', ')}.`
          : 'Gateway status recorded.';
        return { body: { success: true, message } };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/webhook/v1/access-event',
      operationId: 'webhooks.access-event',
      tags: ['Incoming webhooks'],
      summary: 'A gateway reports a scan and gets the decision',
      description:
        'The reader is found by `reader_id` (its identifier). The access event is durable (in the access-event journal) before this answers. `reason` and `reason_detail` are present when access is denied; a reader at an inactive door, or one leading into no zone, is denied (not_authorized) with the cause in `reason_detail`.',
      ability: 'public',
      rateClass: 'none',
      envelope: 'webhook',
      webhook: 'access-event',
      writes: false, // the decision goes to the access-event journal, a file (event-journal.ts), not SQLite
      conditions: [conditions.scanAnswerTimeout],
      waits: true, // for the journal's group commit: a retry can meet the first still in flight
      body: accessEventBody,
      responses: {
        200: { description: 'The decision', schema: scanResponseSchema },
        400: { description: 'Also a timestamp more than 5 minutes ahead of the box or 7 days behind it' },
        404: { description: 'No reader has this identifier', schema: webhookError },
        409: { description: 'The reader is not assigned to an access point', schema: webhookError },
      },
      handler: async ({ body, koa }) => {
        const { projectId } = gate.admit('access-event', koa);
        const located = readerScans.locate({
          projectId,
          identifier: body.reader_id,
          credentialValue: body.credential_value,
          timestamp: body.timestamp,
          requestId: body.request_id ?? null,
          source: 'webhook',
        });
        if (!located.ok) throw refusalError(located.refusal);
        const { reader, request } = located;
        return { body: await respondToScan(scans, tickets, request, reader.identifier, koa.state.log as Logger) };
      },
    }),
  ];
}
