import { z } from 'zod';
import type { Readers } from '../venue/readers.js';
import type { ReaderStates } from './reader-state.js';
import { readerHealthSchema, readerStatusSchema } from '../resources/devices.js';
import { type AccessPointResource, accessPointSchema, type ReaderResource, readerSchema } from '../resources/venue.js';

// Readers and access points as REST shows them and AccessPointUpdated announces them (docs/rest.md,
// docs/realtime.md): each reader with the gateway fronting it and its live state (docs/mqtt.md:
// reader state) and refused scans. The versioned resources that sync and the bus carry do not
// hold them: they change without the reader changing, so they are added where the resource is shown.

export const readerViewSchema = readerSchema.extend({
  gateway_id: z.number().int().nullable(),
  status: readerStatusSchema.extend(readerHealthSchema.shape),
});
export const accessPointViewSchema = accessPointSchema.extend({ readers: z.array(readerViewSchema) });
export type ReaderView = z.infer<typeof readerViewSchema>;
export type AccessPointView = z.infer<typeof accessPointViewSchema>;

export interface ReaderViews {
  reader(resource: ReaderResource): ReaderView;
  accessPoint(resource: AccessPointResource): AccessPointView;
}

/** The views as of now: the gateway from the store, the state from the running appliance. */
export function readerViews(
  readers: Pick<Readers, 'gatewayOf'>,
  states: Pick<ReaderStates, 'of' | 'health'>,
): ReaderViews {
  const reader = (r: ReaderResource): ReaderView => ({
    ...r,
    gateway_id: readers.gatewayOf(r.id),
    status: { ...states.of(r.id), ...states.health(r.id) },
  });
  return { reader, accessPoint: (a) => ({ ...a, readers: a.readers.map(reader) }) };
}
