// The sync protocol's version (docs/sync.md): every request from an edge names the version it
// speaks in PROTOCOL_HEADER; the request pipeline (pipeline.ts) answers 409
// sync_protocol_unsupported to one this build's cloud does not serve. In the core because the
// pipeline checks it; the sync wing (sync/link.ts, sync/routes.ts) takes it from here.

export const PROTOCOL_VERSION = 1;
/** The versions this build's cloud serves. */
export const SUPPORTED_PROTOCOLS: readonly number[] = [1];
export const PROTOCOL_HEADER = 'Gatehouse-Sync-Protocol';
