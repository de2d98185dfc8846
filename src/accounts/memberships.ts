import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import type { Database } from '../store/database.js';
import type { EventBus } from '../events/bus.js';
import { statement } from '../store/statements.js';

/** What a user was given: whole teams, or single projects (addressed as team/project). */
export interface Grants {
  teams: string[];
  projects: string[];
}

export class MembershipRepository {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    /** Announces a membership taken away, so open connections are checked at once (docs/security.md, attack 1). */
    private readonly bus?: EventBus,
  ) {}

  grantTeam(userId: number, teamId: number): void {
    statement(this.db, 'INSERT OR IGNORE INTO team_members (user_id, team_id, created_at) VALUES (?, ?, ?)').run(
      userId,
      teamId,
      iso(this.clock.now()),
    );
  }

  revokeTeam(userId: number, teamId: number): boolean {
    return this.#removed(
      userId,
      statement(this.db, 'DELETE FROM team_members WHERE user_id = ? AND team_id = ?').run(userId, teamId).changes > 0,
    );
  }

  grantProject(userId: number, projectId: number): void {
    statement(this.db, 'INSERT OR IGNORE INTO project_members (user_id, project_id, created_at) VALUES (?, ?, ?)').run(
      userId,
      projectId,
      iso(this.clock.now()),
    );
  }

  revokeProject(userId: number, projectId: number): boolean {
    return this.#removed(
      userId,
      statement(this.db, 'DELETE FROM project_members WHERE user_id = ? AND project_id = ?').run(userId, projectId)
        .changes > 0,
    );
  }

  #removed(userId: number, removed: boolean): boolean {
    if (removed) this.bus?.emit('permissions.changed', { userId, reason: 'membership_removed' });
    return removed;
  }

  grantsOf(userId: number): Grants {
    const teams = statement(
      this.db,
      'SELECT t.slug FROM team_members m JOIN teams t ON t.id = m.team_id WHERE m.user_id = ? ORDER BY t.slug',
    )
      .pluck()
      .all(userId) as string[];
    const projects = statement(
      this.db,
      `SELECT t.slug || '/' || p.slug FROM project_members m JOIN projects p ON p.id = m.project_id
         JOIN teams t ON t.id = p.team_id WHERE m.user_id = ? ORDER BY 1`,
    )
      .pluck()
      .all(userId) as string[];
    return { teams, projects };
  }
}
