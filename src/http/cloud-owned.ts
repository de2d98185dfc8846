// REST paths whose writes an edge refuses for its synced project: the cloud owns them (docs/sync.md).
// Only the resources' own CRUD paths (`/readers`, `/readers/{readerId}`): a scan at an access point or a
// reader login stays local. Shared by the pipeline's check (sync/index.ts readOnlyOnEdge) and the OpenAPI
// document (responses.ts); in the core, as a REST contract, for the latter.
const CLOUD_OWNED = /\/(access-zones|access-points|readers|attendee-types|time-restrictions|blocklist)(\/\{\w+\})?$/;
const CLOUD_OWNED_NAMES: Record<string, string> = {
  'access-zones': 'access zones',
  'access-points': 'access points',
  readers: 'readers',
  'attendee-types': 'attendee types',
  'time-restrictions': 'time restrictions',
  blocklist: 'blocklist entries',
};

/** What a route path's resources are called when the cloud owns them, else null. */
export function cloudOwnedResource(path: string): string | null {
  const match = CLOUD_OWNED.exec(path);
  return match ? CLOUD_OWNED_NAMES[match[1]!]! : null;
}
