import { RateLimiterMemory } from 'rate-limiter-flexible';
import { consumeOrThrow } from '../rate-limit.js';
import { z } from 'zod';
import { readerKey } from '../../access/venue-index.js';
import { iso } from '../../clock.js';
import { AppError } from '../../errors.js';
import { projectPrefix, readerTopic } from '../../mqtt/topics.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { rateLimited } from '../responses.js';
import { messageSchema, single } from '../resources.js';
import type { HttpDeps } from '../deps.js';
import { PROJECT_PATH, projectParams, withId } from './crud.js';
import { gatewayRoutes } from './gateways.js';

// Readers and gateways on the broker (docs/mqtt.md). Reader login and OTP verify are
// unauthenticated (spec: Authentication item 8): the OTP is what proves the person setting the
// reader up was given it by staff, who read it from GET .../readers/logins (or the log). An OTP
// is a reader credential in waiting, so only those who may provision readers (access:write) see
// it, and a reader provisioned over a live token is announced (docs/security.md, attack 2). Gateways are
// created by staff, who get the gateway's MQTT token once.

const loginBody = z.strictObject({ reader_identifier: z.string().min(1).max(128) });
const verifyBody = z.strictObject({ otp: z.string().min(1).max(32), reader_identifier: z.string().min(1).max(128) });

const mqttSettings = z.object({
  host: z.string(),
  port: z.number().int().describe('MQTT over TCP'),
  tls_port: z.number().int().nullable().describe('MQTT over TLS, when configured'),
  ws_path: z.literal('/mqtt').describe('MQTT over WebSocket on the HTTP port'),
  username: z.string().describe("the reader's identifier"),
  password: z.string().describe('the reader_token'),
  scans_topic: z.string(),
  decisions_topic: z.string(),
  qos: z.literal(1),
});

const verifiedSchema = z.object({
  reader_token: z.string().describe('shown once; the MQTT password'),
  expires_at: z.string().nullable(),
  reader: z.object({ id: z.number().int(), identifier: z.string(), access_point_id: z.number().int().nullable() }),
  project: z.object({ team_slug: z.string(), slug: z.string() }),
  mqtt: mqttSettings,
});

const pendingLoginSchema = z.object({
  id: z.number().int(),
  reader_id: z.number().int(),
  reader_identifier: z.string(),
  otp: z.string(),
  attempts: z.number().int(),
  requested_ip: z.string().nullable(),
  created_at: z.string(),
  expires_at: z.string(),
});

export function deviceRoutes(deps: HttpDeps): AnyRoute[] {
  const { devices, projects, venueIndex: index, config } = deps;
  const log = deps.log.child({ module: 'readers' });
  const verifyLimiter = new RateLimiterMemory({
    points: config.readers.verifyPerMinute,
    duration: 60,
    keyPrefix: 'otp-verify',
  });
  const hostOf = (ctx: { hostname: string }) => config.mqtt.publicHost ?? (ctx.hostname || 'localhost');
  const readerOf = (projectId: number, id: number) => {
    const reader = index.readerById(id);
    if (!reader || reader.projectId !== projectId) throw new AppError('not_found', { resource: 'Reader' });
    return reader;
  };

  return [
    defineRoute({
      method: 'POST',
      path: `${PROJECT_PATH}/readers/login`,
      operationId: 'readers.login',
      tags: ['Readers'],
      summary: 'A reader asks for a one-time password (staff read it out from readers/logins)',
      description: `No bearer token. Answers 202 and makes a 6-digit OTP valid ${config.readers.otpTtlMinutes} minutes; a pending one for the reader is superseded. The OTP is never in this answer. An unknown project or reader gets the same answer, and no login.`,
      ability: 'public',
      rateClass: 'standard',
      params: projectParams,
      body: loginBody,
      // The login is written just after the answer (below), so a busy store never changes the answer.
      writes: false,
      responses: {
        202: {
          description: 'A login is pending (or, the same answer, the project or reader does not exist)',
          schema: single(
            z.object({
              reader_identifier: z.string(),
              status: z.literal('pending'),
              expires_at: z.string(),
              message: z.string(),
            }),
          ),
        },
      },
      handler: ({ params, body, koa }) => {
        // The same answer whether the project and reader exist (docs/security.md, attack 12), and the login
        // is made after it is sent, so its time does not tell either (as a password-reset mail is
        // queued): nothing the answer says depends on the write.
        const now = deps.clock.now();
        const project = projects.findBySlugs(params.teamSlug, params.projectSlug);
        const reader = project ? index.readers.get(readerKey(project.id, body.reader_identifier)) : undefined;
        const ip = koa.ip || null;
        setImmediate(() => {
          if (!project || !reader) {
            log.info(
              {
                project: `${params.teamSlug}/${params.projectSlug}`,
                reader: body.reader_identifier,
                ip,
                knownProject: project !== null,
              },
              'reader login asked for an unknown project or reader: none made',
            );
            return;
          }
          try {
            const login = devices.logins.request(reader, ip, now);
            // The log line is one of the places staff read the OTP from (docs/mqtt.md, "Reader login").
            log.info(
              {
                project: `${project.team_slug}/${project.slug}`,
                reader: reader.identifier,
                otp: login.otp,
                expiresAt: login.expires_at,
                ip,
              },
              `reader login requested: one-time password ${login.otp} for reader ${reader.identifier}`,
            );
          } catch (err) {
            log.error({ err, reader: reader.identifier }, 'reader login could not be made');
          }
        });
        const expiresAt = iso(now + config.readers.otpTtlMinutes * 60_000);
        return {
          status: 202,
          body: {
            data: {
              reader_identifier: body.reader_identifier,
              status: 'pending',
              expires_at: expiresAt,
              message: 'Ask venue staff for the one-time password, then POST it to /api/v1/reader-otp/verify.',
            },
          },
        };
      },
    }),
    defineRoute({
      method: 'GET',
      path: `${PROJECT_PATH}/readers/logins`,
      operationId: 'readers.logins',
      tags: ['Readers'],
      summary: 'Pending reader logins with their one-time passwords (staff who may provision readers)',
      description:
        'Needs `access:write` (or `*`): an OTP mints a reader credential, so `read` and `access:read` are refused (403) though this is a GET.',
      ability: 'access:write',
      revealsSecrets: true,
      rateClass: 'standard',
      project: true,
      params: projectParams,
      responses: {
        200: {
          description: 'Pending, unexpired logins, newest first',
          schema: z.object({ data: z.array(pendingLoginSchema) }),
        },
      },
      handler: ({ project }) => ({
        body: {
          data: devices.logins.pending(project!.id).map((l) => ({
            id: l.id,
            reader_id: l.reader_id,
            reader_identifier: index.readerById(l.reader_id)?.identifier ?? '',
            otp: l.otp!,
            attempts: l.attempts,
            requested_ip: l.requested_ip,
            created_at: l.created_at,
            expires_at: l.expires_at,
          })),
        },
      }),
    }),
    defineRoute({
      method: 'POST',
      path: '/api/v1/reader-otp/verify',
      operationId: 'readers.verify-otp',
      tags: ['Readers'],
      summary: "Trade a reader login's one-time password for the reader's MQTT credentials",
      description: `No bearer token. ${config.readers.verifyPerMinute} attempts per minute per client address (429 past it); ${config.readers.otpMaxAttempts} wrong OTPs lock the login. Wrong, expired, used or locked OTPs, and unknown readers, all answer the same 422 on \`otp\`. A new token replaces the reader's earlier one, whose connections are closed.`,
      ability: 'public',
      rateClass: 'none',
      body: verifyBody,
      responses: {
        200: { description: "The reader's MQTT credentials (reader_token shown once)", schema: single(verifiedSchema) },
        422: { description: 'Unknown reader, or a wrong, expired, used or locked OTP: one answer for all' },
      },
      conditions: [rateLimited('over readers.verifyPerMinute attempts from this client address')],
      handler: async ({ body, koa }) => {
        await consumeOrThrow(verifyLimiter, koa.ip || 'unknown', config.readers.verifyPerMinute);
        // An unknown reader goes through the same check with no logins: the same refusal, and no
        // early answer whose speed tells it apart (docs/security.md, attack 12).
        const readers = index.readersWithIdentifier(body.reader_identifier);
        let verified: ReturnType<typeof devices.logins.verify>;
        try {
          verified = devices.logins.verify(readers, body.otp.trim(), koa.ip || null);
        } catch (err) {
          const reason = (err as { reason?: string }).reason ?? (err as Error).message;
          log.warn(
            { reader: body.reader_identifier, knownReader: readers.length > 0, ip: koa.ip, reason },
            'reader OTP refused',
          );
          throw err;
        }
        const reader = index.readerById(verified.login.reader_id)!;
        const project = projects.find(reader.projectId)!;
        const prefix = projectPrefix(project.team_slug, project.slug);
        if (verified.replaced) {
          // Whoever holds an OTP can take a working reader over: staff must see that it happened.
          const replacedAt = verified.replaced.createdAt;
          log.warn(
            {
              reader: reader.identifier,
              project: `${project.team_slug}/${project.slug}`,
              replacedTokenCreatedAt: replacedAt,
              ip: koa.ip,
            },
            'reader provisioned over its live token, which is replaced',
          );
        }
        log.info(
          { reader: reader.identifier, project: `${project.team_slug}/${project.slug}` },
          'reader OTP verified, MQTT token issued',
        );
        const ports = devices.mqttPorts();
        return {
          body: {
            data: {
              reader_token: verified.plainText,
              expires_at: verified.token.expiresAt,
              reader: { id: reader.id, identifier: reader.identifier, access_point_id: reader.accessPointId },
              project: { team_slug: project.team_slug, slug: project.slug },
              mqtt: {
                host: hostOf(koa),
                port: ports.tcp,
                tls_port: ports.tls,
                ws_path: '/mqtt' as const,
                username: reader.identifier,
                password: verified.plainText,
                scans_topic: readerTopic(prefix, reader.identifier, 'scans'),
                decisions_topic: readerTopic(prefix, reader.identifier, 'decisions'),
                qos: 1 as const,
              },
            },
          },
        };
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: `${PROJECT_PATH}/readers/{readerId}/token`,
      operationId: 'readers.revoke-token',
      tags: ['Readers'],
      summary: "Revoke a reader's MQTT token: its connections are closed at once",
      ability: 'access:write',
      rateClass: 'standard',
      project: true,
      params: withId('readerId'),
      responses: {
        204: { description: 'Revoked (also when there was none)' },
        404: { description: 'No such reader', schema: messageSchema },
      },
      handler: ({ project, params }) => {
        const reader = readerOf(project!.id, params.readerId);
        devices.tokens.revoke('reader', reader.id); // its connections closed too
        return { status: 204 };
      },
    }),
    ...gatewayRoutes(deps),
  ];
}
