import { z } from 'zod';

// Forms and their submissions as REST shows them and the bus carries them (docs/venue.md). A leaf,
// like venue.ts: the fields' checks on write stay in src/venue/forms.ts.

export const FIELD_TYPES = ['text', 'email', 'number', 'boolean', 'select', 'date'] as const;

export const formSchema = z.object({
  id: z.number().int(),
  name: z.string(),
  slug: z.string(),
  fields: z.array(
    z.object({
      name: z.string(),
      label: z.string(),
      type: z.enum(FIELD_TYPES),
      required: z.boolean().optional(),
      options: z.array(z.string()).optional(),
    }),
  ),
  is_active: z.boolean(),
  version: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type FormResource = z.infer<typeof formSchema>;
export const submissionSchema = z.object({
  id: z.number().int(),
  form_id: z.number().int(),
  attendee_id: z.number().int().nullable(),
  data: z.record(z.string(), z.unknown()),
  created_at: z.string(),
});
export type SubmissionResource = z.infer<typeof submissionSchema>;
