import { z } from 'zod';
import { found, validationError } from '../../errors.js';
import { isTimeZone, slugField } from '../../accounts/slug.js';
import type { HttpDeps } from '../deps.js';
import { collectionSchema, pageQuery, paginate, window } from '../pagination.js';
import { defineRoute, type AnyRoute } from '../route.js';
import {
  messageSchema,
  projectResource,
  projectSchema,
  single,
  teamResource,
  teamSchema,
  validationErrorSchema,
} from '../resources.js';

// Projects are addressed as {teamSlug}/{projectSlug} (spec: What the service does, item 1).
// GET /api/v1/projects lists only what the account may reach; a project it cannot reach is
// answered 404, the same as one that does not exist.

import { DEFAULT_TEAM_SLUG } from '../../accounts/teams.js';

const timezone = z.string().refine(isTimeZone, 'an IANA time zone such as Europe/Berlin');
const projectPath = z.object({ teamSlug: z.string(), projectSlug: z.string() });

const createProject = z.strictObject({
  name: z.string().trim().min(1).max(255),
  slug: slugField.optional(),
  team_slug: z.string().min(1).optional(),
  timezone: timezone.optional(),
});

const updateProject = z.strictObject({
  name: z.string().trim().min(1).max(255).optional(),
  slug: slugField.optional(),
  timezone: timezone.optional(),
  signed_credentials_by_default: z.boolean().optional(),
});

const createTeam = z.strictObject({ name: z.string().trim().min(1).max(255), slug: slugField.optional() });

const projectResponse = { description: 'The project', schema: single(projectSchema) };

export function projectRoutes(deps: HttpDeps): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/api/v1/projects',
      operationId: 'projects.index',
      tags: ['Projects'],
      summary: 'Projects the account can reach',
      ability: 'authenticated',
      rateClass: 'standard',
      query: pageQuery,
      responses: { 200: { description: 'A page of projects', schema: collectionSchema(projectSchema) } },
      handler: ({ query, principal, koa }) => {
        const reach = { userId: principal!.user.id, isAdmin: principal!.user.is_admin };
        const { items, total } = deps.projects.listReachable(reach, window(query).offset, window(query).limit);
        return { body: paginate(koa, query, items.map(projectResource), total) };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/api/v1/projects',
      operationId: 'projects.store',
      tags: ['Projects'],
      summary: 'Create a project (administrators)',
      description: `team_slug defaults to the "${DEFAULT_TEAM_SLUG}" team; timezone to the configured default; slug is derived from the name when omitted.`,
      ability: '*',
      admin: true,
      rateClass: 'standard',
      body: createProject,
      responses: {
        201: projectResponse,
        422: { description: 'Invalid, unknown team or slug taken', schema: validationErrorSchema },
      },
      handler: ({ body }) => {
        const team = deps.teams.findBySlug(body.team_slug ?? DEFAULT_TEAM_SLUG);
        if (!team)
          throw validationError({ team_slug: [`The team "${body.team_slug ?? DEFAULT_TEAM_SLUG}" does not exist.`] });
        if (body.slug && deps.projects.slugTaken(team.id, body.slug))
          throw validationError({ slug: ['The slug has already been taken.'] });
        const project = deps.projects.create({
          teamId: team.id,
          name: body.name,
          slug: body.slug,
          timezone: body.timezone ?? deps.config.defaults.timezone,
        });
        return { status: 201, body: { data: projectResource(project) } };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/api/v1/projects/{teamSlug}/{projectSlug}',
      operationId: 'projects.show',
      tags: ['Projects'],
      summary: 'Show a project',
      ability: 'authenticated',
      rateClass: 'standard',
      project: true,
      params: projectPath,
      responses: {
        200: projectResponse,
        404: { description: 'No such project, or not reachable', schema: messageSchema },
      },
      handler: ({ project }) => ({ body: { data: projectResource(project!) } }),
    }),
    defineRoute({
      method: 'PUT',
      path: '/api/v1/projects/{teamSlug}/{projectSlug}',
      operationId: 'projects.update',
      tags: ['Projects'],
      summary: 'Update a project (administrators)',
      ability: '*',
      admin: true,
      rateClass: 'standard',
      project: true,
      params: projectPath,
      body: updateProject,
      responses: {
        200: projectResponse,
        404: { description: 'No such project', schema: messageSchema },
        422: { description: 'Invalid', schema: validationErrorSchema },
      },
      handler: ({ project, body }) => {
        if (body.slug && deps.projects.slugTaken(project!.team_id, body.slug, project!.id))
          throw validationError({ slug: ['The slug has already been taken.'] });
        const updated = found(deps.projects.update(project!.id, body), 'Project');
        return { body: { data: projectResource(updated) } };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/api/v1/teams',
      operationId: 'teams.index',
      tags: ['Teams'],
      summary: 'List teams (administrators)',
      ability: '*',
      admin: true,
      rateClass: 'standard',
      query: pageQuery,
      responses: { 200: { description: 'A page of teams', schema: collectionSchema(teamSchema) } },
      handler: ({ query, koa }) => {
        const { items, total } = deps.teams.list(window(query).offset, window(query).limit);
        return { body: paginate(koa, query, items.map(teamResource), total) };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/api/v1/teams',
      operationId: 'teams.store',
      tags: ['Teams'],
      summary: 'Create a team (administrators)',
      ability: '*',
      admin: true,
      rateClass: 'standard',
      body: createTeam,
      responses: {
        201: { description: 'The team', schema: single(teamSchema) },
        422: { description: 'Invalid or slug taken', schema: validationErrorSchema },
      },
      handler: ({ body }) => {
        if (body.slug && deps.teams.findBySlug(body.slug))
          throw validationError({ slug: ['The slug has already been taken.'] });
        return { status: 201, body: { data: teamResource(deps.teams.create(body.name, body.slug)) } };
      },
    }),
  ];
}
