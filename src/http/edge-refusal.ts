import { AppError } from '../errors.js';
import type { IssuedEdge } from '../accounts/issuer-access.js';
import type { HttpDeps } from './deps.js';

/**
 * Why the cloud refuses an edge now, or null. Revoked (or unknown): 401 'Unauthenticated.'.
 * Suspended, because its issuer lost access to the project (found now, or before): 401 with
 * `code: edge_suspended` and the `reason`, until an administrator re-confirms it (docs/sync.md:
 * edges and their issuers). Asked at every request of the sync protocol and again before a long
 * poll answers, so nothing depends on an announcement having been heard.
 */
export function edgeRefusal(
  deps: Pick<HttpDeps, 'issuerAccess'>,
  edge: (IssuedEdge & { revoked_at: string | null }) | null,
): AppError | null {
  if (!edge || edge.revoked_at !== null) return new AppError('unauthenticated');
  const reason = deps.issuerAccess.edgeSuspension(edge);
  return reason ? new AppError('edge_suspended', {}, { body: { code: 'edge_suspended', reason } }) : null;
}
