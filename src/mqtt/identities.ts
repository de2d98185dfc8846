import type { ProjectRepository } from '../accounts/projects.js';
import type { UserRepository } from '../accounts/users.js';
import type { VenueIndex } from '../access/venue-index.js';
import { effectiveAbilities } from '../auth/abilities.js';
import type { TokenService } from '../auth/tokens.js';
import type { DeviceTokens } from '../devices/device-tokens.js';
import type { Gateways } from '../devices/gateways.js';
import { projectPrefix, readerTopic } from './topics.js';

// Who is on the other end of an MQTT connection (docs/mqtt.md: credentials). The password is
// a token; its shape says whose: `reader:<id>:<secret>` (from OTP verify), `gateway:<id>:<secret>`
// (issued over REST) or a staff API token `<id>|<secret>`. Readers and gateways must also give
// their identifier as the username, so a swapped configuration fails loudly at CONNECT.

export type MqttIdentity =
  | {
      kind: 'reader';
      projectId: number;
      readerId: number;
      identifier: string;
      prefix: string;
      tokenId: number;
      scansTopic: string;
      decisionsTopic: string;
    }
  | { kind: 'gateway'; projectId: number; gatewayId: number; identifier: string; prefix: string; tokenId: number }
  | { kind: 'staff'; userId: number; isAdmin: boolean; abilities: readonly string[]; tokenId: number; email: string };

/** CONNACK return codes of MQTT 3.1.1 (table 3.1). */
export const ConnackCode = { serverUnavailable: 3, badUsernameOrPassword: 4, notAuthorized: 5 } as const;

export type AuthOutcome =
  | { identity: MqttIdentity }
  | { refused: (typeof ConnackCode)[keyof typeof ConnackCode]; reason: string };

export interface IdentityDeps {
  deviceTokens: DeviceTokens;
  tokens: TokenService;
  users: UserRepository;
  projects: ProjectRepository;
  gateways: Gateways;
  index: VenueIndex;
}

export function identify(deps: IdentityDeps, username: string | undefined, password: Buffer | undefined): AuthOutcome {
  const secret = password?.toString('utf8') ?? '';
  if (!secret)
    return { refused: ConnackCode.badUsernameOrPassword, reason: 'no password (a reader, gateway or API token)' };
  if (secret.startsWith('reader:') || secret.startsWith('gateway:')) return device(deps, username, secret);
  const record = deps.tokens.verify(secret);
  if (!record) return { refused: ConnackCode.badUsernameOrPassword, reason: 'unknown, revoked or expired token' };
  const user = deps.users.find(record.userId);
  if (!user?.is_active) return { refused: ConnackCode.badUsernameOrPassword, reason: 'the token owner is inactive' };
  deps.tokens.touch(record);
  return {
    identity: {
      kind: 'staff',
      userId: user.id,
      isAdmin: user.is_admin,
      abilities: effectiveAbilities(user, record.abilities),
      tokenId: record.id,
      email: user.email,
    },
  };
}

function device(deps: IdentityDeps, username: string | undefined, secret: string): AuthOutcome {
  const token = deps.deviceTokens.verify(secret);
  if (!token) return { refused: ConnackCode.badUsernameOrPassword, reason: 'unknown, revoked or expired device token' };
  const project = deps.projects.find(token.projectId);
  if (!project) return { refused: ConnackCode.notAuthorized, reason: 'the project is gone' };
  const prefix = projectPrefix(project.team_slug, project.slug);
  if (token.kind === 'reader') {
    const reader = deps.index.readerById(token.deviceId);
    if (!reader) return { refused: ConnackCode.notAuthorized, reason: 'the reader is gone' };
    if (username !== reader.identifier)
      return {
        refused: ConnackCode.badUsernameOrPassword,
        reason: `the username must be the reader identifier ${reader.identifier}`,
      };
    const topics = {
      scansTopic: readerTopic(prefix, reader.identifier, 'scans'),
      decisionsTopic: readerTopic(prefix, reader.identifier, 'decisions'),
    };
    return {
      identity: {
        kind: 'reader',
        projectId: project.id,
        readerId: reader.id,
        identifier: reader.identifier,
        prefix,
        tokenId: token.id,
        ...topics,
      },
    };
  }
  const gateway = deps.gateways.byId(token.deviceId);
  if (!gateway) return { refused: ConnackCode.notAuthorized, reason: 'the gateway is gone' };
  if (username !== gateway.identifier)
    return {
      refused: ConnackCode.badUsernameOrPassword,
      reason: `the username must be the gateway identifier ${gateway.identifier}`,
    };
  return {
    identity: {
      kind: 'gateway',
      projectId: project.id,
      gatewayId: gateway.id,
      identifier: gateway.identifier,
      prefix,
      tokenId: token.id,
    },
  };
}

/** Whether the credentials a connection was admitted with still hold (revoked, expired, user deactivated). */
export function stillValid(deps: IdentityDeps, who: MqttIdentity): boolean {
  if (who.kind !== 'staff') return deps.deviceTokens.isLive(who.tokenId);
  return deps.tokens.isLive(who.tokenId) && deps.users.find(who.userId)?.is_active === true;
}

/** A short description for logs (never the token). */
export const describeIdentity = (i: MqttIdentity) =>
  i.kind === 'staff' ? `staff ${i.email}` : i.kind === 'reader' ? `reader ${i.identifier}` : `gateway ${i.identifier}`;
