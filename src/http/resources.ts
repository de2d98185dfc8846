import { z } from 'zod';
import type { Project } from '../accounts/projects.js';
import type { Team } from '../accounts/teams.js';
import type { User } from '../accounts/users.js';
import type { Grants } from '../accounts/memberships.js';

// Response schemas (for the OpenAPI description) and the functions that shape records into
// them. Field names follow spec: Resources and their fields.

const timestamp = z.string().describe('ISO 8601 timestamp in UTC');

export const messageSchema = z.object({ message: z.string() });
/** Incoming webhooks answer errors as {error, message} (spec:
 * Errors; the rest of their envelope: http/responses.ts). */
export const webhookError = z.object({ error: z.string(), message: z.string() });
export const validationErrorSchema = z.object({
  message: z.string(),
  errors: z.record(z.string(), z.array(z.string())),
});

export const single = <T extends z.ZodType>(item: T) => z.object({ data: item });

export const projectSchema = z.object({
  id: z.number().int(),
  name: z.string(),
  slug: z.string(),
  team_slug: z.string(),
  timezone: z.string(),
  signed_credentials_by_default: z
    .boolean()
    .describe('A credential issued with no value is signed (docs/credentials.md)'),
  created_at: timestamp,
  updated_at: timestamp,
});

export const projectResource = (p: Project): z.infer<typeof projectSchema> => ({
  id: p.id,
  name: p.name,
  slug: p.slug,
  team_slug: p.team_slug,
  timezone: p.timezone,
  signed_credentials_by_default: p.signed_credentials_by_default === 1,
  created_at: p.created_at,
  updated_at: p.updated_at,
});

export const teamSchema = z.object({ id: z.number().int(), name: z.string(), slug: z.string(), created_at: timestamp });
export const teamResource = (t: Team): z.infer<typeof teamSchema> => ({
  id: t.id,
  name: t.name,
  slug: t.slug,
  created_at: t.created_at,
});

export const userSchema = z.object({
  id: z.number().int(),
  name: z.string(),
  email: z.string(),
  is_admin: z.boolean(),
  is_active: z.boolean(),
  read_only: z.boolean().describe('its sessions act with the read scopes only; its tokens are capped to theirs'),
  teams: z.array(z.string()).describe('slugs of the teams the user belongs to'),
  projects: z.array(z.string()).describe('single projects granted, as teamSlug/projectSlug'),
  created_at: timestamp,
  updated_at: timestamp,
});

export const userResource = (u: User, grants: Grants): z.infer<typeof userSchema> => ({
  id: u.id,
  name: u.name,
  email: u.email,
  is_admin: u.is_admin,
  is_active: u.is_active,
  read_only: u.read_only,
  teams: grants.teams,
  projects: grants.projects,
  created_at: u.created_at,
  updated_at: u.updated_at,
});

export const tokenResultSchema = z.object({
  token: z.string(),
  token_type: z.literal('Bearer'),
  expires_at: timestamp.nullable(),
});

export const meSchema = z.object({
  id: z.number().int(),
  name: z.string(),
  email: z.string(),
  is_admin: z.boolean(),
  current_token: z.object({
    name: z.string(),
    abilities: z.array(z.string()),
    expires_at: timestamp.nullable(),
    last_used_at: timestamp,
  }),
});

export const revokedSchema = z.object({ data: z.object({ revoked: z.number().int() }) });
