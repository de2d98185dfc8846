import { z } from 'zod';
import { AppError } from '../../errors.js';
import { mayJoin, parseChannel } from '../../realtime/channel-access.js';
import { authString, SOCKET_ID, validChannelName } from '../../realtime/protocol.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute, type AnyRoute } from '../route.js';

// Private, encrypted and presence channel auth for pusher-js / laravel-echo
// (docs/realtime.md; "Encrypted channels" there), and the client configuration a dashboard reads
// instead of server config. What an auth answer was given for (the user, the token or
// session, the one project the name names) is recorded for the socket, so the subscription ends
// when that access does and only ever carries that project's events (docs/security.md, attacks 1 and 3).

const authBody = z.object({
  socket_id: z.string().regex(SOCKET_ID, 'a socket id as the server sent it (digits.digits)'),
  channel_name: z.string().refine(validChannelName, 'at most 164 characters of A-Z a-z 0-9 _ - = @ , . ;'),
});

const authResponse = z.object({
  auth: z.string().describe('key:hex(HMAC-SHA256(secret, socket_id:channel_name[:channel_data]))'),
  channel_data: z
    .string()
    .optional()
    .describe("presence channels: JSON {user_id (the user's integer id), user_info: {name}}"),
  shared_secret: z
    .string()
    .optional()
    .describe(
      "private-encrypted- channels: base64 of the channel's key, SHA-256(channel_name || encryption master key)",
    ),
});

const clientConfig = z.object({
  data: z.object({
    key: z.string(),
    ws_host: z.string(),
    ws_port: z.number().int(),
    ws_path: z.string().describe('pusher-js wsPath: the prefix before /app/{key} (empty here)'),
    force_tls: z.boolean(),
    auth_endpoint: z.string(),
  }),
});

export function broadcastingRoutes(deps: Pick<HttpDeps, 'config' | 'projects' | 'realtime'>): AnyRoute[] {
  return [
    defineRoute({
      method: 'POST',
      path: '/broadcasting/auth',
      operationId: 'broadcasting.auth',
      tags: ['Real-time'],
      summary: 'Authorize a private, encrypted or presence channel subscription',
      description:
        'Form-encoded `socket_id` and `channel_name`, as pusher-js sends them. Bearer token, or a cookie session with X-XSRF-TOKEN. ' +
        'The user must be able to read the project the channel names, with `*`, `read` or `access:read`. ' +
        'A bare project slug that names projects in several teams is refused: use the team-qualified name. ' +
        'The subscription ends (close 4009 or 4210) when the user, the token or session, or their reach of the project does.',
      ability: 'authenticated',
      rateClass: 'standard',
      bodyKind: 'form',
      writes: false, // signs the channel name; a session's expiry skips a busy store
      body: authBody,
      responses: {
        200: { description: 'The auth string for pusher:subscribe', schema: authResponse },
      },
      conditions: [
        { code: 'channel_forbidden', when: 'the user or token may not read this channel (`reason` says why)' },
      ],
      handler: ({ body, principal }) => {
        const { key, secret } = deps.realtime.credentials;
        const verdict = mayJoin(body.channel_name, principal!.user, principal!.abilities, deps.projects);
        if (!verdict.ok) throw new AppError('channel_forbidden', {}, { body: { reason: verdict.reason } });
        const { user, token, session } = principal!;
        const credential = token
          ? { kind: 'token' as const, id: token.id }
          : { kind: 'session' as const, idHash: session!.idHash };
        const issued = deps.realtime.server.grants.issue(body.socket_id, body.channel_name, {
          userId: user.id,
          credential,
          projectId: verdict.project.id,
        });
        if (issued === 'too_many')
          throw new AppError(
            'channel_forbidden',
            {},
            { body: { reason: 'Too many channels authorized for this connection' } },
          );
        const target = parseChannel(body.channel_name)!;
        if (target.kind === 'presence') {
          const user = principal!.user;
          // The integer id, as Laravel's auth endpoint gives it; the server keeps its type.
          const channelData = JSON.stringify({ user_id: user.id, user_info: { name: user.name } });
          return {
            body: {
              auth: authString(key, secret, body.socket_id, body.channel_name, channelData),
              channel_data: channelData,
            },
          };
        }
        const auth = authString(key, secret, body.socket_id, body.channel_name);
        // As pusher-http-node's authorizeChannel answers for an encrypted channel.
        if (target.encrypted)
          return {
            body: { auth, shared_secret: deps.realtime.cipher.sharedSecret(body.channel_name).toString('base64') },
          };
        return { body: { auth } };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/api/v1/broadcasting/config',
      operationId: 'broadcasting.config',
      tags: ['Real-time'],
      summary: 'How to configure pusher-js or laravel-echo for this appliance',
      ability: 'authenticated',
      rateClass: 'standard',
      responses: { 200: { description: 'Client settings', schema: clientConfig } },
      handler: ({ koa }) => {
        // The address the caller reached us at, unless a public URL is configured.
        const origin = new URL(deps.config.http.publicUrl ?? `${koa.protocol}://${koa.host}`);
        const tls = origin.protocol === 'https:';
        const port = origin.port ? Number(origin.port) : tls ? 443 : 80;
        return {
          body: {
            data: {
              key: deps.realtime.credentials.key,
              ws_host: origin.hostname,
              ws_port: port,
              ws_path: '',
              force_tls: tls,
              auth_endpoint: `${origin.origin}/broadcasting/auth`,
            },
          },
        };
      },
    }),
  ];
}
