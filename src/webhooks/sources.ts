import { randomBytes } from 'node:crypto';
import { BlockList, isIP } from 'node:net';
import { z } from 'zod';
import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import { found, validationError } from '../errors.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import type { WebhookKind } from './gate.js';
import { writeTransaction } from '../store/transactions.js';

// Webhook sources per project (docs/webhooks-incoming.md): who may post which
// incoming webhook. A source has a kind, a secret (made here, shown once, rotatable with a
// grace period in which the previous one still verifies), an optional allowlist of addresses
// and CIDR ranges (IPv4 and IPv6; node's net.BlockList, which also matches IPv4-mapped IPv6
// addresses as IPv4: docs/webhooks-incoming.md), an enabled flag and its own rate limit. The secret has to be kept
// readable: an HMAC is checked by computing it.

export const WEBHOOK_KINDS = [
  'access-event',
  'gateway-status',
  'registration-partner',
  'attendee-sync',
  'upload-finalized',
] as const satisfies readonly WebhookKind[];

export interface WebhookSourceRow {
  id: number;
  project_id: number;
  kind: WebhookKind;
  name: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
  ip_allowlist: string;
  enabled: number;
  rate_limit_per_minute: number;
  created_at: string;
  updated_at: string;
}

/** One allowlist entry: an address or a CIDR range. */
const allowEntry = z
  .string()
  .trim()
  .max(64)
  .refine((v) => parseEntry(v) !== null, { message: 'not an IPv4 or IPv6 address or CIDR range' });

export const createSourceBody = z.strictObject({
  kind: z.enum(WEBHOOK_KINDS),
  name: z.string().trim().min(1).max(200),
  ip_allowlist: z
    .array(allowEntry)
    .max(100)
    .optional()
    .describe('addresses and CIDR ranges; empty or absent: any address'),
  enabled: z.boolean().optional(),
  rate_limit_per_minute: z
    .number()
    .int()
    .min(1)
    .max(100_000)
    .optional()
    .describe('requests per minute for this source (default 600)'),
});
export const updateSourceBody = createSourceBody.omit({ kind: true }).partial();
export const rotateBody = z.strictObject({
  grace_minutes: z
    .number()
    .int()
    .min(0)
    .max(10_080)
    .optional()
    .describe('how long the previous secret still verifies (default 60; 0 = not at all)'),
});

export const sourceSchema = z.object({
  id: z.number().int(),
  kind: z.enum(WEBHOOK_KINDS),
  name: z.string(),
  ip_allowlist: z.array(z.string()),
  enabled: z.boolean(),
  rate_limit_per_minute: z.number().int(),
  previous_secret_expires_at: z
    .string()
    .nullable()
    .describe('while set and in the future, the previous secret still verifies'),
  endpoint: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const ENDPOINT_OF: Record<WebhookKind, string> = {
  'access-event': '/webhook/v1/access-event',
  'gateway-status': '/webhook/v1/mqtt-gateway-status',
  'registration-partner': '/webhook/v1/registration-partner',
  'attendee-sync': '/webhook/v1/attendee-sync',
  'upload-finalized': '/webhook/v1/large-upload-finalized',
};

export const DEFAULT_RATE_PER_MINUTE = 600;
export const DEFAULT_GRACE_MINUTES = 60;

// Standard base64 after the prefix, as Standard Webhooks libraries decode it (standard-signature.ts).
const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

/** An enabled source as the gate uses it: secrets that verify now and the allowlist built once. */
export interface ActiveSource {
  id: number;
  projectId: number;
  kind: WebhookKind;
  secrets: string[];
  allow: BlockList | null;
  ratePerMinute: number;
  /** Until when the previous secret (secrets[1]) verifies. */
  graceUntil: number;
}

export class WebhookSources {
  #active: Map<WebhookKind, ActiveSource[]> | null = null;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  resource(row: WebhookSourceRow): z.infer<typeof sourceSchema> {
    const grace =
      row.previous_secret_expires_at && Date.parse(row.previous_secret_expires_at) > this.clock.now()
        ? row.previous_secret_expires_at
        : null;
    return {
      id: row.id,
      kind: row.kind,
      name: row.name,
      ip_allowlist: JSON.parse(row.ip_allowlist) as string[],
      enabled: row.enabled === 1,
      rate_limit_per_minute: row.rate_limit_per_minute,
      previous_secret_expires_at: grace,
      endpoint: ENDPOINT_OF[row.kind],
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
  }

  list(projectId: number, offset: number, limit: number): { items: WebhookSourceRow[]; total: number } {
    const items = statement(
      this.db,
      'SELECT * FROM webhook_sources WHERE project_id = ? ORDER BY id LIMIT ? OFFSET ?',
    ).all(projectId, limit, offset) as WebhookSourceRow[];
    const { n } = statement(this.db, 'SELECT count(*) AS n FROM webhook_sources WHERE project_id = ?').get(
      projectId,
    ) as { n: number };
    return { items, total: n };
  }

  get(projectId: number, id: number): WebhookSourceRow {
    return found(
      statement(this.db, 'SELECT * FROM webhook_sources WHERE project_id = ? AND id = ?').get(projectId, id) as
        | WebhookSourceRow
        | undefined,
      'Webhook source',
    );
  }

  create(projectId: number, input: z.output<typeof createSourceBody>): { row: WebhookSourceRow; secret: string } {
    const now = iso(this.clock.now());
    const secret = newSecret();
    const id = Number(
      statement(
        this.db,
        'INSERT INTO webhook_sources (project_id, kind, name, secret, ip_allowlist, enabled, rate_limit_per_minute, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
      ).run(
        projectId,
        input.kind,
        input.name,
        secret,
        JSON.stringify(input.ip_allowlist ?? []),
        input.enabled === false ? 0 : 1,
        input.rate_limit_per_minute ?? DEFAULT_RATE_PER_MINUTE,
        now,
        now,
      ).lastInsertRowid,
    );
    this.#active = null;
    return { row: this.get(projectId, id), secret };
  }

  update(projectId: number, id: number, input: z.output<typeof updateSourceBody>): WebhookSourceRow {
    // Read and written under one write lock: the fields not given keep what is read here.
    const updated = writeTransaction(this.db, () => {
      const row = this.get(projectId, id);
      statement(
        this.db,
        'UPDATE webhook_sources SET name = ?, ip_allowlist = ?, enabled = ?, rate_limit_per_minute = ?, updated_at = ? WHERE id = ?',
      ).run(
        input.name ?? row.name,
        input.ip_allowlist === undefined ? row.ip_allowlist : JSON.stringify(input.ip_allowlist),
        input.enabled === undefined ? row.enabled : input.enabled ? 1 : 0,
        input.rate_limit_per_minute ?? row.rate_limit_per_minute,
        iso(this.clock.now()),
        id,
      );
      return this.get(projectId, id);
    });
    this.#active = null;
    return updated;
  }

  /** A new secret; the old one keeps verifying for `graceMinutes`. */
  rotate(projectId: number, id: number, graceMinutes: number): { row: WebhookSourceRow; secret: string } {
    const now = this.clock.now();
    const secret = newSecret();
    // The secret read here becomes the previous one: no other rotation may come in between.
    const rotated = writeTransaction(this.db, () => {
      const row = this.get(projectId, id);
      statement(
        this.db,
        'UPDATE webhook_sources SET secret = ?, previous_secret = ?, previous_secret_expires_at = ?, updated_at = ? WHERE id = ?',
      ).run(
        secret,
        graceMinutes > 0 ? row.secret : null,
        graceMinutes > 0 ? iso(now + graceMinutes * 60_000) : null,
        iso(now),
        id,
      );
      return this.get(projectId, id);
    });
    this.#active = null;
    return { row: rotated, secret };
  }

  delete(projectId: number, id: number): void {
    writeTransaction(this.db, () => {
      this.get(projectId, id);
      statement(this.db, 'DELETE FROM webhook_sources WHERE id = ?').run(id);
    });
    this.#active = null;
  }

  /** Enabled sources of a kind, cached until a source changes; a previous secret only within its grace. */
  active(kind: WebhookKind): ActiveSource[] {
    if (!this.#active) {
      const rows = statement(
        this.db,
        'SELECT * FROM webhook_sources WHERE enabled = 1 ORDER BY id',
      ).all() as WebhookSourceRow[];
      this.#active = new Map();
      for (const row of rows) {
        const list = this.#active.get(row.kind) ?? [];
        const entries = JSON.parse(row.ip_allowlist) as string[];
        list.push({
          id: row.id,
          projectId: row.project_id,
          kind: row.kind,
          secrets: [row.secret, ...(row.previous_secret ? [row.previous_secret] : [])],
          allow: entries.length ? buildAllowlist(entries) : null,
          ratePerMinute: row.rate_limit_per_minute,
          graceUntil: row.previous_secret_expires_at ? Date.parse(row.previous_secret_expires_at) : 0,
        });
        this.#active.set(row.kind, list);
      }
    }
    const now = this.clock.now();
    return (this.#active.get(kind) ?? []).map((s) =>
      s.secrets.length > 1 && s.graceUntil <= now ? { ...s, secrets: s.secrets.slice(0, 1) } : s,
    );
  }
}

function parseEntry(entry: string): { address: string; prefix: number | null; family: 'ipv4' | 'ipv6' } | null {
  const [address, prefixText, extra] = entry.trim().split('/');
  if (extra !== undefined || !address) return null;
  const version = isIP(address);
  if (version === 0) return null;
  const family = version === 4 ? 'ipv4' : 'ipv6';
  if (prefixText === undefined) return { address, prefix: null, family };
  if (!/^\d{1,3}$/.test(prefixText)) return null;
  const prefix = Number(prefixText);
  if (prefix > (version === 4 ? 32 : 128)) return null;
  return { address, prefix, family };
}

export function buildAllowlist(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const parsed = parseEntry(entry);
    if (!parsed) throw validationError({ ip_allowlist: [`"${entry}" is not an address or CIDR range.`] });
    if (parsed.prefix === null) list.addAddress(parsed.address, parsed.family);
    else list.addSubnet(parsed.address, parsed.prefix, parsed.family);
  }
  return list;
}

/** Is the client address inside the allowlist? IPv4-mapped IPv6 (`::ffff:10.0.0.5`) counts as IPv4. */
export function allowed(list: BlockList, address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return list.check(mapped[1]!, 'ipv4') || list.check(address, 'ipv6');
  const version = isIP(address);
  if (version === 0) return false;
  return list.check(address, version === 4 ? 'ipv4' : 'ipv6');
}
