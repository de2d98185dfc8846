import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { EventBus } from '../events/bus.js';
import type { Project } from '../accounts/projects.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import { createVenue } from '../venue/index.js';
import { CliError } from './cli-error.js';

// `npm run demo`: a realistic demo venue in a project, so a newcomer can scan something in
// the first minute: zones with capacities, gates in and out, readers, attendee types,
// 5,000 attendees with credentials, a blocklisted attendee and time-restricted zones.

const FIRST = [
  'Ada',
  'Ben',
  'Chloe',
  'Dev',
  'Elena',
  'Femi',
  'Grace',
  'Hugo',
  'Ines',
  'Jon',
  'Kira',
  'Luca',
  'Mia',
  'Noah',
  'Olga',
  'Priya',
  'Quinn',
  'Rosa',
  'Sam',
  'Tariq',
];
const LAST = [
  'Okafor',
  'Schmidt',
  'Garcia',
  'Nguyen',
  'Rossi',
  'Kowalski',
  'Haddad',
  'Silva',
  'Tanaka',
  'Murphy',
  'Larsen',
  'Dubois',
  'Patel',
  'Novak',
  'Costa',
  'Berg',
  'Ali',
  'Moreau',
  'Fischer',
  'Lopez',
];

export interface DemoSummary {
  project: string;
  zones: number;
  access_points: number;
  readers: string[];
  attendees: number;
  credentials: number;
  try_these: Record<string, string>;
}

export function seedDemo(db: Database, clock: Clock, log: Logger, project: Project, count = 5000): DemoSummary {
  if (statement(db, 'SELECT 1 FROM access_zones WHERE project_id = ?').get(project.id)) {
    throw new CliError(
      `the project ${project.team_slug}/${project.slug} already has a venue; seed another project (--project TEAM/PROJECT)`,
    );
  }
  const venue = createVenue(db, clock, new EventBus(log));
  const p = project.id;
  const zone = (name: string, capacity: number | null, requires_ticket = false, anti_passback = false) =>
    venue.zones.create(p, { name, capacity, requires_ticket, anti_passback }).id;
  const arena = zone('Arena', 5000);
  const vip = zone('VIP Lounge', 150, true);
  const backstage = zone('Backstage', 60, true);
  // The press room refuses re-entry (a pass handed back out of the door): the demo's one zone with anti-passback.
  const press = zone('Press Room', 40, false, true);
  const point = (name: string, location: string, access_zone_id: number, direction: 'in' | 'out' | 'both') =>
    venue.accessPoints.create(p, { name, location, access_zone_id, direction }).id;
  const gateIn = point('Main Gate In', 'North entrance, lanes 1-4', arena, 'in');
  const gateOut = point('Main Gate Out', 'North entrance, exit lanes', arena, 'out');
  const vipDoor = point('VIP Door', 'Level 2, east stairs', vip, 'both');
  const backDoor = point('Backstage Door', 'Loading dock', backstage, 'in');
  const pressDoor = point('Press Entrance', 'Media centre', press, 'in');
  const readers: [string, 'barcode' | 'qr' | 'rfid' | 'nfc', number][] = [
    ['GATE-IN-1', 'qr', gateIn],
    ['GATE-IN-2', 'qr', gateIn],
    ['GATE-OUT-1', 'barcode', gateOut],
    ['VIP-1', 'nfc', vipDoor],
    ['BACKSTAGE-1', 'rfid', backDoor],
    ['PRESS-1', 'qr', pressDoor],
  ];
  for (const [identifier, type, access_point_id] of readers)
    venue.readers.create(p, { identifier, type, access_point_id });
  const type = (name: string, slug: string, zone_ids: number[]) =>
    venue.attendeeTypes.create(p, { name, slug, zone_ids });
  type('General admission', 'general', [arena]);
  type('VIP', 'vip', [arena, vip]);
  type('Crew', 'crew', [arena, vip, backstage, press]);
  const pressType = type('Press', 'press', [arena, press]);
  const vipType = venue.attendeeTypes.bySlug(p, 'vip')!;
  venue.timeRestrictions.create(p, {
    access_zone_id: press,
    attendee_type_id: pressType.id,
    days_of_week: [1, 2, 3, 4, 5, 6, 7],
    start_time: '08:00',
    end_time: '20:00',
  });
  venue.timeRestrictions.create(p, {
    access_zone_id: vip,
    attendee_type_id: vipType.id,
    days_of_week: [5, 6],
    start_time: '18:00',
    end_time: '02:00',
  });

  const kinds = ['general', 'general', 'general', 'general', 'general', 'general', 'vip', 'crew', 'press', 'general'];
  const rows = Array.from({ length: count }, (_, i) => {
    const n = i + 1;
    const first = FIRST[i % FIRST.length]!;
    const last = LAST[Math.floor(i / FIRST.length) % LAST.length]!;
    const attendee_type = kinds[i % kinds.length]!;
    return {
      first_name: first,
      last_name: last,
      email: `${first}.${last}.${n}@demo.gatehouse.test`.toLowerCase(),
      attendee_type,
      external_id: `DEMO-${String(n).padStart(5, '0')}`,
      credential_value: `GH-${String(n).padStart(6, '0')}`,
      credential_kind: attendee_type === 'crew' ? 'rfid' : 'qr',
    };
  });
  const report = venue.importer.run(p, rows, 'all');
  const blocked = statement(db, "SELECT id FROM attendees WHERE project_id = ? AND external_id = 'DEMO-00013'")
    .pluck()
    .get(p) as number;
  venue.blocklist.create(p, { attendee_id: blocked, reason: 'Demo: ejected for climbing the lighting rig' });
  return {
    project: `${project.team_slug}/${project.slug}`,
    zones: 4,
    access_points: 5,
    readers: readers.map(([id]) => id),
    attendees: report.imported,
    credentials: report.credentials,
    try_these: {
      'GH-000001': 'general admission: granted at GATE-IN-1',
      'GH-000007': 'VIP: Arena, and the VIP Lounge on Friday and Saturday evenings',
      'GH-000008': 'crew: everywhere, RFID at BACKSTAGE-1',
      'GH-000009':
        'press: Press Room 08:00-20:00 only, and not twice in a row (the room refuses re-entry: already_inside)',
      'GH-000013': 'blocklisted attendee: denied everywhere',
      'NOT-A-TICKET': 'unknown credential: invalid_credential',
    },
  };
}
