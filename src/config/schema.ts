import { allowedPathEntry } from '../devices/bridge-paths.js';
import { z } from 'zod';
import { createBridgeDeviceBody } from '../resources/bridge-device.js';
import { redisUrlProblem } from '../cluster/redis-url.js';
import { crossChecks } from './cross-checks.js';
import { cloudUrls, databaseUrl } from './urls.js';

// One schema for the whole configuration: defaults live here, the environment overlay
// (GATEHOUSE_*) and the CLI flags are derived from its shape (see overlay.ts).
// docs/config.md lists every key.

const port = z.number().int().min(0).max(65535);
const perMinute = z.number().int().min(0);
const isBase64Of32Bytes = (value: string) =>
  /^[A-Za-z0-9+/]+={0,2}$/.test(value) && value.length % 4 === 0 && Buffer.from(value, 'base64').length === 32;

export const configSchema = z
  .strictObject({
    role: z.enum(['standalone', 'edge', 'cloud']).default('standalone'),
    dataDir: z.string().min(1).default('./data'),
    // A cloud's store on PostgreSQL instead of SQLite under dataDir (docs/decisions.md: the cloud on PostgreSQL).
    databaseUrl: databaseUrl.nullable().default(null),
    http: z
      .strictObject({
        host: z.string().min(1).default('0.0.0.0'),
        port: port.default(8080),
        // Public base URL shown in logs and pagination links; derived from the request when null.
        publicUrl: z.url().nullable().default(null),
        bodyLimitBytes: z
          .number()
          .int()
          .min(1024)
          .max(64 * 1024 * 1024)
          .default(1024 * 1024),
        // A request body must arrive whole this long after it starts being read, or 408 (docs/security.md, attack 12).
        bodyTimeoutMs: z.number().int().min(100).max(3_600_000).default(10_000),
        // Trust X-Forwarded-For only behind a configured proxy (docs/security.md, "Hardening").
        trustProxy: z.boolean().default(false),
        maxProxyHops: z.number().int().min(0).default(1),
        shutdownGraceMs: z.number().int().min(0).default(10_000),
        // The staff console's built files (docs/console.md); null = dist/console next to the appliance's bundle.
        consoleDir: z.string().min(1).nullable().default(null),
      })
      .prefault({}),
    https: z
      .strictObject({
        port: port.default(8443),
        certFile: z.string().min(1).nullable().default(null),
        keyFile: z.string().min(1).nullable().default(null),
      })
      .prefault({}),
    mqtt: z
      .strictObject({
        // Listens on http.host; 0 = a free port (logged). MQTT over WebSocket is at /mqtt on the HTTP port.
        port: port.default(1883),
        // An MQTT over TLS listener (8883 by convention) when both files are given.
        tls: z
          .strictObject({
            port: port.default(8883),
            certFile: z.string().min(1).nullable().default(null),
            keyFile: z.string().min(1).nullable().default(null),
          })
          .prefault({}),
        // A client whose socket does not drain this long is disconnected (aedes issue #1060).
        drainTimeoutMs: z.number().int().min(100).max(600_000).default(5_000),
        connectTimeoutMs: z.number().int().min(100).max(600_000).default(10_000),
        maxConnections: z.number().int().min(1).default(5_000),
        // Open connections per identity (a reader, a gateway, a staff user whatever their token):
        // one read-only token cannot fill the broker and lock the doors out (docs/security.md, attack 4).
        maxConnectionsPerIdentity: z
          .strictObject({
            reader: z.number().int().min(1).max(1_000).default(2),
            gateway: z.number().int().min(1).max(1_000).default(2),
            staff: z.number().int().min(1).max(1_000).default(4),
          })
          .prefault({}),
        // A scan or status payload over this is refused (counted, answered when a request_id can be read).
        maxPayloadBytes: z.number().int().min(256).max(1_048_576).default(4_096),
        // An MQTT packet over this closes the connection as soon as its header arrives (never buffered).
        maxPacketBytes: z.number().int().min(1024).max(268_435_455).default(65_536),
        // A scan not answered within this closes its MQTT connection (the reader sends it again) and
        // is answered 503 with Retry-After over HTTP (docs/mqtt.md).
        answerTimeoutMs: z.number().int().min(100).max(600_000).default(2_000),
        // Connections' credentials are checked again this often (revoked API tokens, expiry).
        recheckIntervalMs: z.number().int().min(100).max(3_600_000).default(5_000),
        // Host names handed to readers in OTP verify answers; null = the host the reader asked on.
        publicHost: z.string().min(1).nullable().default(null),
      })
      .prefault({}),
    readers: z
      .strictObject({
        otpTtlMinutes: z.number().int().min(1).max(1440).default(10),
        // Wrong OTPs for one pending login before it is locked (a new login must be requested).
        otpMaxAttempts: z.number().int().min(1).max(100).default(5),
        // OTP verify attempts per client address per minute.
        verifyPerMinute: z.number().int().min(1).default(10),
        // Days a reader token lives; null = until revoked.
        tokenTtlDays: z.number().int().min(1).nullable().default(365),
      })
      .prefault({}),
    admin: z
      .strictObject({
        email: z.email().default('admin@gatehouse.local'),
        password: z.string().min(8).nullable().default(null),
      })
      .prefault({}),
    defaults: z
      .strictObject({
        timezone: z.string().min(1).default('UTC'),
      })
      .prefault({}),
    auth: z
      .strictObject({
        // null = tokens never expire (spec: Authentication item 5). An administrator may
        // override this at run time with PUT /api/v1/settings.
        tokenExpiryMinutes: z.number().int().min(1).nullable().default(null),
        sessionLifetimeMinutes: z.number().int().min(1).default(120),
        secureCookies: z.boolean().default(false),
        // Failed logins (token and cookie session) per account per window, apart from the
        // per-address rate limit; 0 = off (docs/security.md).
        loginFailuresPerAccount: z.number().int().min(0).max(1000).default(5),
        loginFailureWindowSeconds: z.number().int().min(1).max(86_400).default(60),
      })
      .prefault({}),
    rateLimit: z
      .strictObject({
        standard: perMinute.default(60),
        bulk: perMinute.default(10),
        search: perMinute.default(20),
        windowSeconds: z.number().int().min(1).default(60),
        // The sync protocol's routes, per edge (its sync token), in a window of their own: short,
        // so an edge past its budget waits seconds, not a minute (docs/sync.md: limits).
        sync: perMinute.default(600),
        syncWindowSeconds: z.number().int().min(1).max(3600).default(10),
      })
      .prefault({}),
    // access.antiPassback is gone: each zone says (its anti_passback field); config/removed.ts
    // names it when a file, variable or flag still sets it.
    store: z
      .strictObject({
        synchronous: z.enum(['NORMAL', 'FULL']).default('NORMAL'),
        // The checkpoint worker checkpoints this often when there were commits (storage.md).
        checkpointIntervalMs: z.number().int().min(10).max(600_000).default(50),
        // Access events committed together at most (group commit, engine.md).
        maxBatch: z.number().int().min(1).max(10_000).default(512),
        // Size of one access-event journal segment file before a new one starts (storage.md).
        journalSegmentBytes: z.number().int().min(65_536).max(1_073_741_824).default(67_108_864),
        // The ingest worker's pause between transactions: how long an answered scan may take to show in access_events.
        ingestIntervalMs: z.number().int().min(0).max(10_000).default(20),
        // How long the events API and analytics wait for the journal's ingest before answering 503 (storage.md).
        readWaitMs: z.number().int().min(0).max(60_000).default(5000),
        // How long a write waits for another connection's write lock before answering 503 store_busy (storage.md).
        busyTimeoutMs: z.number().int().min(0).max(60_000).default(5000),
      })
      .prefault({}),
    log: z
      .strictObject({
        level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
        pretty: z.enum(['auto', 'always', 'never']).default('auto'),
      })
      .prefault({}),
    cloud: z
      .strictObject({
        // One URL, or several instances of the cloud to fail over between (docs/sync.md: several cloud URLs).
        url: cloudUrls.nullable().default(null),
        // A PEM file of the CA(s) to trust for the cloud's TLS certificate, besides the system's (a private CA).
        caFile: z.string().min(1).nullable().default(null),
      })
      .prefault({}),
    // Cloud sync (docs/sync.md).
    sync: z
      .strictObject({
        token: z.string().min(1).nullable().default(null),
        // Every request from the edge to the cloud is given up after
        // this long (a black-holed link is offline, not waited on).
        requestTimeoutMs: z.number().int().min(100).max(120_000).default(10_000),
        // Events per upload batch; reference rows per download page.
        uploadBatch: z.number().int().min(1).max(10_000).default(1000),
        pageSize: z.number().int().min(1).max(20_000).default(5000),
        // How long the cloud holds a caught-up download (and the revocation watch) open waiting for a change.
        longPollSeconds: z.number().int().min(0).max(300).default(20),
        // Back-off while the link is down: from min, doubling, up to max, with full jitter.
        backoffMinMs: z.number().int().min(10).max(600_000).default(500),
        backoffMaxMs: z.number().int().min(10).max(3_600_000).default(30_000),
        // The doors first: while scans come faster than busyScansPerSecond, the edge uploads at most
        // busyItemsPerSecond and applies at most busyRowsPerSecond, in smaller batches (docs/sync.md).
        busyScansPerSecond: z.number().int().min(0).max(1_000_000).default(1000),
        busyItemsPerSecond: z.number().int().min(4).max(1_000_000).default(2000),
        busyRowsPerSecond: z.number().int().min(4).max(1_000_000).default(2000),
        // An edge whose clock is off the cloud's by more than this uploads its events flagged unsynchronised.
        clockToleranceMs: z.number().int().min(0).max(86_400_000).default(2000),
        // Edge: access events the cloud acknowledged and older than this are pruned (null = never).
        edgeRetentionDays: z.number().int().min(1).max(3650).nullable().default(30),
        // Standalone and cloud: access events older than this are pruned (null = kept for ever, the default).
        retentionDays: z.number().int().min(1).max(36500).nullable().default(null),
        // Cloud: upload batches applied at once, of all edges (one per edge); another is answered 503 with Retry-After.
        uploadsAtOnce: z.number().int().min(1).max(64).default(4),
        // Edge: the largest answer it reads from its cloud; a larger one is refused unread (docs/sync.md).
        maxAnswerBytes: z
          .number()
          .int()
          .min(64 * 1024)
          .max(1024 * 1024 * 1024)
          .default(16 * 1024 * 1024),
      })
      .prefault({}),
    // Readers plugged into the box: serial and USB HID (docs/bridge.md).
    bridge: z
      .strictObject({
        enabled: z.boolean().default(true),
        // A device not there (unplugged, not yet plugged) is looked for again from min, doubling, up to max.
        reopenMinMs: z.number().int().min(10).max(60_000).default(250),
        reopenMaxMs: z.number().int().min(10).max(600_000).default(5000),
        // Bad frames are logged at most once per this many ms per device (all are counted).
        badFrameLogIntervalMs: z.number().int().min(0).max(3_600_000).default(10_000),
        // Files devices may name besides the serial ports and /dev/hidraw* (docs/bridge.md: Device
        // paths): "/dir/" for anything below a folder, or a path with * for any characters but "/".
        allowedPaths: z.array(allowedPathEntry).max(256).default([]),
        // Devices from this file (managed_by "config": changed here, read-only over REST), by name.
        devices: z
          .array(
            createBridgeDeviceBody.extend({
              project: z
                .string()
                .regex(/^[^/\s]+\/[^/\s]+$/, '"team/project" slugs')
                .default('default/default'),
            }),
          )
          .max(256)
          .default([]),
      })
      .prefault({}),
    pusher: z
      .strictObject({
        appId: z.string().min(1).nullable().default(null),
        key: z.string().min(1).nullable().default(null),
        secret: z.string().min(1).nullable().default(null),
        // private-encrypted- channels (docs/realtime.md, "Encrypted channels"): base64 of 32 bytes, as the official
        // server libraries take it (encryptionMasterKeyBase64); generated and kept when unset.
        encryptionMasterKey: z
          .string()
          .refine(isBase64Of32Bytes, 'must be base64 of exactly 32 bytes (make one with: openssl rand -base64 32)')
          .nullable()
          .default(null),
        activityTimeoutSeconds: z.number().int().min(1).max(3600).default(30),
        pongTimeoutSeconds: z.number().int().min(1).max(600).default(30),
        maxConnections: z.number().int().min(1).default(10_000),
        maxMessageBytes: z.number().int().min(256).default(10_240),
        maxEventBytes: z.number().int().min(256).default(102_400),
        maxBufferedBytes: z.number().int().min(1024).default(1_048_576),
        clientEvents: z.boolean().default(false),
        clientEventsPerSecond: z.number().int().min(1).default(10),
        eventNamespace: z.string().min(1).max(200).nullable().default(null),
        // Subscriptions' access is checked again this often, besides at once when it changes (a token
        // or session expiring with time, changes made by the CLI in another process).
        accessRecheckIntervalMs: z.number().int().min(100).max(3_600_000).default(5_000),
      })
      .prefault({}),
    // Several instances of a cloud behind a load balancer share their WebSocket fan-out, presence and
    // rate limits through one Redis (docs/realtime.md, "Several instances"). null: all in this process.
    redis: z
      .strictObject({
        url: z
          .string()
          .superRefine((url, ctx) => {
            const problem = redisUrlProblem(url);
            if (problem) ctx.addIssue({ code: 'custom', message: problem });
          })
          .nullable()
          .default(null),
        // Prefix of every key and of the pub/sub channel: two clouds can share one Redis.
        keyPrefix: z.string().min(1).max(100).default('gatehouse:'),
        // An instance silent this long is taken for gone: its subscribers and presence members are removed.
        instanceTimeoutMs: z.number().int().min(300).max(600_000).default(15_000),
        // How long start-up waits for Redis before it fails naming the URL.
        connectTimeoutMs: z.number().int().min(100).max(120_000).default(5_000),
      })
      .prefault({}),
    credentials: z
      .strictObject({
        // Signature checks of signed values the box does not hold, per reader per second (a burst of one
        // second's worth); past it such a value is denied verification_busy (docs/credentials.md). 0: no limit.
        verificationsPerSecond: z.number().int().min(0).max(1_000_000).default(20),
      })
      .prefault({}),
    metrics: z
      .strictObject({
        // Who may read /metrics (docs/security.md): open keeps existing scrapers working.
        access: z.enum(['open', 'loopback', 'token']).default('open'),
        token: z.string().min(16, 'at least 16 characters').nullable().default(null),
      })
      .prefault({}),
    // Outgoing webhooks (docs/webhooks-outgoing.md).
    webhook: z
      .strictObject({
        // Development and LAN receivers: plain http, and loopback and link-local addresses.
        allowInsecure: z.boolean().default(false),
        // CIDRs a receiver may resolve to although refused by default (loopback, link-local,
        // cloud metadata), e.g. ["169.254.10.0/24"]; private LAN ranges are always allowed.
        allowedNetworks: z.array(z.string().min(1)).default([]),
        // X-{prefix}-Signature, -Event, -Delivery-ID, -Timestamp, as for incoming webhooks.
        headerPrefix: z
          .string()
          .regex(/^[A-Za-z0-9-]{1,40}$/, 'letters, digits and dashes')
          .default('Svc'),
        timeoutMs: z.number().int().min(100).max(60_000).default(5000),
        // The receiver's answer is read up to this many bytes (kept in the delivery log), the rest dropped.
        maxResponseBytes: z
          .number()
          .int()
          .min(0)
          .max(1024 * 1024)
          .default(4096),
        // Deliveries in flight at once, over all subscriptions (one per subscription: in order).
        concurrency: z.number().int().min(1).max(1000).default(32),
        // Seconds before each retry after the first attempt (jittered by up to 10 %); past the last, failed.
        retrySchedule: z
          .array(z.number().int().min(0))
          .min(0)
          .max(50)
          .default([5, 300, 1800, 7200, 18_000, 36_000, 36_000]),
        // The scan path first: while scans come faster than busyScansPerSecond, deliveries are
        // paced at busyDeliveriesPerSecond and catch up afterwards (docs/webhooks-outgoing.md).
        busyScansPerSecond: z.number().int().min(0).max(1_000_000).default(1000),
        busyDeliveriesPerSecond: z.number().int().min(1).max(1_000_000).default(200),
        // The dispatcher is woken by every change that feeds webhooks; this poll only catches what
        // another process wrote (the CLI) and subscriptions it changed.
        pollMs: z.number().int().min(50).max(3_600_000).default(1000),
        // A subscription failing continuously this long is disabled (webhook.endpoint_disabled).
        disableAfterHours: z.number().min(0.001).max(8760).default(120),
        // After a secret rotation the old secret still signs (a second signature) this long.
        secretGraceHours: z.number().min(0).max(720).default(24),
        deliveryRetentionDays: z.number().int().min(1).max(3650).default(30),
        deliveryMaxRows: z.number().int().min(1000).max(100_000_000).default(1_000_000),
        // Outbox rows (domain events) older than this go once every consumer has read them.
        outboxRetentionDays: z.number().int().min(1).max(3650).default(30),
      })
      .prefault({}),
    incomingWebhooks: z
      .strictObject({
        // X-{prefix}-Signature / X-{prefix}-Timestamp (the partner signs with X-Partner-Signature).
        headerPrefix: z
          .string()
          .regex(/^[A-Za-z0-9-]{1,40}$/, 'letters, digits and dashes')
          .default('Svc'),
        timestampToleranceSeconds: z.number().int().min(1).max(86_400).default(300),
        // Development only: requests without a signature header are admitted, naming no project.
        allowUnsigned: z.boolean().default(false),
        // Retries of a signed body accepted within timestampToleranceSeconds get its first answer
        // again (docs/webhooks-incoming.md): at most this many answers and bytes of answer bodies are kept
        // (the oldest given up first); a larger answer is not kept; a retry of a body still being
        // handled waits this long for its answer (docs/webhooks-incoming.md: Retries).
        replayMaxEntries: z.number().int().min(0).max(10_000_000).default(20_000),
        replayMaxBytes: z
          .number()
          .int()
          .min(0)
          .max(1024 ** 3)
          .default(16 * 1024 ** 2),
        replayMaxAnswerBytes: z
          .number()
          .int()
          .min(0)
          .max(64 * 1024 ** 2)
          .default(64 * 1024),
        replayWaitMs: z.number().int().min(0).max(120_000).default(10_000),
        // Accepted deliveries are remembered durably (webhook_receipts) so a captured one sent again
        // later is not applied again (docs/security.md, attack 5): this many days on attendee-sync and
        // large-upload-finalized, whose bodies nothing dates; the other endpoints have fixed windows
        // (docs/webhooks-incoming.md: Replays). At most receiptMaxRows are kept, the oldest given up.
        receiptDays: z.number().int().min(1).max(3650).default(30),
        receiptMaxRows: z.number().int().min(100).max(100_000_000).default(1_000_000),
        // Requests no source vouched for, per client address and minute; past it 429 with no log
        // row (docs/security.md, attack 10). 0 = no limit.
        failuresPerMinute: z.number().int().min(0).max(1_000_000).default(120),
        logRetentionDays: z.number().int().min(1).max(3650).default(30),
        // Two row budgets: requests that applied something, and those that did not (refused, or a
        // retry answered again), so junk cannot prune the accepted requests' log (docs/security.md, attack 10).
        logMaxRows: z.number().int().min(100).default(100_000),
        logMaxNotAppliedRows: z.number().int().min(100).default(20_000),
        // large-upload-finalized: notices for this bucket with an attendee CSV/JSON content type are
        // imported from importDir/<object name> (where the bucket is mounted or synced).
        importBucket: z.string().min(1).nullable().default(null),
        importDir: z.string().min(1).nullable().default(null),
        // The largest import file read; the size is checked before reading (docs/security.md, attack 8).
        importMaxBytes: z
          .number()
          .int()
          .min(1024)
          .max(1024 * 1024 * 1024)
          .default(64 * 1024 * 1024),
      })
      .prefault({}),
  })
  .superRefine(crossChecks);

export type Config = z.infer<typeof configSchema>;
