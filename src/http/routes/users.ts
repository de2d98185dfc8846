import { z } from 'zod';
import { AppError, found, notFound, validationError } from '../../errors.js';
import type { User } from '../../accounts/users.js';
import type { HttpDeps } from '../deps.js';
import { collectionSchema, pageQuery, paginate, window } from '../pagination.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { messageSchema, single, userResource, userSchema, validationErrorSchema } from '../resources.js';

// Administrators manage users and what they may reach (docs/auth.md, "Users, teams and reach"). Deactivation is
// `PUT {is_active: false}`: the user's tokens and sessions stop working at once (every
// request re-reads the user) and start again on reactivation. DELETE removes the user and
// everything that was theirs.

const userId = z.object({ userId: z.coerce.number().int().positive() });
const email = z
  .email()
  .max(255)
  .transform((e) => e.toLowerCase());
const password = z.string().min(8).max(1024);

const createUser = z.strictObject({
  name: z.string().trim().min(1).max(255),
  email,
  password,
  is_admin: z.boolean().optional(),
  read_only: z.boolean().optional(),
});

const updateUser = z.strictObject({
  name: z.string().trim().min(1).max(255).optional(),
  email: email.optional(),
  password: password.optional(),
  is_admin: z.boolean().optional(),
  is_active: z.boolean().optional(),
  read_only: z.boolean().optional(),
});

const ADMIN_READ_ONLY = 'An administrator cannot be read-only.';

const teamGrant = z.strictObject({ team_slug: z.string().min(1) });
const projectGrant = z.strictObject({ team_slug: z.string().min(1), project_slug: z.string().min(1) });

const common = { tags: ['Users'], rateClass: 'standard' as const, admin: true };
const userResponse = { description: 'The user', schema: single(userSchema) };
const notFoundResponse = { description: 'No such user', schema: messageSchema };

export function userRoutes(deps: HttpDeps): AnyRoute[] {
  const show = (user: User) => ({ data: userResource(user, deps.memberships.grantsOf(user.id)) });
  const load = (id: number) => found(deps.users.find(id), 'User');
  const team = (slug: string) => found(deps.teams.findBySlug(slug), 'Team');

  return [
    defineRoute({
      ...common,
      method: 'GET',
      path: '/api/v1/users',
      operationId: 'users.index',
      summary: 'List users',
      ability: '*',
      query: pageQuery,
      responses: { 200: { description: 'A page of users', schema: collectionSchema(userSchema) } },
      handler: ({ query, koa }) => {
        const { items, total } = deps.users.list(window(query).offset, window(query).limit);
        return {
          body: paginate(
            koa,
            query,
            items.map((u) => show(u).data),
            total,
          ),
        };
      },
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: '/api/v1/users',
      operationId: 'users.store',
      summary: 'Create a user',
      ability: '*',
      body: createUser,
      responses: { 201: userResponse, 422: { description: 'Invalid or taken', schema: validationErrorSchema } },
      handler: async ({ body }) => {
        if (deps.users.emailTaken(body.email)) throw validationError({ email: ['The email has already been taken.'] });
        if (body.is_admin && body.read_only) throw validationError({ read_only: [ADMIN_READ_ONLY] });
        const user = await deps.users.create(body);
        deps.log.info({ userId: user.id }, 'user created');
        return { status: 201, body: show(user) };
      },
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: '/api/v1/users/{userId}',
      operationId: 'users.show',
      summary: 'Show a user',
      ability: '*',
      params: userId,
      responses: { 200: userResponse, 404: notFoundResponse },
      handler: ({ params }) => ({ body: show(load(params.userId)) }),
    }),
    defineRoute({
      ...common,
      method: 'PUT',
      path: '/api/v1/users/{userId}',
      operationId: 'users.update',
      summary: 'Update a user; is_active false deactivates',
      ability: '*',
      params: userId,
      body: updateUser,
      responses: {
        200: userResponse,
        404: notFoundResponse,
        422: { description: 'Invalid', schema: validationErrorSchema },
      },
      handler: async ({ params, body, principal }) => {
        const before = load(params.userId);
        if (body.email && deps.users.emailTaken(body.email, params.userId))
          throw validationError({ email: ['The email has already been taken.'] });
        if (params.userId === principal!.user.id && (body.is_active === false || body.is_admin === false)) {
          throw validationError({
            [body.is_active === false ? 'is_active' : 'is_admin']: [
              'You cannot deactivate or demote your own account.',
            ],
          });
        }
        if ((body.is_admin ?? before.is_admin) && (body.read_only ?? before.read_only))
          throw validationError({ read_only: [ADMIN_READ_ONLY] });
        const user = await deps.users.update(params.userId, body);
        return { body: show(user!) };
      },
    }),
    defineRoute({
      ...common,
      method: 'DELETE',
      path: '/api/v1/users/{userId}',
      operationId: 'users.destroy',
      summary: 'Delete a user with their tokens, sessions and memberships',
      ability: '*',
      params: userId,
      responses: {
        204: { description: 'Deleted' },
        404: notFoundResponse,
        409: { description: 'Cannot delete yourself', schema: messageSchema },
      },
      handler: ({ params, principal }) => {
        load(params.userId);
        if (params.userId === principal!.user.id)
          throw new AppError('conflict', { detail: 'You cannot delete your own account.' });
        deps.users.delete(params.userId);
        deps.log.info({ userId: params.userId }, 'user deleted');
        return { status: 204 };
      },
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: '/api/v1/users/{userId}/teams',
      operationId: 'users.teams.store',
      summary: 'Give a user every project of a team',
      ability: '*',
      params: userId,
      body: teamGrant,
      responses: { 200: userResponse, 404: { description: 'No such user or team', schema: messageSchema } },
      handler: ({ params, body }) => {
        const user = load(params.userId);
        deps.memberships.grantTeam(user.id, team(body.team_slug).id);
        return { body: show(user) };
      },
    }),
    defineRoute({
      ...common,
      method: 'DELETE',
      path: '/api/v1/users/{userId}/teams/{teamSlug}',
      operationId: 'users.teams.destroy',
      summary: 'Take a team away from a user',
      ability: '*',
      params: userId.extend({ teamSlug: z.string() }),
      responses: { 200: userResponse, 404: { description: 'No such user, team or membership', schema: messageSchema } },
      handler: ({ params }) => {
        const user = load(params.userId);
        if (!deps.memberships.revokeTeam(user.id, team(params.teamSlug).id)) throw notFound('Membership');
        return { body: show(user) };
      },
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: '/api/v1/users/{userId}/projects',
      operationId: 'users.projects.store',
      summary: 'Give a user a single project',
      ability: '*',
      params: userId,
      body: projectGrant,
      responses: { 200: userResponse, 404: { description: 'No such user or project', schema: messageSchema } },
      handler: ({ params, body }) => {
        const user = load(params.userId);
        const project = found(deps.projects.findBySlugs(body.team_slug, body.project_slug), 'Project');
        deps.memberships.grantProject(user.id, project.id);
        return { body: show(user) };
      },
    }),
    defineRoute({
      ...common,
      method: 'DELETE',
      path: '/api/v1/users/{userId}/projects/{teamSlug}/{projectSlug}',
      operationId: 'users.projects.destroy',
      summary: 'Take a single project away from a user',
      ability: '*',
      params: userId.extend({ teamSlug: z.string(), projectSlug: z.string() }),
      responses: {
        200: userResponse,
        404: { description: 'No such user, project or membership', schema: messageSchema },
      },
      handler: ({ params }) => {
        const user = load(params.userId);
        const project = found(deps.projects.findBySlugs(params.teamSlug, params.projectSlug), 'Project');
        if (!deps.memberships.revokeProject(user.id, project.id)) throw notFound('Membership');
        return { body: show(user) };
      },
    }),
  ];
}
