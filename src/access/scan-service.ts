import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import type { EventBus } from '../events/bus.js';
import type { Database } from '../store/database.js';
import { statement } from '../store/statements.js';
import type { AccessEngine, Decision, DenialReason } from './engine.js';

// One command path for every transport (STYLE): decide -> persist -> announce -> answer.
// The access event is committed before the decision is announced or answered.
// (Group commit for throughput is the rest of issue 5; today each scan is its own commit.)

export type ScanSource = 'mqtt' | 'webhook' | 'bridge' | 'api';

export interface ScanRequest {
  projectId: number;
  accessPointId: number;
  readerId?: number | null;
  credentialValue: string;
  scannedAt?: number;
  source: ScanSource;
}

export interface ScanOutcome {
  uuid: string;
  decision: Decision;
  decidedAt: string;
  answer: { success: true; access_granted: boolean; reason?: DenialReason; attendee: { id: number; first_name: string; last_name: string } | null };
}

export class ScanService {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    private readonly engine: AccessEngine,
  ) {}

  scan(request: ScanRequest): ScanOutcome {
    const now = this.clock.now();
    const scannedAt = request.scannedAt ?? now;
    const decision = this.engine.decide({ projectId: request.projectId, accessPointId: request.accessPointId, credentialValue: request.credentialValue, at: scannedAt });
    const uuid = randomUUID();
    const decidedAt = iso(now);
    statement(
      this.db,
      `INSERT INTO access_events (uuid, project_id, access_point_id, access_zone_id, reader_id, credential_id, credential_value, attendee_id, granted, reason, movement, scanned_at, decided_at, source)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      uuid, request.projectId, request.accessPointId, decision.zoneId, request.readerId ?? null, decision.credential?.id ?? null, request.credentialValue,
      decision.attendee?.id ?? null, decision.granted ? 1 : 0, decision.granted ? null : decision.reason, decision.granted ? decision.movement : null, iso(scannedAt), decidedAt, request.source,
    );
    const timestamp = iso(scannedAt);
    if (decision.granted) {
      this.bus.emit('AccessGranted', {
        projectId: request.projectId,
        payload: {
          attendee_id: decision.attendee.id,
          attendee: { first_name: decision.attendee.firstName, last_name: decision.attendee.lastName },
          access_point_id: request.accessPointId,
          access_zone_id: decision.zoneId,
          credential_id: decision.credential.id,
          timestamp,
        },
      });
    } else {
      this.bus.emit('AccessDenied', { projectId: request.projectId, payload: { credential_value: request.credentialValue, access_point_id: request.accessPointId, reason: decision.reason, timestamp } });
    }
    const attendee = decision.attendee ? { id: decision.attendee.id, first_name: decision.attendee.firstName, last_name: decision.attendee.lastName } : null;
    return {
      uuid,
      decision,
      decidedAt,
      answer: decision.granted ? { success: true, access_granted: true, attendee } : { success: true, access_granted: false, reason: decision.reason, attendee },
    };
  }
}
