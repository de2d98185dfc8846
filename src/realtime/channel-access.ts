import type { Project, ProjectRepository } from '../accounts/projects.js';
import type { User } from '../accounts/users.js';
import type { Verdict } from '../result.js';

// The channels this appliance publishes on, and who may subscribe (docs/realtime.md). A
// project is named by its slug as the contract's channel does (`dashboard.project.{projectSlug}
// .access`) or, since slugs are unique per team only, by team and project slug. A bare slug is
// granted only while it names one project, and a subscription is bound to the project it was
// authorized for (grants.ts), so a same-named project of another team, even one created later,
// is never heard on it (docs/security.md, attack 3); the qualified name always works. Every private project
// channel also exists end-to-end encrypted (`private-encrypted-…`): the same
// events, sealed per channel (encryption.ts), for dashboards on networks they do not trust;
// presence channels cannot be encrypted (Pusher: only private channels are).

export const PROJECT_TOPICS = {
  /** AccessGranted, AccessDenied (spec: Real-time events). */
  'dashboard:access': 'access',
  /** AccessPointUpdated (the resource), AccessPointDeleted {id}. */
  'dashboard:access-points': 'access-points',
  /** ZoneOccupancyChanged {access_zone_id, current_count, capacity, available, timestamp}. */
  'console:occupancy': 'occupancy',
  /** Gateway and reader state (MQTT issue): GatewayOnline, GatewayOffline, ReaderStatusChanged. */
  'console:devices': 'devices',
} as const;

export type ProjectTopic = keyof typeof PROJECT_TOPICS;

const SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const SUFFIXES = new Set(['access', 'access-points', 'occupancy', 'devices']);

export interface ChannelTarget {
  kind: 'private' | 'presence';
  /** `private-encrypted-…`: the private channel's events, sealed */
  encrypted: boolean;
  /** null: the bare-slug form */
  teamSlug: string | null;
  projectSlug: string;
  /** null for the console presence channel */
  topic: ProjectTopic | null;
}

/** What a channel name refers to, or null when it is not one of ours. Private channels end in
 * their topic; the one or two segments before it are the (team and) project slug. */
export function parseChannel(name: string): ChannelTarget | null {
  const m = /^(private-encrypted|private|presence)-(dashboard|console)\.project\.(.+)$/.exec(name);
  if (!m) return null;
  const encrypted = m[1] === 'private-encrypted';
  const kind = m[1] === 'presence' ? 'presence' : 'private';
  const area = m[2]!;
  const parts = m[3]!.split('.');
  let topic: ProjectTopic | null = null;
  if (kind === 'private') {
    const suffix = parts.pop()!;
    topic = `${area}:${suffix}` as ProjectTopic;
    if (!SUFFIXES.has(suffix) || !(topic in PROJECT_TOPICS)) return null;
  } else if (area !== 'console') {
    return null;
  }
  if (parts.length < 1 || parts.length > 2 || !parts.every((p) => SLUG.test(p))) return null;
  return { kind, encrypted, teamSlug: parts.length === 2 ? parts[0]! : null, projectSlug: parts.at(-1)!, topic };
}

/** Every name of a project's channel for a topic, plain then encrypted: events go to each one
 * somebody has joined (subscribers pick any). */
export function projectChannels(project: Pick<Project, 'slug' | 'team_slug'>, topic: ProjectTopic): string[] {
  const [area, suffix] = topic.split(':') as [string, string];
  const names = [
    `${area}.project.${project.slug}.${suffix}`,
    `${area}.project.${project.team_slug}.${project.slug}.${suffix}`,
  ];
  return [...names.map((n) => `private-${n}`), ...names.map((n) => `private-encrypted-${n}`)];
}

export const READ_ABILITIES = ['*', 'read', 'access:read'];

export type ChannelVerdict = Verdict<{ project: Project }, { status: 403 | 404 }>;

/** The projects a channel's name names now: one for a
 * team-qualified name, every project with the slug for a bare one. */
export function namedProjects(target: ChannelTarget, projects: ProjectRepository): Project[] {
  if (target.teamSlug !== null)
    return [projects.findBySlugs(target.teamSlug, target.projectSlug)].filter((p): p is Project => p !== null);
  return projects.findAllBySlug(target.projectSlug);
}

/** Whether the name still names this project (its slug or its team's may have changed since). */
export function namesProject(target: ChannelTarget, project: Pick<Project, 'slug' | 'team_slug'>): boolean {
  return project.slug === target.projectSlug && (target.teamSlug === null || target.teamSlug === project.team_slug);
}

export const AMBIGUOUS = (slug: string) =>
  `The slug ${slug} names projects in several teams: use the team-qualified channel name (…project.{teamSlug}.${slug}…)`;

/**
 * May this user, acting with these abilities, subscribe to the channel? A subscription is bound
 * to the one project its name named when it was authorized (docs/security.md, attack 3): a bare slug that
 * names projects in several teams is refused, to administrators too, since it would not say
 * which project's events the subscriber means.
 */
export function mayJoin(
  channel: string,
  user: User,
  abilities: readonly string[],
  projects: ProjectRepository,
): ChannelVerdict {
  const target = parseChannel(channel);
  if (!target) return { ok: false, status: 404, reason: 'No such channel on this server' };
  if (!abilities.some((a) => READ_ABILITIES.includes(a)))
    return { ok: false, status: 403, reason: 'The token may not read access events (needs *, read or access:read)' };
  const named = namedProjects(target, projects);
  if (named.length > 1) return { ok: false, status: 403, reason: AMBIGUOUS(target.projectSlug) };
  const project = named[0];
  if (!project || !projects.reachable(project.id, { userId: user.id, isAdmin: user.is_admin }))
    return { ok: false, status: 403, reason: 'The user may not read this project' };
  return { ok: true, project };
}
