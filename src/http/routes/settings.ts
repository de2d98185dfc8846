import { z } from 'zod';
import type { HttpDeps } from '../deps.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { single, validationErrorSchema } from '../resources.js';

// Run-time settings an administrator may change without a restart (docs/config.md).
const settingsSchema = z.object({
  token_expiry_minutes: z
    .number()
    .int()
    .nullable()
    .describe('Minutes a token lives after creation; null = no expiry (the default). Applies to existing tokens too.'),
});

const settingsUpdate = z.strictObject({
  token_expiry_minutes: z
    .number()
    .int()
    .min(1)
    .max(525_600 * 10)
    .nullable()
    .optional(),
});

export function settingsRoutes(deps: HttpDeps): AnyRoute[] {
  const common = { tags: ['Settings'], rateClass: 'standard' as const, admin: true, ability: '*' as const };
  return [
    defineRoute({
      ...common,
      method: 'GET',
      path: '/api/v1/settings',
      operationId: 'settings.show',
      summary: 'Run-time settings (administrators)',
      responses: { 200: { description: 'The settings', schema: single(settingsSchema) } },
      handler: () => ({ body: { data: deps.settings.get() } }),
    }),
    defineRoute({
      ...common,
      method: 'PUT',
      path: '/api/v1/settings',
      operationId: 'settings.update',
      summary: 'Change run-time settings (administrators)',
      body: settingsUpdate,
      responses: {
        200: { description: 'The settings', schema: single(settingsSchema) },
        422: { description: 'Invalid', schema: validationErrorSchema },
      },
      handler: ({ body }) => ({ body: { data: deps.settings.update(body) } }),
    }),
  ];
}
