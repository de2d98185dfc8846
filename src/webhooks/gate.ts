import type { Context } from 'koa';

// Who may post an incoming webhook, and for which project (spec: Authentication items 9-10).
// Every /webhook/v1 route asks the gate before acting; the gate answers the project the
// request belongs to, or throws the documented 401/403. Signed, allow-listed sources per
// project arrive with the incoming-webhooks issue (8) as another WebhookGate; until then the
// open gate admits every request and names no project, so the route matches by identifier.

export type WebhookKind = 'access-event' | 'gateway-status' | 'registration-partner' | 'attendee-sync' | 'upload-finalized';

export interface WebhookAdmission {
  /** The project of the source whose secret verified; null when the gate names none. */
  projectId: number | null;
}

export interface WebhookGate {
  admit(kind: WebhookKind, ctx: Context, rawBody: Buffer): WebhookAdmission;
}

export const openWebhookGate: WebhookGate = {
  admit: () => ({ projectId: null }),
};
