import type { Verdict } from '../result.js';
import { maySubscribe, type AclDeps } from './acl.js';
import { stillValid, type IdentityDeps, type MqttIdentity } from './identities.js';

// Whether an MQTT connection may go on as it is (docs/mqtt.md: "When access
// ends"). Its credentials must still hold (token not revoked or expired, user active; a device
// token not replaced), and a staff connection must still be allowed every filter it subscribed,
// asked again with the user as they are now: a membership removed or administrator rights taken
// leave the token valid but the subscription unauthorized. MQTT 3.1.1 cannot take a
// subscription back, so such a connection is closed (broker.ts) and its persistent session
// dropped, so that nothing is queued for it either.

export function connectionHolds(deps: IdentityDeps & AclDeps, who: MqttIdentity, filters: readonly string[]): Verdict {
  if (!stillValid(deps, who))
    return {
      ok: false,
      reason: 'its credentials no longer hold (revoked, expired, or the user deactivated or deleted)',
    };
  if (who.kind !== 'staff') return { ok: true };
  const user = deps.users.find(who.userId);
  if (!user) return { ok: false, reason: 'the user was deleted' };
  const now = { ...who, isAdmin: user.is_admin };
  for (const filter of filters) {
    const verdict = maySubscribe(deps, now, filter);
    if (!verdict.ok) return { ok: false, reason: `no longer allowed ${filter}: ${verdict.reason}` };
  }
  return { ok: true };
}
