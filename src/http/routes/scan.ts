import { z } from 'zod';
import { conditions } from '../responses.js';
import { type Tickets, type WaitingOn, withTicket } from '../../access/scan-deadlines.js';
import { type AccessPointRefusal, type ReaderScanRefusal, scanErrorRefusal } from '../../access/reader-scan.js';
import type { ScanOutcome, ScanRequest, ScanService } from '../../access/scan-service.js';
import { AppError, validationError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { messageSchema } from '../resources.js';
import { PROJECT_PATH, withId } from './crud.js';
import { scanInstant } from '../../access/scan-time.js';
import { DENIAL_REASONS, REASON_DETAILS } from '../../resources/access-events.js';

// POST .../access-points/{id}/scan (ours, docs/engine.md "Scanning over REST"): an authenticated
// client scans at a door and gets the access-event webhook's answer, also at a door that cannot
// admit (inactive, or leading into no zone: a denial like any other, docs/engine.md). The
// decision's access event is durable (in the access-event journal) before this answers. Timestamps:
// docs/engine.md. A scan not answered within mqtt.answerTimeoutMs is answered 503 with Retry-After,
// as an MQTT reader's connection is closed then (docs/mqtt.md: answered in bounded time).

export const requestIdField = z
  .string()
  .min(1)
  .max(128)
  .optional()
  .describe(
    "the sender's id for this scan: a retry with the same id gets the first decision back and writes no second event",
  );

/** What each stage a scan can wait on is called in the 503's message. */
const WAITED_FOR: Record<WaitingOn, string> = {
  decision: 'its decision',
  'journal write': 'its access event being written to the journal',
  'request-id pending entry': 'an earlier scan with the same request_id, still being written',
};

/** A request waiting on its scan's answer: told when the bound passed (access/scan-deadlines.ts). */
class RequestWaiter {
  #resolve!: (late: { waitingOn: WaitingOn; waitedMs: number }) => void;
  readonly late = new Promise<{ waitingOn: WaitingOn; waitedMs: number }>((resolve) => (this.#resolve = resolve));

  passed(waitingOn: WaitingOn, waitedMs: number): void {
    this.#resolve({ waitingOn, waitedMs });
  }
}

/**
 * HTTP's tickets in the answer deadlines (the REST scan's, the access-event webhook's): a scan let go is answered 503.
 */
export function requestTickets(scans: ScanService, transport: 'api' | 'webhook'): Tickets<RequestWaiter> | null {
  return (
    scans.deadlines?.tickets(transport, (waiter: RequestWaiter, waitingOn, waitedMs) =>
      waiter.passed(waitingOn, waitedMs),
    ) ?? null
  );
}

/** A refusal of the scan (access/reader-scan.ts) as the route's error, in its envelope. */
export function refusalError(refusal: ReaderScanRefusal | AccessPointRefusal): AppError {
  if (refusal.code === 'validation_failed') return validationError(refusal.errors ?? {});
  return new AppError(refusal.code, refusal.params ?? {});
}

/**
 * Runs a scan and answers it; the engine's ScanError becomes the caller's error (scanErrorRefusal:
 * for `reader`'s scan, or with none, at the access point the request named), and a scan not answered
 * within the bound 503 scan_answer_timeout with Retry-After (the scan goes on: its retry with the
 * same request_id gets its decision).
 */
export async function respondToScan(
  scans: ScanService,
  tickets: Tickets<RequestWaiter> | null,
  request: ScanRequest,
  reader: string | null,
  log?: Logger,
) {
  const waiter = tickets ? new RequestWaiter() : null;
  try {
    const scanning = withTicket(tickets, waiter, (ticket) =>
      scans.scan(ticket ? { ...request, deadline: ticket } : request),
    );
    const first: ScanOutcome | { waitingOn: WaitingOn; waitedMs: number } = waiter
      ? await Promise.race([scanning, waiter.late])
      : await scanning;
    if ('answer' in first) return first.answer;
    const timeoutMs = tickets!.timeoutMs;
    log?.warn(
      { ...first, timeoutMs, source: request.source, requestId: request.requestId ?? undefined },
      'scan not answered within mqtt.answerTimeoutMs, answering 503',
    );
    const retryAfter = tickets!.retryAfterSeconds;
    // retry_after in the body too, as every REST and webhook answer with Retry-After has it
    // (store_busy, 429).
    throw new AppError(
      'scan_answer_timeout',
      { seconds: timeoutMs / 1000, detail: WAITED_FOR[first.waitingOn] },
      { headers: { 'Retry-After': String(retryAfter) }, body: { retry_after: retryAfter } },
    );
  } catch (err) {
    throw refusalError(scanErrorRefusal(err, reader)); // anything but a ScanError is thrown on as it is
  }
}

const scanBody = z.strictObject({
  credential_value: z.string().max(65_536),
  scan_type: z.enum(['barcode', 'qr', 'rfid', 'nfc']).optional(),
  timestamp: z.iso.datetime({ offset: true }).optional().describe('when the scan happened; default now'),
  request_id: requestIdField,
});

export const scanResponseSchema = z.object({
  success: z.boolean(),
  access_granted: z.boolean(),
  reason: z.enum(DENIAL_REASONS).optional().describe("with a denial: one of the spec's six"),
  reason_detail: z
    .enum(REASON_DETAILS)
    .nullable()
    .optional()
    .describe(
      'with a denial: which cause of not_authorized it was (type_not_permitted, already_inside, access_point_inactive, access_point_without_zone), else null',
    ),
  attendee: z.object({ id: z.number().int(), first_name: z.string(), last_name: z.string() }).nullable(),
  event_id: z
    .string()
    .describe(
      "the access event's uuid (the same on a retried request_id): find it in access-events, webhooks and sync",
    ),
});

export function scanRoutes({ scans, now }: { scans: ScanService; now: () => number }): AnyRoute[] {
  const tickets = requestTickets(scans, 'api');
  return [
    defineRoute({
      method: 'POST',
      path: `${PROJECT_PATH}/access-points/{accessPointId}/scan`,
      operationId: 'access-points.scan',
      tags: ['Access points'],
      summary: 'Scan a credential at an access point and get the decision',
      ability: 'access:write',
      rateClass: 'standard',
      project: true,
      params: withId('accessPointId'),
      writes: false, // the decision goes to the access-event journal, a file (event-journal.ts), not SQLite
      conditions: [conditions.scanAnswerTimeout],
      body: scanBody,
      responses: {
        200: { description: 'The decision (granted or denied with its reason)', schema: scanResponseSchema },
        404: { description: 'No such access point', schema: messageSchema },
      },
      handler: async ({ project, params, body, koa }) => {
        const instant = scanInstant(body.timestamp, now());
        if (!instant.ok) throw validationError({ timestamp: [instant.message] });
        const scannedAt = instant.at;
        const request = {
          projectId: project!.id,
          accessPointId: params.accessPointId,
          credentialValue: body.credential_value,
          scannedAt,
          source: 'api' as const,
          requestId: body.request_id ?? null,
        };
        return {
          body: await respondToScan(scans, tickets, request, null, koa.state.log as Logger),
        };
      },
    }),
  ];
}
