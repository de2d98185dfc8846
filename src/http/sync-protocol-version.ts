// The sync protocol's version (docs/sync.md: protocol versions): every request from an edge names
// the version it speaks in PROTOCOL_HEADER; the request pipeline (pipeline.ts) answers 409
// sync_protocol_unsupported to one this build's cloud does not serve, and otherwise the routes
// answer in the version named. In the core because the pipeline checks it; the sync wing
// (sync/link.ts, sync/routes.ts) takes it from here.
//
// 1: the first.
// 2: signed credentials (docs/credentials.md): change and revocation pages carry the projects'
//    public keys (`credential_key`), and an upload's access events `offline_verified` and the
//    reason details of a signed value (signature_invalid, unknown_key, key_retired,
//    verification_busy). A cloud answers a request of version 1 without them, and an edge
//    speaking 1 to an older cloud sends none.

export const PROTOCOL_VERSION = 2;
/** The versions this build serves as a cloud and speaks as an edge, oldest first. */
export const SUPPORTED_PROTOCOLS: readonly number[] = [1, 2];
/** The first version whose pages carry public keys and whose uploads carry offline decisions. */
export const SIGNED_CREDENTIALS_PROTOCOL = 2;
export const PROTOCOL_HEADER = 'Gatehouse-Sync-Protocol';
