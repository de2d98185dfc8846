import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import { AppError, validationError } from '../errors.js';
import type { EventBus } from '../events/bus.js';
import { commit, type Work } from '../events/unit-of-work.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import type { AttendeeRow } from '../venue/attendees.js';
import { credentialResource } from '../venue/credentials.js';
import type { Venue } from '../venue/index.js';

// POST /webhook/v1/registration-partner (spec: Endpoints, Incoming webhooks;
// docs/webhooks-incoming.md). The registration partner tells us about its registrations; the
// registration_id is the attendee's external_id. Each event is applied once per project: its
// event_id is recorded in partner_events in the same transaction as its writes, and an event_id
// seen before is acknowledged as `replayed` without being applied again. An event about a
// registration we do not know is refused (404) and not recorded, so the partner can send it
// again once the registration exists.

export const PARTNER_EVENT_TYPES = [
  'registration.created',
  'registration.updated',
  'registration.cancelled',
  'attendee.checked_in',
] as const;
export type PartnerOutcome = 'created' | 'updated' | 'cancelled' | 'checked_in' | 'replayed';

const OUTCOMES: Record<(typeof PARTNER_EVENT_TYPES)[number], PartnerOutcome> = {
  'registration.created': 'created',
  'registration.updated': 'updated',
  'registration.cancelled': 'cancelled',
  'attendee.checked_in': 'checked_in',
};

export const partnerEventBody = z
  .object({
    event_type: z.enum(PARTNER_EVENT_TYPES),
    event_id: z.string().trim().min(1).max(255),
    data: z.object({
      registration_id: z.string().trim().min(1).max(255),
      attendee: z
        .object({
          first_name: z.string().trim().min(1).max(255).optional(),
          last_name: z.string().trim().max(255).optional(),
          email: z.email().max(255).nullable().optional(),
        })
        .optional(),
      credential_value: z
        .string()
        .min(1)
        .max(512)
        .optional()
        .describe('registration.created: the ticket code to use; default a generated REG-<24 base32>'),
    }),
    timestamp: z
      .union([z.iso.datetime({ offset: true }), z.number().int().nonnegative().describe('Unix seconds')])
      .optional()
      .describe('when it happened at the partner (attendee.checked_in: the check-in time); default now'),
  })
  .superRefine((event, ctx) => {
    const required = (path: string[]) =>
      ctx.addIssue({
        code: 'invalid_type',
        expected: 'string',
        path,
        message: 'Invalid input: expected string, received undefined',
      });
    if (event.event_type === 'registration.created' && event.data.attendee?.first_name === undefined)
      required(['data', 'attendee', 'first_name']);
    if (event.event_type === 'registration.updated' && event.data.attendee === undefined)
      required(['data', 'attendee']);
  });

export type PartnerEvent = z.output<typeof partnerEventBody>;

export const partnerResponseSchema = z.object({
  success: z.literal(true),
  event_id: z.string(),
  outcome: z.enum(['created', 'updated', 'cancelled', 'checked_in', 'replayed']),
  attendee_id: z.number().int().nullable(),
  credential_value: z.string().optional().describe('registration.created: the credential issued'),
  message: z.string(),
});
export type PartnerResponse = z.infer<typeof partnerResponseSchema>;

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** REG- and 24 base32 characters: 120 random bits, not guessable from any other ticket. */
export function generateCredentialValue(): string {
  const bytes = randomBytes(15);
  let bits = 0;
  let acc = 0;
  let out = 'REG-';
  for (const byte of bytes) {
    acc = (acc << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(acc >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return out;
}

export const checkInSchema = z.object({
  id: z.number().int(),
  attendee_id: z.number().int().nullable(),
  registration_id: z.string(),
  event_id: z.string(),
  checked_in_at: z.string(),
  received_at: z.string(),
});
export type CheckIn = z.infer<typeof checkInSchema>;

export class RegistrationPartner {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    private readonly venue: Pick<Venue, 'attendees' | 'credentials'>,
  ) {}

  /** The signing source's project; while requests come unsigned, the only project there is. */
  projectFor(admitted: number | null): number {
    if (admitted !== null) return admitted;
    const ids = statement(this.db, 'SELECT id FROM projects ORDER BY id LIMIT 2').pluck().all() as number[];
    if (ids.length !== 1) throw new AppError('project_required');
    return ids[0]!;
  }

  /** Check-ins the partner reported, newest first. */
  checkIns(projectId: number, offset: number, limit: number): { items: CheckIn[]; total: number } {
    const items = statement(
      this.db,
      'SELECT id, attendee_id, registration_id, event_id, checked_in_at, received_at FROM check_ins WHERE project_id = ? ORDER BY checked_in_at DESC, id DESC LIMIT ? OFFSET ?',
    ).all(projectId, limit, offset) as CheckIn[];
    const { n } = statement(this.db, 'SELECT count(*) AS n FROM check_ins WHERE project_id = ?').get(projectId) as {
      n: number;
    };
    return { items, total: n };
  }

  handle(projectId: number, event: PartnerEvent): PartnerResponse {
    return commit(this.db, this.bus, (work) => {
      const seen = statement(
        this.db,
        'SELECT event_type, outcome, attendee_id, received_at FROM partner_events WHERE project_id = ? AND event_id = ?',
      ).get(projectId, event.event_id) as
        | { event_type: string; outcome: string; attendee_id: number | null; received_at: string }
        | undefined;
      if (seen) {
        const message = `Event "${event.event_id}" (${seen.event_type}: ${seen.outcome}) was applied at ${seen.received_at}; it is not applied again.`;
        return { success: true, event_id: event.event_id, outcome: 'replayed', attendee_id: seen.attendee_id, message };
      }
      const answer = this.apply(projectId, event, work);
      statement(
        this.db,
        'INSERT INTO partner_events (project_id, event_id, event_type, registration_id, outcome, attendee_id, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ).run(
        projectId,
        event.event_id,
        event.event_type,
        event.data.registration_id,
        answer.outcome,
        answer.attendee_id,
        iso(this.clock.now()),
      );
      return answer;
    });
  }

  private apply(projectId: number, event: PartnerEvent, work: Work): PartnerResponse {
    const registrationId = event.data.registration_id;
    const answer = (
      attendeeId: number,
      message: string,
      extra: { credential_value?: string } = {},
    ): PartnerResponse => ({
      success: true,
      event_id: event.event_id,
      outcome: OUTCOMES[event.event_type],
      attendee_id: attendeeId,
      ...extra,
      message,
    });
    const current = this.registration(projectId, registrationId);
    if (event.event_type === 'registration.created') {
      if (current) throw new AppError('registration_exists', { identifier: registrationId });
      const { attendee, credential } = this.create(projectId, event, work);
      return answer(
        attendee.id,
        `Registration "${registrationId}" created attendee ${attendee.id} with a credential.`,
        { credential_value: credential },
      );
    }
    if (!current) throw new AppError('unknown_registration', { identifier: registrationId });
    if (event.event_type === 'registration.updated') {
      this.update(projectId, current, event.data.attendee ?? {}, work);
      return answer(current.id, `Registration "${registrationId}" updated.`);
    }
    if (event.event_type === 'registration.cancelled') {
      const revoked = this.cancel(projectId, current, work);
      return answer(
        current.id,
        `Registration "${registrationId}" cancelled; ${revoked} credential${revoked === 1 ? '' : 's'} revoked.`,
      );
    }
    const at =
      event.timestamp === undefined
        ? this.clock.now()
        : typeof event.timestamp === 'number'
          ? event.timestamp * 1000
          : Date.parse(event.timestamp);
    statement(
      this.db,
      'INSERT INTO check_ins (project_id, attendee_id, registration_id, event_id, checked_in_at, received_at) VALUES (?, ?, ?, ?, ?, ?)',
    ).run(projectId, current.id, registrationId, event.event_id, iso(at), iso(this.clock.now()));
    return answer(current.id, `Check-in of registration "${registrationId}" recorded.`);
  }

  private registration(projectId: number, registrationId: string): AttendeeRow | null {
    return (
      (statement(this.db, 'SELECT * FROM attendees WHERE project_id = ? AND external_id = ?').get(
        projectId,
        registrationId,
      ) as AttendeeRow | undefined) ?? null
    );
  }

  private create(projectId: number, event: PartnerEvent, work: Work): { attendee: AttendeeRow; credential: string } {
    const given = event.data.credential_value;
    if (given !== undefined && this.venue.credentials.table.exists(projectId, 'value', given)) {
      throw validationError({ 'data.credential_value': ['The credential value is already in use in this project.'] });
    }
    let value = given ?? generateCredentialValue();
    while (this.venue.credentials.table.exists(projectId, 'value', value)) value = generateCredentialValue();
    const person = event.data.attendee!;
    const attendee = this.venue.attendees.insert(
      projectId,
      {
        first_name: person.first_name!,
        last_name: person.last_name ?? '',
        email: person.email ?? null,
        external_id: event.data.registration_id,
      },
      work,
    );
    this.venue.credentials.insert(projectId, attendee.id, { value }, work);
    return { attendee, credential: value };
  }

  private update(
    projectId: number,
    current: AttendeeRow,
    person: NonNullable<PartnerEvent['data']['attendee']>,
    work: Work,
  ): void {
    const values: Record<string, string | null> = {};
    if (person.first_name !== undefined) values.first_name = person.first_name;
    if (person.last_name !== undefined) values.last_name = person.last_name;
    if (person.email !== undefined) values.email = person.email?.toLowerCase() ?? null;
    if (Object.keys(values).length === 0) return;
    const row = this.venue.attendees.table.update(projectId, current.id, values);
    work.emit('attendee.updated', { projectId, resource: this.venue.attendees.resource(row), version: row.version });
  }

  /** Revokes every active credential and marks the attendee cancelled; answers how many were revoked. */
  private cancel(projectId: number, current: AttendeeRow, work: Work): number {
    const active = this.venue.credentials.ofAttendee(current.id).filter((c) => c.status === 'active');
    for (const credential of active) {
      const row = this.venue.credentials.table.update(projectId, credential.id, {
        status: 'revoked',
        revoked_at: iso(this.clock.now()),
      });
      work.emit('credential.revoked', { projectId, resource: credentialResource(row), version: row.version });
    }
    if (current.status !== 'cancelled') {
      const row = this.venue.attendees.table.update(projectId, current.id, { status: 'cancelled' });
      work.emit('attendee.updated', { projectId, resource: this.venue.attendees.resource(row), version: row.version });
    }
    return active.length;
  }
}
