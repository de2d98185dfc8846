import type { EventBus } from '../events/bus.js';
import type { VenueIndex } from './venue-index.js';

// Keeps the in-memory venue index coherent with every committed change, without a reload:
// each domain event carries the resource as REST shows it, which is all the index needs.

export function syncIndexFromBus(bus: EventBus, index: VenueIndex, owner: object): void {
  const withProject = (projectId: number, resource: Record<string, unknown>) => ({ ...resource, project_id: projectId });
  bus.on(owner, 'project.saved', (e) => index.timezones.set(e.projectId, e.timezone));
  bus.on(owner, 'access_zone.created', (e) => index.putZone(withProject(e.projectId, e.resource)));
  bus.on(owner, 'access_zone.updated', (e) => index.putZone(withProject(e.projectId, e.resource)));
  bus.on(owner, 'access_zone.deleted', (e) => index.zones.delete(e.id));
  bus.on(owner, 'access_point.created', (e) => index.putAccessPoint(withProject(e.projectId, e.resource)));
  bus.on(owner, 'access_point.updated', (e) => index.putAccessPoint(withProject(e.projectId, e.resource)));
  bus.on(owner, 'access_point.deleted', (e) => index.accessPoints.delete(e.id));
  bus.on(owner, 'reader.created', (e) => index.putReader(withProject(e.projectId, e.resource)));
  bus.on(owner, 'reader.updated', (e) => index.putReader(withProject(e.projectId, e.resource)));
  bus.on(owner, 'reader.deleted', (e) => index.dropReader(e.id));
  const putType = (e: { resource: Record<string, unknown> }) => index.typeZones.set(e.resource.id as number, new Set(e.resource.zone_ids as number[]));
  bus.on(owner, 'attendee_type.created', putType);
  bus.on(owner, 'attendee_type.updated', putType);
  bus.on(owner, 'attendee_type.deleted', (e) => index.typeZones.delete(e.id));
  bus.on(owner, 'attendee.created', (e) => index.putAttendee(withProject(e.projectId, e.resource)));
  bus.on(owner, 'attendee.updated', (e) => index.putAttendee(withProject(e.projectId, e.resource)));
  bus.on(owner, 'attendee.deleted', (e) => index.attendees.delete(e.id));
  bus.on(owner, 'attendee.imported', (e) => index.loadImported(e.projectId, e.fromVersion, e.toVersion));
  bus.on(owner, 'credential.created', (e) => index.putCredential(withProject(e.projectId, e.resource)));
  bus.on(owner, 'credential.revoked', (e) => index.putCredential(withProject(e.projectId, e.resource)));
  bus.on(owner, 'credential.deleted', (e) => index.dropCredential(e.id));
  bus.on(owner, 'time_restriction.created', (e) => index.putWindow(withProject(e.projectId, e.resource)));
  bus.on(owner, 'time_restriction.updated', (e) => index.putWindow(withProject(e.projectId, e.resource)));
  bus.on(owner, 'time_restriction.deleted', (e) => index.dropWindow(e.id));
  bus.on(owner, 'blocklist_entry.created', (e) => index.putBlock(e.resource));
  bus.on(owner, 'blocklist_entry.updated', (e) => index.putBlock(e.resource));
  bus.on(owner, 'blocklist_entry.deleted', (e) => index.dropBlock(e.id));
}
