import type { ExternalChanges } from '../src/access/external-changes.js';
import type { Occupancy } from '../src/access/occupancy.js';
import type { VenueIndex } from '../src/access/venue-index.js';
import type { ProjectRepository } from '../src/accounts/projects.js';
import type { TeamRepository } from '../src/accounts/teams.js';
import type { Clock } from '../src/clock.js';
import type { ClockOffset } from '../src/clock-offset.js';
import type { Config } from '../src/config/schema.js';
import type { EventBus } from '../src/events/bus.js';
import type { Feed } from '../src/feed/feed.js';
import type { Logger } from '../src/logger.js';
import type { Database } from '../src/store/database.js';

// What cloud sync's services take from the core (index.ts builds them; edge-run.ts hands the
// edge's share to its loops). Apart from index.ts so the edge's modules can name it without a cycle.

export interface SyncDepsIn {
  db: Database;
  clock: Clock;
  bus: EventBus;
  config: Readonly<Config>;
  log: Logger;
  feed: Feed;
  occupancy: Occupancy;
  index: VenueIndex;
  externalChanges: ExternalChanges;
  teams: TeamRepository;
  projects: ProjectRepository;
  appVersion: string;
  scansSoFar: () => number;
  /** On an edge: its clock against the cloud's, shared with the scan service that stamps it on events. */
  clockOffset: ClockOffset;
}
