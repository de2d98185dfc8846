import { z } from 'zod';
import { ScanError } from '../../access/engine.js';
import type { ScanRequest, ScanService } from '../../access/scan-service.js';
import { AppError, validationError } from '../../errors.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { messageSchema } from '../resources.js';
import { PROJECT_PATH, withId } from './crud.js';
import { scanInstant } from '../../access/scan-time.js';

// POST .../access-points/{id}/scan (DESIGN: routes we add): an authenticated client scans
// at a door and gets the access-event webhook's answer. The decision's access event is
// durable (in the access-event journal) before this answers. Timestamps: docs/engine.md.

export const requestIdField = z
  .string()
  .min(1)
  .max(128)
  .optional()
  .describe("the sender's id for this scan: a retry with the same id gets the first decision back and writes no second event");

/** Runs a scan and answers it; the engine's ScanError becomes the documented HTTP error. */
export async function answerScan(scans: ScanService, request: ScanRequest, unknownAccessPoint: () => AppError) {
  try {
    return (await scans.scan(request)).answer;
  } catch (err) {
    if (!(err instanceof ScanError)) throw err;
    if (err.code === 'unknown_access_point') throw unknownAccessPoint();
    throw new AppError(err.code);
  }
}

const scanBody = z.strictObject({
  credential_value: z.string().max(65_536),
  scan_type: z.enum(['barcode', 'qr', 'rfid', 'nfc']).optional(),
  timestamp: z.iso.datetime({ offset: true }).optional().describe('when the scan happened; default now'),
  request_id: requestIdField,
});

export const answerSchema = z.object({
  success: z.boolean(),
  access_granted: z.boolean(),
  reason: z.enum(['invalid_credential', 'not_authorized', 'expired', 'capacity_exceeded', 'time_restricted', 'blocklisted']).optional(),
  attendee: z.object({ id: z.number().int(), first_name: z.string(), last_name: z.string() }).nullable(),
});

export function scanRoutes({ scans, now }: { scans: ScanService; now: () => number }): AnyRoute[] {
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
      body: scanBody,
      responses: {
        200: { description: 'The decision (granted or denied with its reason)', schema: answerSchema },
        404: { description: 'No such access point', schema: messageSchema },
        409: { description: 'The access point is inactive or leads into no zone', schema: messageSchema },
      },
      handler: async ({ project, params, body }) => {
        const instant = scanInstant(body.timestamp, now());
        if (!instant.ok) throw validationError({ timestamp: [instant.message] });
        const scannedAt = instant.at;
        const request = { projectId: project!.id, accessPointId: params.accessPointId, credentialValue: body.credential_value, scannedAt, source: 'api' as const, requestId: body.request_id ?? null };
        return { body: await answerScan(scans, request, () => new AppError('not_found', { resource: 'Access point' })) };
      },
    }),
  ];
}
