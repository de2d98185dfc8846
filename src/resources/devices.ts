import { z } from 'zod';

// Gateways and readers' state as REST shows them and the bus and the console's devices channel
// carry them (docs/mqtt.md: reader state). A leaf (zod only), like venue.ts.

export const gatewaySchema = z.object({
  id: z.number().int(),
  identifier: z.string(),
  name: z.string().nullable(),
  status: z.string().describe('online, offline, unknown, or what the gateway last reported'),
  last_seen: z.string().nullable(),
  reader_ids: z.array(z.number().int()),
  last_report: z.record(z.string(), z.unknown()).nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type GatewayResource = z.infer<typeof gatewaySchema>;

export const readerStatusSchema = z.object({
  status: z.enum(['online', 'offline', 'unknown']),
  connected_via: z.enum(['mqtt', 'bridge', 'gateway']).nullable(),
  gateway_status: z.string().nullable(),
  last_seen: z.string().nullable(),
  last_scan: z.string().nullable(),
});

/**
 * What REST adds to a reader's state: scans of the reader the broker refused before a decision
 * (malformed, too large, the reader without an access point, its access point inactive), since
 * the appliance started. Not announced: ReaderStatusChanged and the reader.offline webhook keep
 * their shape.
 */
export const readerHealthSchema = z.object({
  errors: z
    .number()
    .int()
    .describe('scans refused before a decision since start (malformed, too large, not decidable)'),
  last_error: z
    .string()
    .nullable()
    .describe("the latest refusal's error code (docs/mqtt.md: malformed scans), e.g. malformed_json"),
  last_error_at: z.string().nullable(),
});
export type ReaderHealth = z.infer<typeof readerHealthSchema>;

export interface ReaderStatus {
  status: 'online' | 'offline' | 'unknown';
  /**
   * `mqtt` while the reader holds a broker connection; `bridge` while a device plugged into the box acts as it;
   * `gateway` when a gateway reported it.
   */
  connected_via: 'mqtt' | 'bridge' | 'gateway' | null;
  /** As the gateway reported it (`connected` occurs in the spec), else null. */
  gateway_status: string | null;
  last_seen: string | null;
  last_scan: string | null;
}
