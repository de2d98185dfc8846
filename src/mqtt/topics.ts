// The MQTT topic tree (docs/mqtt.md, "Topics"). {t}/{p} are the team and project
// slugs, {reader} a reader's identifier and {gateway} a gateway's identifier:
//   gatehouse/{t}/{p}/readers/{reader}/scans       reader -> box, QoS 1
//   gatehouse/{t}/{p}/readers/{reader}/decisions   box -> reader, QoS 1
//   gatehouse/{t}/{p}/gateways/{gateway}/status    gateway -> box, retained, last will

export const ROOT = 'gatehouse';

export type TopicLeaf = 'scans' | 'decisions' | 'status';

export interface ParsedTopic {
  teamSlug: string;
  projectSlug: string;
  kind: 'readers' | 'gateways';
  /** The reader's or gateway's identifier; `+` in a subscription filter. */
  identifier: string;
  leaf: TopicLeaf;
}

export const projectPrefix = (teamSlug: string, projectSlug: string) => `${ROOT}/${teamSlug}/${projectSlug}`;
export const readerTopic = (prefix: string, identifier: string, leaf: 'scans' | 'decisions') =>
  `${prefix}/readers/${identifier}/${leaf}`;
export const gatewayStatusTopic = (prefix: string, identifier: string) => `${prefix}/gateways/${identifier}/status`;

/** A topic (or a subscription filter with `+` in the identifier place) of the tree; null for anything else. */
export function parseTopic(topic: string): ParsedTopic | null {
  const parts = topic.split('/');
  if (parts.length !== 6 || parts[0] !== ROOT) return null;
  const [, teamSlug, projectSlug, kind, identifier, leaf] = parts as [string, string, string, string, string, string];
  if (
    !teamSlug ||
    !projectSlug ||
    !identifier ||
    teamSlug.includes('+') ||
    projectSlug.includes('+') ||
    teamSlug.includes('#') ||
    projectSlug.includes('#')
  )
    return null;
  if (identifier !== '+' && /[+#]/.test(identifier)) return null;
  if (kind === 'readers' && (leaf === 'scans' || leaf === 'decisions'))
    return { teamSlug, projectSlug, kind, identifier, leaf };
  if (kind === 'gateways' && leaf === 'status') return { teamSlug, projectSlug, kind, identifier, leaf };
  return null;
}
