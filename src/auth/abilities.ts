// spec: Authentication item 4, the scope table. Abilities match exactly or by `*`; `read`
// grants every GET; there is no other hierarchy (as in Laravel Sanctum). One scope of ours,
// `sync:edges` (issuing an edge: a sync token that acts without its issuer, docs/auth.md), is
// not in `*` for everyone: an administrator's `*` covers it; anyone else's token must name it.

export const scopes = [
  '*',
  'read',
  'attendees:read',
  'attendees:write',
  'forms:read',
  'forms:write',
  'access:read',
  'access:write',
  'sync:edges',
] as const;

export type Scope = (typeof scopes)[number];

/** What a route requires: a scope; `authenticated` = any valid token or session;
 * `public` = no credentials at all. */
/** `sync`: an edge's sync token, on the sync protocol's routes only (sync/edges.ts). */
export type RouteAbility = Scope | 'authenticated' | 'public' | 'sync';

/** The scopes that only read: `read` and each area's `:read`. */
export const readScopes: readonly Scope[] = scopes.filter((s) => s === 'read' || s.endsWith(':read'));

/** Scopes `*` does not bring, except to an administrator: a token of anyone else must name them. */
export const namedOnly: readonly Scope[] = ['sync:edges'];

/**
 * What a principal may do: what its token was given (a session: `*`), capped to the read scopes for
 * a read-only account (`*` becomes `read`; write scopes are dropped). Applied on every request, so
 * making an account read-only reaches its existing tokens and sessions at once.
 */
export function effectiveAbilities(user: { read_only: boolean }, abilities: readonly string[]): string[] {
  if (!user.read_only) return [...abilities];
  return [
    ...new Set(
      abilities.flatMap((a) => (a === '*' ? ['read'] : (readScopes as readonly string[]).includes(a) ? [a] : [])),
    ),
  ];
}

/** Whether a principal holding `held` may give a token `scope` (no token gets more than its maker has). */
export function mayGrant(held: readonly string[], scope: string): boolean {
  if (held.includes('*') || held.includes(scope)) return true;
  return held.includes('read') && (readScopes as readonly string[]).includes(scope);
}

/** Whether `abilities` reach a route requiring `required`; `isAdmin`: the
 * holder is an administrator now (their `*` brings the named-only scopes). */
export function abilitiesAllow(
  abilities: readonly string[],
  method: string,
  required: RouteAbility,
  isAdmin = false,
): boolean {
  if (required === 'public' || required === 'authenticated') return true;
  if (required === 'sync') return false;
  if ((namedOnly as readonly string[]).includes(required))
    return abilities.includes(required) || (isAdmin && abilities.includes('*'));
  if (abilities.includes('*')) return true;
  if ((method === 'GET' || method === 'HEAD') && abilities.includes('read')) return true;
  return abilities.includes(required);
}
