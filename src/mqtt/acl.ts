import type { ProjectRepository } from '../accounts/projects.js';
import { abilitiesAllow } from '../auth/abilities.js';
import type { Verdict } from '../result.js';
import type { MqttIdentity } from './identities.js';
import { parseTopic, gatewayStatusTopic } from './topics.js';

// Who may publish and subscribe to what (docs/mqtt.md: ACL). Everything not
// listed is refused: a forbidden PUBLISH disconnects the client (MQTT 3.1.1 has no way to
// refuse one), a forbidden SUBSCRIBE is answered 0x80 in the SUBACK.
//   reader   publishes its scans topic; subscribes its decisions topic.
//   gateway  publishes its status topic and the scans topics of the readers it fronts;
//            subscribes their decisions topics, one by one or as readers/+/decisions (then
//            only its readers' decisions are forwarded to it).
//   staff    an API token with `*`, `read` or `access:read` on the project: subscribes read-only
//            to readers/+|{reader}/decisions and gateways/+|{gateway}/status; publishes nothing.

export interface AclDeps {
  projects: ProjectRepository;
  /** The gateway fronting the reader with this identifier in the project, or null (a read on readers). */
  gatewayOfReader(projectId: number, identifier: string): number | null;
}

const ok: Verdict = { ok: true };
const no = (reason: string): Verdict => ({ ok: false, reason });

export function mayPublish(deps: AclDeps, who: MqttIdentity, topic: string): Verdict {
  if (who.kind === 'staff') return no('staff connections are read-only');
  if (who.kind === 'reader') return topic === who.scansTopic ? ok : no(`a reader publishes only to ${who.scansTopic}`);
  if (topic === gatewayStatusTopic(who.prefix, who.identifier)) return ok;
  const parsed = parseTopic(topic);
  if (
    parsed &&
    parsed.kind === 'readers' &&
    parsed.leaf === 'scans' &&
    topic.startsWith(`${who.prefix}/`) &&
    deps.gatewayOfReader(who.projectId, parsed.identifier) === who.gatewayId
  )
    return ok;
  return no('a gateway publishes only its status topic and the scans topics of the readers it fronts');
}

export function maySubscribe(deps: AclDeps, who: MqttIdentity, filter: string): Verdict {
  if (who.kind === 'reader')
    return filter === who.decisionsTopic ? ok : no(`a reader subscribes only to ${who.decisionsTopic}`);
  const parsed = parseTopic(filter);
  if (!parsed) return no('not a topic of this broker');
  if (who.kind === 'gateway') {
    if (!filter.startsWith(`${who.prefix}/`) || parsed.kind !== 'readers' || parsed.leaf !== 'decisions')
      return no('a gateway subscribes only to the decisions of its readers');
    if (parsed.identifier === '+' || deps.gatewayOfReader(who.projectId, parsed.identifier) === who.gatewayId)
      return ok;
    return no(`the reader ${parsed.identifier} is not fronted by this gateway`);
  }
  if (parsed.leaf === 'scans') return no('scans are not readable');
  const project = deps.projects.findReachable(parsed.teamSlug, parsed.projectSlug, {
    userId: who.userId,
    isAdmin: who.isAdmin,
  });
  if (!project) return no('no such project for this user');
  if (!abilitiesAllow(who.abilities, 'GET', 'access:read')) return no('the token lacks access:read');
  return ok;
}

/** authorizeForward: a gateway subscribed to readers/+/decisions gets only its readers' decisions. */
export function mayReceive(deps: AclDeps, who: MqttIdentity | undefined, topic: string): boolean {
  if (who?.kind !== 'gateway') return true;
  const parsed = parseTopic(topic);
  if (parsed?.kind !== 'readers') return true;
  return deps.gatewayOfReader(who.projectId, parsed.identifier) === who.gatewayId;
}
