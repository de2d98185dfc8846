import type { Project, ProjectRepository } from '../accounts/projects.js';
import type { User, UserRepository } from '../accounts/users.js';
import type { SessionService } from '../auth/sessions.js';
import type { TokenService } from '../auth/tokens.js';
import type { Verdict } from '../result.js';
import { AMBIGUOUS, namedProjects, namesProject, parseChannel, type ChannelTarget } from './channel-access.js';
import { CloseCode } from './protocol.js';

// Who each project-channel subscription was authorized for, so access is checked again when it
// changes, not only at subscribe (docs/realtime.md: "When access ends").
// /broadcasting/auth records a grant per (socket, channel): the user, the token or cookie session
// it acted with, and the one project the name named. pusher:subscribe with that auth string
// claims it (checked once more then); from there the subscription is bound to that project id
// and ends, with its connection, as soon as the user, the credential or the reach it relied on
// does. Grants live as long as their socket, and a socket may hold at most MAX_PER_SOCKET, so
// every signature this server issued for a live socket has its grant: a project channel joined
// without one was signed by whoever else holds the app secret (a Laravel app authorizing its own
// users), and is bound to the project its name names when it joins, but not re-checked here.

export interface Grant {
  userId: number;
  credential: { kind: 'token'; id: number } | { kind: 'session'; idHash: Buffer };
  projectId: number;
}

/** A subscription's project, or why it is refused (as a join by /broadcasting/auth is: channel-access.ts). */
export type Admission = Verdict<{ projectId?: number }, { status: 403 }>;

/** A connection whose access ended: close it with `code`, telling it `message`. */
export interface Ending {
  socketId: string;
  code: number;
  message: string;
}

export interface GrantDeps {
  users: Pick<UserRepository, 'find'>;
  tokens: Pick<TokenService, 'isLive'>;
  sessions: Pick<SessionService, 'isLive'>;
  projects: ProjectRepository;
}

/** Channel authorizations kept per socket; a dashboard asks for a handful. */
export const MAX_PER_SOCKET = 100;

const ended = (message: string) => ({ code: CloseCode.accessEnded, message: `Access ended: ${message}` });
const changed = (message: string) => ({
  code: CloseCode.accessChanged,
  message: `Access changed: ${message}; authorize again`,
});
type Failure = { code: number; message: string };

export class ChannelGrants {
  /** Per live socket: channel -> its grant, and whether the socket has joined the channel with it. */
  readonly #bySocket = new Map<string, Map<string, { grant: Grant; joined: boolean }>>();

  constructor(private readonly deps: GrantDeps) {}

  /** A socket connected / closed (server.ts). */
  opened(socketId: string): void {
    this.#bySocket.set(socketId, new Map());
  }

  closed(socketId: string): void {
    this.#bySocket.delete(socketId);
  }

  /** Records what /broadcasting/auth authorized. `no_socket`: not connected here, so the auth
   * string can never be used (socket ids are random); `too_many`: refuse the authorization. */
  issue(socketId: string, channel: string, grant: Grant): 'issued' | 'no_socket' | 'too_many' {
    const grants = this.#bySocket.get(socketId);
    if (!grants) return 'no_socket';
    const held = grants.get(channel);
    if (held?.joined) return 'issued'; // the joined subscription keeps the grant it was admitted with
    if (!held && grants.size >= MAX_PER_SOCKET) return 'too_many';
    grants.set(channel, { grant, joined: false });
    return 'issued';
  }

  /** At pusher:subscribe, once the auth signature checked out: which
   * project the subscription is bound to, or why it is refused. */
  admit(socketId: string, channel: string): Admission {
    const target = parseChannel(channel);
    if (!target) return { ok: true }; // not one of the appliance's channels: it publishes nothing there
    const held = this.#bySocket.get(socketId)?.get(channel);
    if (!held) {
      // Signed with the app secret by someone else: bound to what the name names now.
      const named = namedProjects(target, this.deps.projects);
      if (named.length > 1) return { ok: false, status: 403, reason: AMBIGUOUS(target.projectSlug) };
      return named[0] ? { ok: true, projectId: named[0].id } : { ok: true };
    }
    const failure = this.#check(held.grant, target, new Lookups(this.deps));
    if (failure) return { ok: false, status: 403, reason: failure.message };
    held.joined = true;
    return { ok: true, projectId: held.grant.projectId };
  }

  /** The socket left the channel (pusher:unsubscribe): the grant stays, so the signature cannot be reused ungranted. */
  left(socketId: string, channel: string): void {
    const held = this.#bySocket.get(socketId)?.get(channel);
    if (held) held.joined = false;
  }

  /** The connections holding a subscription whose access no longer holds: `userId`'s, or everyone's for null. */
  recheck(userId: number | null): Ending[] {
    const lookups = new Lookups(this.deps);
    const endings: Ending[] = [];
    for (const [socketId, grants] of this.#bySocket) {
      let worst: Failure | null = null;
      for (const [channel, { grant, joined }] of grants) {
        if (!joined || (userId !== null && grant.userId !== userId)) continue;
        const failure = this.#check(grant, parseChannel(channel)!, lookups);
        // An ended credential (4009, do not reconnect) outranks a changed reach (4210).
        if (failure && (!worst || failure.code === CloseCode.accessEnded)) worst = failure;
        if (worst?.code === CloseCode.accessEnded) break;
      }
      if (worst) endings.push({ socketId, ...worst });
    }
    return endings;
  }

  #check(grant: Grant, target: ChannelTarget, lookups: Lookups): Failure | null {
    const user = lookups.user(grant.userId);
    if (!user) return ended('the user was deleted');
    if (!user.is_active) return ended('the user was deactivated');
    if (
      grant.credential.kind === 'token'
        ? !lookups.tokenLive(grant.credential.id)
        : !lookups.sessionLive(grant.credential.idHash)
    ) {
      return ended(grant.credential.kind === 'token' ? 'the token was revoked or has expired' : 'the session ended');
    }
    const project = lookups.project(grant.projectId);
    if (!project || !namesProject(target, project))
      return changed('the channel no longer names the project it was authorized for');
    if (!lookups.reachable(user, project.id)) return changed('the user may no longer read this project');
    return null;
  }
}

/** The store reads of one check pass, each made once (many sockets are one user's). */
class Lookups {
  readonly #users = new Map<number, User | null>();
  readonly #tokens = new Map<number, boolean>();
  readonly #sessions = new Map<string, boolean>();
  readonly #projects = new Map<number, Project | null>();
  readonly #reach = new Map<string, boolean>();

  constructor(private readonly deps: GrantDeps) {}

  user(id: number): User | null {
    return memo(this.#users, id, () => this.deps.users.find(id));
  }

  tokenLive(id: number): boolean {
    return memo(this.#tokens, id, () => this.deps.tokens.isLive(id));
  }

  sessionLive(idHash: Buffer): boolean {
    return memo(this.#sessions, idHash.toString('hex'), () => this.deps.sessions.isLive(idHash));
  }

  project(id: number): Project | null {
    return memo(this.#projects, id, () => this.deps.projects.find(id));
  }

  reachable(user: User, projectId: number): boolean {
    return memo(this.#reach, `${user.id}:${projectId}`, () =>
      this.deps.projects.reachable(projectId, { userId: user.id, isAdmin: user.is_admin }),
    );
  }
}

function memo<K, V>(map: Map<K, V>, key: K, read: () => V): V {
  if (map.has(key)) return map.get(key)!;
  const value = read();
  map.set(key, value);
  return value;
}
