import { z } from 'zod';
import { scopes } from '../../auth/abilities.js';
import type { TokenRecord } from '../../auth/tokens.js';
import { found } from '../../errors.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { messageSchema, single, validationErrorSchema } from '../resources.js';

// The dashboard's Settings → API tokens (spec: Token lifecycle, "token creation in the dashboard";
// docs/auth.md "Tokens of the signed-in user"): the signed-in user's own tokens,
// listed with their last use, created with chosen scopes (the value shown once), revoked one by one.
// Nobody reaches another user's tokens (404). Made with `*` (a session, or a full token).

const timestamp = z.string().describe('ISO 8601 timestamp in UTC');
export const personalTokenSchema = z.object({
  id: z.number().int(),
  name: z.string(),
  abilities: z.array(z.string()),
  last_used_at: timestamp.nullable(),
  expires_at: timestamp.nullable(),
  created_at: timestamp,
});
const createdTokenSchema = personalTokenSchema.extend({
  token: z.string().describe('`<id>|<secret>`, shown this once'),
});

const createToken = z.strictObject({
  name: z.string().trim().min(1).max(255),
  abilities: z.array(z.enum(scopes)).min(1).max(scopes.length),
});
const tokenId = z.object({ tokenId: z.coerce.number().int().positive() });

const resource = (t: TokenRecord): z.infer<typeof personalTokenSchema> => ({
  id: t.id,
  name: t.name,
  abilities: t.abilities,
  last_used_at: t.lastUsedAt,
  expires_at: t.expiresAt,
  created_at: t.createdAt,
});

export function personalTokenRoutes(deps: HttpDeps): AnyRoute[] {
  // As the other account administration: `*` (a session has it), `read` for the list. A read-only
  // account lists its tokens and makes none (its session holds `read`).
  const common = { tags: ['Authentication'], rateClass: 'standard' as const, ability: '*' as const };
  return [
    defineRoute({
      ...common,
      method: 'GET',
      path: '/api/v1/me/tokens',
      operationId: 'me.tokens.index',
      summary: "The current user's personal access tokens, newest first, with their last use",
      responses: {
        200: { description: 'The tokens (never their values)', schema: single(z.array(personalTokenSchema)) },
      },
      handler: ({ principal }) => ({ body: { data: deps.tokens.listOf(principal!.user.id).map(resource) } }),
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: '/api/v1/me/tokens',
      operationId: 'me.tokens.store',
      summary: 'Create a token for the current user with chosen abilities; its value is in this answer only',
      body: createToken,
      responses: {
        201: { description: 'The token, with its value shown once', schema: single(createdTokenSchema) },
        422: { description: 'No name, no ability, or an unknown one', schema: validationErrorSchema },
      },
      handler: ({ body, principal }) => {
        const { user } = principal!;
        const abilities = [...new Set(body.abilities)];
        const { plainText, record } = deps.tokens.create(user.id, body.name, abilities);
        deps.log.info({ userId: user.id, tokenId: record.id, abilities }, 'token created');
        return { status: 201, body: { data: { ...resource(record), token: plainText } } };
      },
    }),
    defineRoute({
      ...common,
      method: 'DELETE',
      path: '/api/v1/me/tokens/{tokenId}',
      operationId: 'me.tokens.destroy',
      summary: 'Revoke one of the current user’s tokens; the next request with it is 401',
      params: tokenId,
      responses: {
        204: { description: 'Revoked' },
        404: { description: 'No such token of this user', schema: messageSchema },
      },
      handler: ({ params, principal }) => {
        found(deps.tokens.findOwned(principal!.user.id, params.tokenId), 'Token');
        deps.tokens.revoke(params.tokenId);
        return { status: 204 };
      },
    }),
  ];
}
