import { deviceRoutes } from './devices.js';
import { bridgeDeviceRoutes } from './bridge-devices.js';
import { webhookSourceRoutes } from './webhook-sources.js';
import { uploadWebhookRoutes } from './upload-webhooks.js';
import { AppError } from '../../errors.js';
import type { HttpDeps } from '../deps.js';
import type { AnyRoute } from '../route.js';
import { accessControlRoutes } from './access-control.js';
import { attendeeExportRoutes, attendeeImportRoutes } from './attendee-import.js';
import { attendeeRoutes } from './attendees.js';
import { credentialKeyRoutes } from './credential-keys.js';
import { authRoutes } from './auth.js';
import { personalTokenRoutes } from './personal-tokens.js';
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
import { webhookDeliveryRoutes } from './webhook-deliveries.js';
import { webhookSubscriptionRoutes } from './webhook-subscriptions.js';

/** The route table: every route the appliance serves, in one list. `wingRoutes`: the routes of the
 * wings (sync/routes.ts), which the core does not import; the composition root (app.ts) builds
 * them and they take their place in the table here. */
export function buildRouteTable(deps: HttpDeps, wingRoutes: readonly AnyRoute[] = []): readonly AnyRoute[] {
  const routes: AnyRoute[] = [];
  // Readers of access_events first wait for the journal's ingest (every answered scan in the
  // table); if it is behind for longer than store.readWaitMs, they answer 503 rather than a
  // list missing answered scans (docs/storage.md).
  const eventLogReadable = async (): Promise<void> => {
    const waitMs = deps.config.store.readWaitMs;
    if (await deps.scans.settledWithin(waitMs)) return;
    const seconds = Math.max(1, Math.round(waitMs / 1000));
    throw new AppError('event_log_behind', { seconds }, { headers: { 'Retry-After': String(seconds) } });
  };
  routes.push(
    ...operationRoutes(deps, () => routes),
    ...authRoutes(deps),
    ...personalTokenRoutes(deps),
    ...projectRoutes(deps),
    ...userRoutes(deps),
    ...settingsRoutes(deps),
    ...webhookSourceRoutes(deps),
    ...webhookSubscriptionRoutes(deps),
    ...webhookDeliveryRoutes(deps),
    ...wingRoutes,
    ...uploadWebhookRoutes({ uploads: deps.uploads, gate: deps.webhookGate, projects: deps.projects }),
    ...bridgeDeviceRoutes(deps),
    ...deviceRoutes(deps), // before readers/{readerId}: readers/logins is not an id
    ...accessControlRoutes(deps),
    ...scanRoutes({ scans: deps.scans, now: () => deps.clock.now() }),
    ...accessEventRoutes({ db: () => deps.store.db, settled: eventLogReadable }),
    ...analyticsRoutes({ db: () => deps.store.db, settled: eventLogReadable }),
    ...attendeeImportRoutes({ importer: deps.venue.importer }),
    ...attendeeExportRoutes(deps),
    ...partnerWebhookRoutes(deps), // before attendees/{attendeeId}: attendees/check-ins is not an id
    ...attendeeRoutes(deps),
    ...credentialKeyRoutes(deps),
    ...formRoutes(deps),
    ...broadcastingRoutes(deps),
    ...pusherApiRoutes(deps),
    ...webhookRoutes({
      scans: deps.scans,
      gateways: deps.devices.gateways,
      readerScans: deps.readerScans,
      gate: deps.webhookGate,
    }),
  );
  return routes;
}
