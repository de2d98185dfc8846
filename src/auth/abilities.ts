// spec: Authentication item 4, the scope table. Abilities match exactly or by `*`; `read`
// grants every GET; there is no other hierarchy (as in Laravel Sanctum).

export const scopes = ['*', 'read', 'attendees:read', 'attendees:write', 'forms:read', 'forms:write', 'access:read', 'access:write'] as const;

export type Scope = (typeof scopes)[number];

/** What a route requires: a scope; `authenticated` = any valid token or session;
 * `public` = no credentials at all. */
/** `sync`: an edge's sync token, on the sync protocol's routes only (sync/edges.ts). */
export type RouteAbility = Scope | 'authenticated' | 'public' | 'sync';

export function abilitiesAllow(abilities: readonly string[], method: string, required: RouteAbility): boolean {
  if (required === 'public' || required === 'authenticated') return true;
  if (required === 'sync') return false;
  if (abilities.includes('*')) return true;
  if ((method === 'GET' || method === 'HEAD') && abilities.includes('read')) return true;
  return abilities.includes(required);
}
