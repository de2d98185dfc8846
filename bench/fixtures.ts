import type { Database } from '../src/store/database.js';

// Bench data written straight into SQLite (setting up is not what a bench measures): one
// attendee type allowed into two zones, access points, and attendees with credentials.

export interface SeededVenue {
  zones: { arena: number; lounge: number };
  points: { arenaBoth: number; loungeIn: number };
  credentialValues: string[];
}

export function seedVenue(
  db: Database,
  projectId: number,
  attendees: number,
  credentialsPerAttendee: number,
  options: { keepValues?: boolean } = {},
): SeededVenue {
  const now = new Date().toISOString();
  let version = (db.prepare('SELECT value FROM change_sequence WHERE id = 1').get() as { value: number }).value;
  const next = () => ++version;
  const values: string[] = [];
  const result = db.transaction(() => {
    const zone = db.prepare(
      'INSERT INTO access_zones (project_id, name, slug, capacity, requires_ticket, version, created_at, updated_at) VALUES (?, ?, ?, NULL, 1, ?, ?, ?)',
    );
    const arena = Number(zone.run(projectId, 'Arena', 'arena', next(), now, now).lastInsertRowid);
    const lounge = Number(zone.run(projectId, 'Lounge', 'lounge', next(), now, now).lastInsertRowid);
    const point = db.prepare(
      'INSERT INTO access_points (project_id, access_zone_id, name, slug, direction, is_active, version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?)',
    );
    const arenaBoth = Number(
      point.run(projectId, arena, 'Arena gate', 'arena-gate', 'both', next(), now, now).lastInsertRowid,
    );
    const loungeIn = Number(
      point.run(projectId, lounge, 'Lounge door', 'lounge-door', 'in', next(), now, now).lastInsertRowid,
    );
    const type = Number(
      db
        .prepare(
          'INSERT INTO attendee_types (project_id, name, slug, version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
        )
        .run(projectId, 'Guest', 'guest', next(), now, now).lastInsertRowid,
    );
    db.prepare('INSERT INTO attendee_type_zones (attendee_type_id, access_zone_id) VALUES (?, ?), (?, ?)').run(
      type,
      arena,
      type,
      lounge,
    );
    // Lounge: open every day 06:00-02:00, so decisions there check a window.
    db.prepare(
      "INSERT INTO time_restrictions (project_id, access_zone_id, attendee_type_id, days_of_week, start_time, end_time, version, created_at, updated_at) VALUES (?, ?, NULL, '[1,2,3,4,5,6,7]', '06:00', '02:00', ?, ?, ?)",
    ).run(projectId, lounge, next(), now, now);
    const attendee = db.prepare(
      "INSERT INTO attendees (project_id, attendee_type_id, first_name, last_name, email, status, version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'active', ?, ?, ?)",
    );
    const credential = db.prepare(
      "INSERT INTO credentials (project_id, attendee_id, value, kind, status, version, created_at, updated_at) VALUES (?, ?, ?, 'qr', 'active', ?, ?, ?)",
    );
    for (let i = 0; i < attendees; i++) {
      const id = Number(
        attendee.run(projectId, type, `First${i}`, `Last${i}`, `person${i}@example.test`, next(), now, now)
          .lastInsertRowid,
      );
      for (let c = 0; c < credentialsPerAttendee; c++) {
        const value = `CRED-${String(i).padStart(8, '0')}-${c}`;
        credential.run(projectId, id, value, next(), now, now);
        if (options.keepValues !== false) values.push(value);
      }
    }
    db.prepare('UPDATE change_sequence SET value = ? WHERE id = 1').run(version);
    return { zones: { arena, lounge }, points: { arenaBoth, loungeIn } };
  })();
  return { ...result, credentialValues: values };
}
