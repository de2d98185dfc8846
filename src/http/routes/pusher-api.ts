import type { Context } from 'koa';
import { z } from 'zod';
import { AppError, validationError } from '../../errors.js';
import { isEncryptedChannel, looksSealed } from '../../realtime/encryption.js';
import { verifyPusherSignature } from '../../realtime/http-signature.js';
import { channelKind, validChannelName } from '../../realtime/protocol.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute, type AnyRoute } from '../route.js';

// Pusher's HTTP API for local services (docs/realtime.md): publish events and look at channels,
// signed the Pusher way (realtime/http-signature.ts), so the official server libraries
// (pusher-http-node, pusher-http-php, Laravel's pusher driver) work against the box unchanged.
// Errors answer {error, message}. docs/realtime.md. Events for encrypted channels are relayed
// as the publisher sealed them (the server has no need of their keys), but only when they are
// sealed, and to one channel each: the official libraries send nothing else, and anything else
// would go out in clear or be undecryptable (docs/realtime.md, "Encrypted channels").

/** Field errors for an event to encrypted channels; null when there is nothing to say. */
function encryptedEventProblem(
  channels: readonly string[],
  data: unknown,
  field: { channels: string; data: string },
): Record<string, string[]> | null {
  if (!channels.some(isEncryptedChannel)) return null;
  if (channels.length > 1)
    return {
      [field.channels]: ['an event for a private-encrypted- channel goes to that channel alone (each has its own key)'],
    };
  if (!looksSealed(data))
    return {
      [field.data]: [
        'a private-encrypted- channel takes data sealed by a server library: {nonce, ciphertext} (NaCl secretbox, base64)',
      ],
    };
  return null;
}

const channelName = z.string().refine(validChannelName, 'at most 164 characters of A-Z a-z 0-9 _ - = @ , . ;');
// Pusher sends data as a string; a JSON value is accepted and encoded.
const eventData = z.union([z.string(), z.record(z.string(), z.unknown()), z.array(z.unknown())]);
const info = z.string().max(200).optional().describe('comma-separated: subscription_count, user_count');

const eventBody = z
  .object({
    name: z.string().min(1).max(200),
    data: eventData,
    channels: z.array(channelName).min(1).max(100).optional(),
    channel: channelName.optional(),
    socket_id: z.string().max(64).optional().describe('this socket does not receive the event'),
    info,
  })
  .refine((b) => (b.channels === undefined) !== (b.channel === undefined), {
    message: 'give channels or channel',
    path: ['channels'],
  });

const batchBody = z.object({
  batch: z
    .array(
      z.object({
        name: z.string().min(1).max(200),
        data: eventData,
        channel: channelName,
        socket_id: z.string().max(64).optional(),
        info,
      }),
    )
    .min(1)
    .max(10),
});

const appParams = z.object({ appId: z.string() });
const channelParams = appParams.extend({ channelName });
const error = z.object({ error: z.string(), message: z.string() });
const errors = {
  401: { description: 'Not signed with this app key and secret', schema: error },
  404: { description: 'No such app', schema: error },
};
// Answers as Pusher's HTTP API gives them: counts only when `info` asks for them.
const counts = z.object({ subscription_count: z.number().int().optional(), user_count: z.number().int().optional() });
const published = z.object({ channels: z.record(z.string(), counts).optional() });
const publishedBatch = z.object({ batch: z.array(counts).optional() });
const channelList = z.object({ channels: z.record(z.string(), counts) });
const channelState = counts.extend({ occupied: z.boolean() });
const members = z.object({
  users: z.array(z.object({ id: z.union([z.string(), z.number()]).describe('the user_id the channel auth gave') })),
});

export function pusherApiRoutes(deps: Pick<HttpDeps, 'config' | 'clock' | 'realtime'>): AnyRoute[] {
  const { server, credentials } = deps.realtime;
  // Counts and members of every instance (realtime/adapter.ts): this process's alone on a box of one.
  const { adapter } = server;
  const maxEventBytes = deps.config.pusher.maxEventBytes;

  const verify = (koa: Context, appId: string) => {
    if (appId !== credentials.appId) throw new AppError('unknown_app', { appId: appId.slice(0, 64) });
    const problem = verifyPusherSignature(
      {
        method: koa.method,
        path: koa.path,
        query: koa.query,
        body: (koa.state.rawBody as Buffer | undefined) ?? Buffer.alloc(0),
      },
      credentials.key,
      credentials.secret,
      deps.clock.now(),
    );
    if (problem) throw new AppError('invalid_signature', { detail: problem });
  };
  const encode = (data: unknown) => (typeof data === 'string' ? data : JSON.stringify(data));
  const channelInfo = async (name: string, wanted: string | undefined) => {
    const fields = new Set((wanted ?? '').split(',').map((f) => f.trim()));
    const out: Record<string, number> = {};
    const presence = fields.has('user_count') && channelKind(name) === 'presence';
    if (!fields.has('subscription_count') && !presence) return out;
    const counts = await adapter.counts(name);
    if (fields.has('subscription_count')) out.subscription_count = counts.subscriptions;
    if (presence) out.user_count = counts.users;
    return out;
  };
  const infoOf = async (names: readonly string[], wanted: string | undefined) =>
    Promise.all(names.map(async (c) => [c, await channelInfo(c, wanted)] as const));
  const publish = (channels: string[], name: string, data: unknown, socketId: string | undefined) => {
    const payload = encode(data);
    if (Buffer.byteLength(payload) > maxEventBytes) throw new AppError('payload_too_large', { limit: maxEventBytes });
    server.publish(channels, name, payload, socketId);
  };
  // Events go to the connected sockets; nothing is stored, so a busy store never refuses one.
  const common = {
    tags: ['Pusher HTTP API'],
    ability: 'public' as const,
    rateClass: 'standard' as const,
    envelope: 'webhook' as const,
    writes: false,
  };

  return [
    defineRoute({
      ...common,
      method: 'POST',
      path: '/apps/{appId}/events',
      operationId: 'pusher.events',
      summary: 'Publish an event to one or more channels',
      params: appParams,
      body: eventBody,
      responses: {
        200: { description: '{} or {channels: {name: info}} when info is asked', schema: published },
        ...errors,
        413: { description: 'data over pusher.maxEventBytes', schema: error },
      },
      handler: async ({ params, body, koa }) => {
        verify(koa, params.appId);
        const channels = body.channels ?? [body.channel!];
        const problem = encryptedEventProblem(channels, body.data, {
          channels: body.channels ? 'channels' : 'channel',
          data: 'data',
        });
        if (problem) throw validationError(problem);
        publish(channels, body.name, body.data, body.socket_id);
        return { body: body.info ? { channels: Object.fromEntries(await infoOf(channels, body.info)) } : {} };
      },
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: '/apps/{appId}/batch_events',
      operationId: 'pusher.batch-events',
      summary: 'Publish up to 10 events',
      params: appParams,
      body: batchBody,
      responses: {
        200: { description: '{} or {batch: [info]} when info is asked', schema: publishedBatch },
        400: { description: "Also an event's data over pusher.maxEventBytes" },
        ...errors,
      },
      handler: async ({ params, body, koa }) => {
        verify(koa, params.appId);
        // Validate every event's size before publishing any, so a batch is all or nothing.
        for (const [i, e] of body.batch.entries()) {
          if (Buffer.byteLength(encode(e.data)) > maxEventBytes)
            throw validationError({ [`batch.${i}.data`]: [`larger than ${maxEventBytes} bytes`] });
          const problem = encryptedEventProblem([e.channel], e.data, {
            channels: `batch.${i}.channel`,
            data: `batch.${i}.data`,
          });
          if (problem) throw validationError(problem);
        }
        for (const e of body.batch) publish([e.channel], e.name, e.data, e.socket_id);
        const wantsInfo = body.batch.some((e) => e.info);
        return {
          body: wantsInfo ? { batch: await Promise.all(body.batch.map((e) => channelInfo(e.channel, e.info))) } : {},
        };
      },
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: '/apps/{appId}/channels',
      operationId: 'pusher.channels',
      summary: 'Occupied channels',
      params: appParams,
      query: z.object({ filter_by_prefix: z.string().max(164).optional(), info }).loose(),
      responses: {
        200: { description: '{channels: {name: {subscription_count?, user_count?}}}', schema: channelList },
        ...errors,
      },
      handler: async ({ params, query, koa }) => {
        verify(koa, params.appId);
        const names = (await adapter.channelNames()).filter(
          (n) => !query.filter_by_prefix || n.startsWith(query.filter_by_prefix),
        );
        return { body: { channels: Object.fromEntries(await infoOf(names.sort(), query.info)) } };
      },
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: '/apps/{appId}/channels/{channelName}',
      operationId: 'pusher.channel',
      summary: 'One channel: occupied, and counts when asked',
      params: channelParams,
      query: z.object({ info }).loose(),
      responses: {
        200: { description: '{occupied, subscription_count?, user_count?}', schema: channelState },
        ...errors,
      },
      handler: async ({ params, query, koa }) => {
        verify(koa, params.appId);
        const { subscriptions } = await adapter.counts(params.channelName);
        return { body: { occupied: subscriptions > 0, ...(await channelInfo(params.channelName, query.info)) } };
      },
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: '/apps/{appId}/channels/{channelName}/users',
      operationId: 'pusher.channel-users',
      summary: 'The members of a presence channel',
      params: channelParams,
      query: z.object({}).loose(),
      responses: {
        200: {
          description: '{users: [{id}]}: each id as its channel_data gave it (a number stays a number)',
          schema: members,
        },
        ...errors,
      },
      conditions: [{ code: 'validation_failed', when: 'the channel is not a presence channel' }],
      handler: async ({ params, koa }) => {
        verify(koa, params.appId);
        if (channelKind(params.channelName) !== 'presence')
          throw validationError({ channelName: ['only presence channels have users'] });
        const members = await adapter.members(params.channelName);
        return { body: { users: members.map((m) => ({ id: m.user_id })) } };
      },
    }),
  ];
}
