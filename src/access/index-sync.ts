import type { EventBus } from '../events/bus.js';
import type { Module } from '../lifecycle.js';
import type { Occupancy } from './occupancy.js';
import type { VenueIndex } from './venue-index.js';

// Keeps the in-memory venue index coherent with every committed change, without a reload:
// each domain event carries the resource as REST shows it, which is all the index needs. The
// index takes each change through its own methods; a deleted attendee also leaves occupancy.

export class IndexSync implements Module {
  readonly name = 'venue index sync';

  constructor(
    private readonly bus: EventBus,
    private readonly index: VenueIndex,
    private readonly occupancy: Occupancy,
  ) {}

  start(): void {
    const { bus, index } = this;
    const withProject = (projectId: number, resource: Record<string, unknown>) => ({
      ...resource,
      project_id: projectId,
    });
    bus.on(this, 'project.saved', (e) => index.setTimezone(e.projectId, e.timezone));
    bus.on(this, 'access_zone.created', (e) => index.putZone(withProject(e.projectId, e.resource)));
    bus.on(this, 'access_zone.updated', (e) => index.putZone(withProject(e.projectId, e.resource)));
    bus.on(this, 'access_zone.deleted', (e) => index.dropZone(e.id));
    bus.on(this, 'access_point.created', (e) => index.putAccessPoint(withProject(e.projectId, e.resource)));
    bus.on(this, 'access_point.updated', (e) => index.putAccessPoint(withProject(e.projectId, e.resource)));
    bus.on(this, 'access_point.deleted', (e) => index.dropAccessPoint(e.id));
    bus.on(this, 'reader.created', (e) => index.putReader(withProject(e.projectId, e.resource)));
    bus.on(this, 'reader.updated', (e) => index.putReader(withProject(e.projectId, e.resource)));
    bus.on(this, 'reader.deleted', (e) => index.dropReader(e.id));
    bus.on(this, 'attendee_type.created', (e) => index.putAttendeeType(e.resource));
    bus.on(this, 'attendee_type.updated', (e) => index.putAttendeeType(e.resource));
    bus.on(this, 'attendee_type.deleted', (e) => index.dropAttendeeType(e.id));
    bus.on(this, 'attendee.created', (e) => index.putAttendee(withProject(e.projectId, e.resource)));
    bus.on(this, 'attendee.updated', (e) => index.putAttendee(withProject(e.projectId, e.resource)));
    bus.on(this, 'attendee.deleted', (e) => {
      index.dropAttendee(e.id);
      this.occupancy.forget(e.id);
    });
    bus.on(this, 'attendee.imported', (e) => index.loadImported(e.projectId, e.fromVersion, e.toVersion));
    bus.on(this, 'credential.created', (e) => index.putCredential(withProject(e.projectId, e.resource)));
    bus.on(this, 'credential.revoked', (e) => index.putCredential(withProject(e.projectId, e.resource)));
    bus.on(this, 'credential.deleted', (e) => index.dropCredential(e.id));
    bus.on(this, 'time_restriction.created', (e) => index.putWindow(withProject(e.projectId, e.resource)));
    bus.on(this, 'time_restriction.updated', (e) => index.putWindow(withProject(e.projectId, e.resource)));
    bus.on(this, 'time_restriction.deleted', (e) => index.dropWindow(e.id));
    bus.on(this, 'blocklist_entry.created', (e) => index.putBlock(e.resource));
    bus.on(this, 'blocklist_entry.updated', (e) => index.putBlock(e.resource));
    bus.on(this, 'blocklist_entry.deleted', (e) => index.dropBlock(e.id));
    // A project's public keys (signing-keys.ts): a rotation, a retirement.
    bus.on(this, 'credential_key.created', (e) => index.keys.put(withProject(e.projectId, e.resource)));
    bus.on(this, 'credential_key.updated', (e) => index.keys.put(withProject(e.projectId, e.resource)));
  }

  stop(): void {
    this.bus.removeListeners(this);
  }
}
