import { z } from 'zod';
import type { Clock } from '../clock.js';
import { addFieldError, emptyFieldErrors, found, validationError, type FieldErrors } from '../errors.js';
import type { EventBus } from '../events/bus.js';
import { commit } from '../events/unit-of-work.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { slugField, slugify, uniqueSlug } from '../accounts/slug.js';
import { VersionedTable } from './versioned-table.js';
import { FIELD_TYPES, type formSchema, type submissionSchema } from '../resources/forms.js';

// Forms and their submissions (spec: forms:* scopes; the form resource is an open point:
// docs/venue.md). A form is a list of typed fields; a submission is checked against them.

const fieldSchema = z
  .strictObject({
    name: z
      .string()
      .regex(/^[a-z][a-z0-9_]{0,62}$/, 'lower-case letters, digits and underscores, starting with a letter'),
    label: z.string().trim().min(1).max(255),
    type: z.enum(FIELD_TYPES),
    required: z.boolean().optional(),
    options: z.array(z.string().min(1).max(255)).min(1).max(200).optional(),
  })
  .refine((f) => (f.type === 'select') === (f.options !== undefined), {
    path: ['options'],
    message: 'options are required for select fields, and only for them',
  });

const fieldList = z
  .array(fieldSchema)
  .min(1)
  .max(200)
  .refine((fs) => new Set(fs.map((f) => f.name)).size === fs.length, 'field names must be unique');

export type FormField = z.output<typeof fieldSchema>;

export interface FormRow {
  id: number;
  project_id: number;
  name: string;
  slug: string;
  fields: string;
  is_active: number;
  version: number;
  created_at: string;
  updated_at: string;
}

export interface SubmissionRow {
  id: number;
  project_id: number;
  form_id: number;
  attendee_id: number | null;
  data: string;
  version: number;
  created_at: string;
  updated_at: string;
}

export const createFormBody = z.strictObject({
  name: z.string().trim().min(1).max(255),
  slug: slugField.optional(),
  fields: fieldList,
  is_active: z.boolean().optional(),
});
export const updateFormBody = z
  .strictObject({ name: z.string().trim().min(1).max(255), slug: slugField, fields: fieldList, is_active: z.boolean() })
  .partial();
export const submissionBody = z.strictObject({
  attendee_id: z.number().int().positive().nullable().optional(),
  data: z.record(z.string(), z.unknown()),
});

export const formResource = (r: FormRow): z.infer<typeof formSchema> => ({
  id: r.id,
  name: r.name,
  slug: r.slug,
  fields: JSON.parse(r.fields) as FormField[],
  is_active: r.is_active === 1,
  version: r.version,
  created_at: r.created_at,
  updated_at: r.updated_at,
});
export const submissionResource = (r: SubmissionRow): z.infer<typeof submissionSchema> => ({
  id: r.id,
  form_id: r.form_id,
  attendee_id: r.attendee_id,
  data: JSON.parse(r.data) as Record<string, unknown>,
  created_at: r.created_at,
});

/** Field errors of a submission against the form's fields; unknown fields are refused. */
export function checkSubmission(fields: FormField[], data: Record<string, unknown>): FieldErrors {
  const errors = emptyFieldErrors();
  const add = (name: string, message: string) => addFieldError(errors, `data.${name}`, message);
  const known = new Set(fields.map((f) => f.name));
  for (const key of Object.keys(data)) if (!known.has(key)) add(key, `The ${key} field is not on this form.`);
  for (const f of fields) {
    const value = data[f.name];
    if (value === undefined || value === null || value === '') {
      if (f.required) add(f.name, `The ${f.label} field is required.`);
      continue;
    }
    const ok =
      f.type === 'number'
        ? typeof value === 'number' && Number.isFinite(value)
        : f.type === 'boolean'
          ? typeof value === 'boolean'
          : f.type === 'email'
            ? typeof value === 'string' && z.email().safeParse(value).success
            : f.type === 'date'
              ? typeof value === 'string' && z.iso.date().safeParse(value).success
              : f.type === 'select'
                ? typeof value === 'string' && (f.options ?? []).includes(value)
                : typeof value === 'string' && value.length <= 10_000;
    if (!ok)
      add(
        f.name,
        `The ${f.label} field must be ${f.type === 'select' ? `one of ${(f.options ?? []).join(', ')}` : `a valid ${f.type}`}.`,
      );
  }
  return errors;
}

export class Forms {
  readonly table: VersionedTable<FormRow>;
  readonly submissions: VersionedTable<SubmissionRow>;

  constructor(
    private readonly db: Database,
    clock: Clock,
    private readonly bus: EventBus,
  ) {
    this.table = new VersionedTable(db, clock, 'forms', 'form');
    this.submissions = new VersionedTable(db, clock, 'form_submissions', 'form_submission');
  }

  get(projectId: number, id: number): FormRow {
    return found(this.table.find(projectId, id), 'Form');
  }

  create(projectId: number, input: z.output<typeof createFormBody>): FormRow {
    return commit(this.db, this.bus, (work) => {
      if (input.slug && this.table.exists(projectId, 'slug', input.slug))
        throw validationError({ slug: ['The slug has already been taken.'] });
      const slug = input.slug ?? uniqueSlug(slugify(input.name), (s) => this.table.exists(projectId, 'slug', s));
      const row = this.table.insert(projectId, {
        name: input.name,
        slug,
        fields: JSON.stringify(input.fields),
        is_active: input.is_active === false ? 0 : 1,
      });
      work.emit('form.created', { projectId, resource: formResource(row), version: row.version });
      return row;
    });
  }

  update(projectId: number, id: number, input: z.output<typeof updateFormBody>): FormRow {
    return commit(this.db, this.bus, (work) => {
      this.get(projectId, id);
      if (input.slug && this.table.exists(projectId, 'slug', input.slug, id))
        throw validationError({ slug: ['The slug has already been taken.'] });
      const values: Record<string, string | number> = {};
      if (input.name !== undefined) values.name = input.name;
      if (input.slug !== undefined) values.slug = input.slug;
      if (input.fields !== undefined) values.fields = JSON.stringify(input.fields);
      if (input.is_active !== undefined) values.is_active = input.is_active ? 1 : 0;
      const row = this.table.update(projectId, id, values);
      work.emit('form.updated', { projectId, resource: formResource(row), version: row.version });
      return row;
    });
  }

  /** A form goes with its submissions, each leaving a tombstone. */
  delete(projectId: number, id: number): void {
    commit(this.db, this.bus, (work) => {
      this.get(projectId, id);
      for (const sid of statement(this.db, 'SELECT id FROM form_submissions WHERE form_id = ?')
        .pluck()
        .all(id) as number[])
        this.submissions.delete(projectId, sid);
      work.emit('form.deleted', { projectId, id, version: this.table.delete(projectId, id) });
    });
  }

  listSubmissions(formId: number, offset: number, limit: number): { items: SubmissionRow[]; total: number } {
    const items = statement(
      this.db,
      'SELECT * FROM form_submissions WHERE form_id = ? ORDER BY id LIMIT ? OFFSET ?',
    ).all(formId, limit, offset) as SubmissionRow[];
    const { n } = statement(this.db, 'SELECT COUNT(*) AS n FROM form_submissions WHERE form_id = ?').get(formId) as {
      n: number;
    };
    return { items, total: n };
  }

  submit(projectId: number, formId: number, input: z.output<typeof submissionBody>): SubmissionRow {
    return commit(this.db, this.bus, (work) => {
      const form = this.get(projectId, formId);
      if (form.is_active !== 1) throw validationError({ form: ['This form is closed.'] });
      if (
        input.attendee_id &&
        !statement(this.db, 'SELECT 1 FROM attendees WHERE project_id = ? AND id = ?').get(projectId, input.attendee_id)
      ) {
        throw validationError({ attendee_id: ['The selected attendee id is invalid.'] });
      }
      const errors = checkSubmission(JSON.parse(form.fields) as FormField[], input.data);
      if (Object.keys(errors).length) throw validationError(errors);
      const row = this.submissions.insert(projectId, {
        form_id: formId,
        attendee_id: input.attendee_id ?? null,
        data: JSON.stringify(input.data),
      });
      work.emit('form_submission.created', { projectId, resource: submissionResource(row), version: row.version });
      return row;
    });
  }
}
