import type { EventBus } from '../events/bus.js';
import type { PermissionsChangeReason } from '../events/types.js';
import type { Module } from '../lifecycle.js';
import type { Logger } from '../logger.js';
import type { ProjectRepository } from './projects.js';
import type { UserRepository } from './users.js';

// Credentials a user issues that then act without them: an edge's sync token (sync/edges.ts)
// and an outgoing webhook subscription (outgoing-webhooks/subscriptions.ts). Each stands on its
// issuer's access to its project: the issuer active and still reaching the project (an
// administrator, or a team or project membership). This module is the one place that decides
// whether it still does, and what happens when it does not (docs/security.md "Credentials
// outlive their issuer"):
// - an edge is suspended (refused with 401 edge_suspended) until an administrator re-confirms it;
// - a subscription is disabled (webhook.endpoint_disabled, owner_lost_access) until someone with
//   access re-enables it.
// Two ways in, so nothing depends on catching every change: after a change that can take access
// away is committed and announced (`permissions.changed`), the credentials of that user are checked at
// once; and each is checked again where it is used (every request of an edge, every delivery
// attempt), which catches changes no announcement reaches (the CLI in another process).

/** An edge as far as its issuer goes (sync/edges.ts EdgeRow). */
export interface IssuedEdge {
  id: number;
  project_id: number;
  issued_by: number | null;
  suspended_at: string | null;
  suspended_reason: 'issuer_lost_access' | null;
}

/** A subscription as far as its owner goes (outgoing-webhooks/subscriptions.ts SubscriptionRow). */
export interface OwnedSubscription {
  id: number;
  project_id: number;
  user_id: number | null;
  url: string;
  active: number;
}

export interface IssuedCredentials {
  edges: {
    /** Live edges standing on this user's access, or on nobody's (their issuer was deleted). */
    standingOn(userId: number | null): IssuedEdge[];
    suspend(edge: IssuedEdge, reason: 'issuer_lost_access'): void;
  };
  subscriptions: {
    /** Active subscriptions owned by this user, or by nobody (their owner was deleted). */
    activeOwnedBy(userId: number | null): OwnedSubscription[];
    /** False when it was not active (disabled meanwhile). */
    disable(row: OwnedSubscription, reason: 'owner_lost_access'): boolean;
  };
}

/**
 * The changes that can take a user's access to a project away (a revoked token or an ended session leaves the user's
 * own access as it was).
 */
const LOSSES: ReadonlySet<PermissionsChangeReason> = new Set([
  'user_deactivated',
  'user_demoted',
  'user_deleted',
  'membership_removed',
]);

export class IssuerAccess implements Module {
  readonly name = 'issuer access';

  constructor(
    private readonly bus: EventBus,
    private readonly users: Pick<UserRepository, 'find'>,
    private readonly projects: Pick<ProjectRepository, 'reachable'>,
    private readonly issued: IssuedCredentials,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.bus.on(this, 'permissions.changed', (e) => {
      if (LOSSES.has(e.reason)) this.recheck(e.userId);
    });
  }

  stop(): void {
    this.bus.removeListeners(this);
  }

  /** Whether the user is active and reaches the project (null: a deleted user, who holds nothing). */
  holds(userId: number | null, projectId: number): boolean {
    const user = userId === null ? null : this.users.find(userId);
    return user?.is_active === true && this.projects.reachable(projectId, { userId: user.id, isAdmin: user.is_admin });
  }

  /** At every request of an edge: why it is refused (suspended now if its issuer lost access), or null. */
  edgeSuspension(edge: IssuedEdge): 'issuer_lost_access' | null {
    if (edge.suspended_at !== null) return edge.suspended_reason ?? 'issuer_lost_access';
    if (this.holds(edge.issued_by, edge.project_id)) return null;
    this.issued.edges.suspend(edge, 'issuer_lost_access');
    this.log.warn(
      { edge: edge.id, issuer: edge.issued_by, project: edge.project_id },
      'edge suspended: its issuer lost access to the project; an administrator re-confirms it',
    );
    return 'issuer_lost_access';
  }

  /** Before every delivery attempt: whether the subscription may send (disabled now if its owner lost access). */
  subscriptionHolds(row: OwnedSubscription): boolean {
    if (this.holds(row.user_id, row.project_id)) return true;
    if (row.active === 1 && this.issued.subscriptions.disable(row, 'owner_lost_access')) {
      this.log.warn(
        { subscription: row.id, owner: row.user_id, project: row.project_id },
        'webhook subscription disabled: its owner lost access to the project',
      );
    }
    return false;
  }

  /** After an access change of `userId` (null: no one in particular):
   * their edges and subscriptions, and any left without an issuer. */
  recheck(userId: number | null): void {
    for (const edge of this.issued.edges.standingOn(userId)) this.edgeSuspension(edge);
    for (const row of this.issued.subscriptions.activeOwnedBy(userId)) this.subscriptionHolds(row);
  }
}
