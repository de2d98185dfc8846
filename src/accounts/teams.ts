import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import type { Database } from '../store/database.js';
import { slugify, uniqueSlug } from './slug.js';
import { statement } from '../store/statements.js';
import { writeTransaction } from '../store/transactions.js';

export const DEFAULT_TEAM_SLUG = 'default';

export interface Team {
  id: number;
  name: string;
  slug: string;
  created_at: string;
  updated_at: string;
}

export class TeamRepository {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  find(id: number): Team | null {
    return (statement(this.db, 'SELECT * FROM teams WHERE id = ?').get(id) as Team | undefined) ?? null;
  }

  findBySlug(slug: string): Team | null {
    return (statement(this.db, 'SELECT * FROM teams WHERE slug = ?').get(slug) as Team | undefined) ?? null;
  }

  list(offset: number, limit: number): { items: Team[]; total: number } {
    const items = statement(this.db, 'SELECT * FROM teams ORDER BY id LIMIT ? OFFSET ?').all(limit, offset) as Team[];
    const { n } = statement(this.db, 'SELECT COUNT(*) AS n FROM teams').get() as { n: number };
    return { items, total: n };
  }

  create(name: string, slug?: string): Team {
    // The free slug is chosen and taken under one write lock.
    return writeTransaction(this.db, () => {
      const chosen = slug ?? uniqueSlug(slugify(name), (s) => this.findBySlug(s) !== null);
      const now = iso(this.clock.now());
      const result = statement(
        this.db,
        'INSERT INTO teams (name, slug, created_at, updated_at) VALUES (?, ?, ?, ?)',
      ).run(name, chosen, now, now);
      return this.find(Number(result.lastInsertRowid))!;
    });
  }
}
