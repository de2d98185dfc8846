import { deviceRoutes } from './devices.js';
import { webhookSourceRoutes } from './webhook-sources.js';
import { uploadWebhookRoutes } from './upload-webhooks.js';
import type { HttpDeps } from '../deps.js';
import type { AnyRoute } from '../route.js';
import { accessControlRoutes } from './access-control.js';
import { attendeeExportRoutes, attendeeImportRoutes } from './attendee-import.js';
import { attendeeRoutes } from './attendees.js';
import { authRoutes } from './auth.js';
import { formRoutes } from './forms.js';
import { scanRoutes } from './scan.js';
import { accessEventRoutes } from './access-events.js';
import { operationRoutes } from './operations.js';
import { projectRoutes } from './projects.js';
import { settingsRoutes } from './settings.js';
import { userRoutes } from './users.js';
import { webhookRoutes } from './webhooks.js';
import { partnerWebhookRoutes } from './partner-webhooks.js';
import { analyticsRoutes } from './analytics.js';
import { broadcastingRoutes } from './broadcasting.js';
import { pusherApiRoutes } from './pusher-api.js';

/** The route table: every route the appliance serves, in one list. */
export function buildRouteTable(deps: HttpDeps): readonly AnyRoute[] {
  const routes: AnyRoute[] = [];
  routes.push(
    ...operationRoutes(deps, () => routes),
    ...authRoutes(deps),
    ...projectRoutes(deps),
    ...userRoutes(deps),
    ...settingsRoutes(deps),
    ...webhookSourceRoutes(deps),
    ...uploadWebhookRoutes({ uploads: deps.uploads, gate: deps.webhookGate, projects: deps.projects }),
    ...deviceRoutes(deps), // before readers/{readerId}: readers/logins is not an id
    ...accessControlRoutes(deps),
    ...scanRoutes({ scans: deps.scans, now: () => deps.clock.now() }),
    ...accessEventRoutes({ db: () => deps.store.db, settled: () => deps.scans.settled() }),
    ...analyticsRoutes({ db: () => deps.store.db, settled: () => deps.scans.settled() }),
    ...attendeeImportRoutes({ importer: deps.venue.importer }),
    ...attendeeExportRoutes(deps),
    ...partnerWebhookRoutes(deps), // before attendees/{attendeeId}: attendees/check-ins is not an id
    ...attendeeRoutes(deps),
    ...formRoutes(deps),
    ...broadcastingRoutes(deps),
    ...pusherApiRoutes(deps),
    ...webhookRoutes({ scans: deps.scans, gateways: deps.devices.gateways, readerStates: deps.devices.readerStates, index: deps.venueIndex, gate: deps.webhookGate, now: () => deps.clock.now() }),
  );
  return routes;
}
