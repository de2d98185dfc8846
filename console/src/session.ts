// The signed-in staff member (docs/auth.md "Cookie sessions"): GET /sanctum/csrf-cookie, then
// POST /api/v1/auth/session through callApi (which echoes the XSRF-TOKEN cookie), the user's
// projects and the chosen one as the toolkit's context. A 401 from any call, a 419 (the cookies
// are gone) or the socket closed with 4009 (the session ended on the appliance) ends it here too:
// `onEnded` sends the page to sign-in, which brings the user back where they were.
import { type CallApiOptions, PluginApiError, type PluginStore } from '@gatehouse/plugin-toolkit';
import { type InjectionKey, inject, ref, watch } from 'vue';

export interface User {
  id: number;
  name: string;
  email: string;
  is_admin: boolean;
}
interface Me extends User {
  current_token: { abilities: string[] };
}
export interface Project {
  id: number;
  name: string;
  slug: string;
  team_slug: string;
  timezone: string;
}

/** Set while this browser holds a session: without it the page does not ask /me (a 401 the browser would log). */
const SIGNED_IN = 'gatehouse.console.signedIn';
const PROJECT = 'gatehouse.console.project';

export const isSessionEnd = (err: unknown): boolean =>
  err instanceof PluginApiError && (err.status === 401 || err.status === 419);

function storage(): Storage | null {
  try {
    return globalThis.localStorage ?? null;
  } catch {
    return null;
  }
}

export function createSession(store: PluginStore) {
  const user = ref<User | null>(null);
  const projects = ref<Project[]>([]);
  const project = ref<Project | null>(null);
  /** What the session may do (GET /me's current_token.abilities): ['*'], or ['read'] for a read-only account. */
  const abilities = ref<string[]>([]);
  /** The session ended by itself (expired, logged out elsewhere): sign-in says so. */
  const ended = ref(false);
  let onEnded: () => void = () => {};

  function forget(): void {
    user.value = null;
    abilities.value = [];
    projects.value = [];
    project.value = null;
    store.disconnectEvents();
    // Signed out, no project: the store drops the records it held for the last one.
    store.setContext({ baseUrl: '', teamSlug: '', projectSlug: '', token: null });
    storage()?.removeItem(SIGNED_IN);
  }

  function choose(next: Project | null): void {
    project.value = next;
    // The socket closed first, so setContext does not reconnect it before connectEvents does.
    store.disconnectEvents();
    if (!next) return;
    storage()?.setItem(PROJECT, `${next.team_slug}/${next.slug}`);
    store.setContext({ baseUrl: '', teamSlug: next.team_slug, projectSlug: next.slug, token: null });
    void store.connectEvents();
  }

  async function loadProjects(): Promise<void> {
    store.setContext({ baseUrl: '', teamSlug: '', projectSlug: '', token: null });
    const list = await store.callApi<Project[]>('projects.index', 'projects', { per_page: 100 });
    projects.value = list;
    const saved = storage()?.getItem(PROJECT);
    choose(list.find((p) => `${p.team_slug}/${p.slug}` === saved) ?? list[0] ?? null);
  }

  async function signIn(email: string, password: string): Promise<void> {
    const cookie = await fetch('/sanctum/csrf-cookie', {
      credentials: 'same-origin',
      headers: { accept: 'application/json' },
    });
    if (!cookie.ok)
      throw new PluginApiError('api', `GET /sanctum/csrf-cookie answered ${cookie.status}`, cookie.status);
    store.setContext({ baseUrl: '', teamSlug: '', projectSlug: '', token: null });
    await store.callApi<User>('auth.session.store', 'session', { email, password });
    await loadMe();
    ended.value = false;
    storage()?.setItem(SIGNED_IN, '1');
    await loadProjects();
  }

  async function loadMe(): Promise<void> {
    const me = await store.callApi<Me>('me.show', 'session');
    abilities.value = me.current_token?.abilities ?? [];
    user.value = { id: me.id, name: me.name, email: me.email, is_admin: me.is_admin };
  }

  /**
   * Whether the session may use a scope (docs/auth.md "Abilities": exact or `*`). The views show an
   * edit control only when it may: a read-only account sees none. The appliance refuses anyway (403).
   */
  function can(scope: string): boolean {
    return abilities.value.includes('*') || abilities.value.includes(scope);
  }

  /** Whether a session is open: the one known here, or the browser's from an earlier visit (GET /me). */
  async function restore(): Promise<boolean> {
    if (user.value) return true;
    if (!storage()?.getItem(SIGNED_IN)) return false;
    try {
      store.setContext({ baseUrl: '', teamSlug: '', projectSlug: '', token: null });
      await loadMe();
      await loadProjects();
      return true;
    } catch (err) {
      if (!isSessionEnd(err)) throw err;
      forget();
      return false;
    }
  }

  async function signOut(): Promise<void> {
    try {
      await store.callApi('auth.session.destroy', 'session');
    } catch (err) {
      if (!isSessionEnd(err)) throw err; // already over: signed out all the same
    }
    ended.value = false;
    forget();
  }

  /** The session is over on the appliance: forget it and let the router take the page to sign-in. */
  function end(): void {
    if (!user.value) return;
    forget();
    ended.value = true;
    onEnded();
  }

  /** callApi for the views: a session that ended on the appliance sends the page to sign-in. */
  async function api<T = unknown>(
    operationId: string,
    identifier: string,
    data: Record<string, unknown> = {},
    options: CallApiOptions = {},
  ): Promise<T> {
    try {
      return await store.callApi<T>(operationId, identifier, data, options);
    } catch (err) {
      if (isSessionEnd(err)) end();
      throw err;
    }
  }

  // Pusher protocol close 4009: the credential the socket was admitted with ended (docs/realtime.md "When access ends").
  watch(
    () => store.connection.error,
    (error) => {
      if (error?.kind === 'connection' && error.status === 4009) end();
      if (error?.kind === 'config' && (error.status === 401 || error.status === 419)) end();
    },
  );

  return {
    user,
    abilities,
    can,
    projects,
    project,
    ended,
    signIn,
    signOut,
    restore,
    choose,
    api,
    end,
    setOnEnded(handler: () => void) {
      onEnded = handler;
    },
  };
}

export type Session = ReturnType<typeof createSession>;
export const SESSION: InjectionKey<Session> = Symbol('gatehouse console session');

export function useSession(): Session {
  const session = inject(SESSION);
  if (!session) throw new Error('the console session is not provided');
  return session;
}
