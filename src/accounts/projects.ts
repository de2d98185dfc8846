import type { EventBus } from '../events/bus.js';
import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import type { Database } from '../store/database.js';
import { slugify, uniqueSlug } from './slug.js';
import { statement } from '../store/statements.js';
import { writeTransaction } from '../store/transactions.js';

export interface Project {
  id: number;
  team_id: number;
  team_slug: string;
  name: string;
  slug: string;
  timezone: string;
  /** 1: a credential issued with no value is signed (docs/credentials.md). */
  signed_credentials_by_default: number;
  created_at: string;
  updated_at: string;
}

const SELECT = `SELECT p.*, t.slug AS team_slug FROM projects p JOIN teams t ON t.id = p.team_id`;

/** Which projects a user may reach: administrators all; others through a team or a
 * single-project membership. */
export interface Reach {
  userId: number;
  isAdmin: boolean;
}

const REACH_FILTER = `(
  @isAdmin = 1
  OR p.team_id IN (SELECT team_id FROM team_members WHERE user_id = @userId)
  OR p.id IN (SELECT project_id FROM project_members WHERE user_id = @userId)
)`;

export class ProjectRepository {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    /** Announces saved projects (the venue index keeps their time zones).
     * None in the CLI: the running appliance's change poll sees those. */
    private readonly bus?: EventBus,
  ) {}

  find(id: number): Project | null {
    return (statement(this.db, `${SELECT} WHERE p.id = ?`).get(id) as Project | undefined) ?? null;
  }

  findBySlugs(teamSlug: string, projectSlug: string): Project | null {
    const row = statement(this.db, `${SELECT} WHERE t.slug = ? AND p.slug = ?`).get(teamSlug, projectSlug);
    return (row as Project | undefined) ?? null;
  }

  /** Every project with this slug, in any team (slugs are unique per team only). */
  findAllBySlug(projectSlug: string): Project[] {
    return statement(this.db, `${SELECT} WHERE p.slug = ? ORDER BY p.id`).all(projectSlug) as Project[];
  }

  /** Whether the user may reach the project (a member of its team or of it, or an administrator). */
  reachable(projectId: number, reach: Reach): boolean {
    return (
      statement(this.db, `SELECT 1 FROM projects p WHERE p.id = @projectId AND ${REACH_FILTER}`).get({
        projectId,
        userId: reach.userId,
        isAdmin: reach.isAdmin ? 1 : 0,
      }) !== undefined
    );
  }

  /** The project when it exists and the user may reach it; null otherwise (callers answer 404 either way). */
  findReachable(teamSlug: string, projectSlug: string, reach: Reach): Project | null {
    const row = statement(
      this.db,
      `${SELECT} WHERE t.slug = @teamSlug AND p.slug = @projectSlug AND ${REACH_FILTER}`,
    ).get({
      teamSlug,
      projectSlug,
      userId: reach.userId,
      isAdmin: reach.isAdmin ? 1 : 0,
    });
    return (row as Project | undefined) ?? null;
  }

  /** The ids of every project the user may reach. */
  reachableIds(reach: Reach): number[] {
    return statement(this.db, `SELECT p.id FROM projects p WHERE ${REACH_FILTER} ORDER BY p.id`)
      .pluck()
      .all({ userId: reach.userId, isAdmin: reach.isAdmin ? 1 : 0 }) as number[];
  }

  listReachable(reach: Reach, offset: number, limit: number): { items: Project[]; total: number } {
    const params = { userId: reach.userId, isAdmin: reach.isAdmin ? 1 : 0, limit, offset };
    const items = statement(this.db, `${SELECT} WHERE ${REACH_FILTER} ORDER BY p.id LIMIT @limit OFFSET @offset`).all(
      params,
    ) as Project[];
    const { n } = statement(this.db, `SELECT COUNT(*) AS n FROM projects p WHERE ${REACH_FILTER}`).get(params) as {
      n: number;
    };
    return { items, total: n };
  }

  slugTaken(teamId: number, slug: string, exceptId = -1): boolean {
    return (
      statement(this.db, 'SELECT 1 FROM projects WHERE team_id = ? AND slug = ? AND id != ?').get(
        teamId,
        slug,
        exceptId,
      ) !== undefined
    );
  }

  create(input: { teamId: number; name: string; slug?: string | undefined; timezone: string }): Project {
    // The free slug is chosen and taken under one write lock.
    const project = writeTransaction(this.db, () => {
      const slug = input.slug ?? uniqueSlug(slugify(input.name), (s) => this.slugTaken(input.teamId, s));
      const now = iso(this.clock.now());
      const result = statement(
        this.db,
        'INSERT INTO projects (team_id, name, slug, timezone, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
      ).run(input.teamId, input.name, slug, input.timezone, now, now);
      return this.find(Number(result.lastInsertRowid))!;
    });
    this.bus?.emit('project.saved', { projectId: project.id, timezone: project.timezone });
    return project;
  }

  update(
    id: number,
    changes: {
      name?: string | undefined;
      slug?: string | undefined;
      timezone?: string | undefined;
      signed_credentials_by_default?: boolean | undefined;
    },
  ): Project | null {
    const updated = writeTransaction(this.db, () => {
      const current = this.find(id);
      if (!current) return null;
      statement(
        this.db,
        'UPDATE projects SET name = ?, slug = ?, timezone = ?, signed_credentials_by_default = ?, updated_at = ? WHERE id = ?',
      ).run(
        changes.name ?? current.name,
        changes.slug ?? current.slug,
        changes.timezone ?? current.timezone,
        changes.signed_credentials_by_default === undefined
          ? current.signed_credentials_by_default
          : Number(changes.signed_credentials_by_default),
        iso(this.clock.now()),
        id,
      );
      return this.find(id);
    });
    if (updated) this.bus?.emit('project.saved', { projectId: updated.id, timezone: updated.timezone });
    return updated;
  }
}
