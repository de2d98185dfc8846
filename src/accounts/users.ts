import type { Clock } from '../clock.js';
import { iso } from '../clock.js';
import type { Database } from '../store/database.js';
import type { EventBus } from '../events/bus.js';
import { hashPassword } from '../auth/password.js';
import { statement } from '../store/statements.js';

export interface User {
  id: number;
  name: string;
  email: string;
  is_admin: boolean;
  is_active: boolean;
  /** Sessions act with the read scopes only; tokens are capped to theirs (auth/abilities.ts). */
  read_only: boolean;
  created_at: string;
  updated_at: string;
}

interface UserRow extends Omit<User, 'is_admin' | 'is_active' | 'read_only'> {
  password_hash: string;
  is_admin: number;
  is_active: number;
  read_only: number;
}

export interface NewUser {
  name: string;
  email: string;
  password: string;
  is_admin?: boolean | undefined;
  read_only?: boolean | undefined;
}

export interface UserChanges {
  name?: string | undefined;
  email?: string | undefined;
  password?: string | undefined;
  is_admin?: boolean | undefined;
  is_active?: boolean | undefined;
  read_only?: boolean | undefined;
}

const toUser = ({ password_hash: _hash, ...row }: UserRow): User => ({
  ...row,
  is_admin: row.is_admin === 1,
  is_active: row.is_active === 1,
  read_only: row.read_only === 1,
});

export class UserRepository {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    /** Announces deactivation, demotion and deletion, so open connections are checked at once
     * (docs/security.md, attack 1). None in the CLI: the running appliance's periodic re-check sees those. */
    private readonly bus?: EventBus,
  ) {}

  count(): number {
    return (statement(this.db, 'SELECT COUNT(*) AS n FROM users').get() as { n: number }).n;
  }

  countAdmins(): number {
    return (statement(this.db, 'SELECT COUNT(*) AS n FROM users WHERE is_admin = 1').get() as { n: number }).n;
  }

  find(id: number): User | null {
    const row = statement(this.db, 'SELECT * FROM users WHERE id = ?').get(id) as UserRow | undefined;
    return row ? toUser(row) : null;
  }

  /** The user and their password hash, for login only. */
  findWithHash(email: string): { user: User; passwordHash: string } | null {
    const row = statement(this.db, 'SELECT * FROM users WHERE email = ?').get(email) as UserRow | undefined;
    return row ? { user: toUser(row), passwordHash: row.password_hash } : null;
  }

  emailTaken(email: string, exceptId?: number): boolean {
    return (
      statement(this.db, 'SELECT 1 FROM users WHERE email = ? AND id != ?').get(email, exceptId ?? -1) !== undefined
    );
  }

  list(offset: number, limit: number): { items: User[]; total: number } {
    const rows = statement(this.db, 'SELECT * FROM users ORDER BY id LIMIT ? OFFSET ?').all(limit, offset) as UserRow[];
    return { items: rows.map(toUser), total: this.count() };
  }

  async create(input: NewUser): Promise<User> {
    const hash = await hashPassword(input.password);
    const now = iso(this.clock.now());
    const result = statement(
      this.db,
      `INSERT INTO users (name, email, password_hash, is_admin, is_active, read_only, created_at, updated_at)
         VALUES (?, ?, ?, ?, 1, ?, ?, ?)`,
    ).run(input.name, input.email, hash, input.is_admin ? 1 : 0, input.read_only ? 1 : 0, now, now);
    return this.find(Number(result.lastInsertRowid))!;
  }

  async update(id: number, changes: UserChanges): Promise<User | null> {
    const sets: string[] = [];
    const values: unknown[] = [];
    const put = (column: string, value: unknown) => {
      sets.push(`${column} = ?`);
      values.push(value);
    };
    if (changes.name !== undefined) put('name', changes.name);
    if (changes.email !== undefined) put('email', changes.email);
    if (changes.password !== undefined) put('password_hash', await hashPassword(changes.password));
    if (changes.is_admin !== undefined) put('is_admin', changes.is_admin ? 1 : 0);
    if (changes.is_active !== undefined) put('is_active', changes.is_active ? 1 : 0);
    if (changes.read_only !== undefined) put('read_only', changes.read_only ? 1 : 0);
    put('updated_at', iso(this.clock.now()));
    statement(this.db, `UPDATE users SET ${sets.join(', ')} WHERE id = ?`).run(...values, id);
    if (changes.is_active === false) this.bus?.emit('permissions.changed', { userId: id, reason: 'user_deactivated' });
    if (changes.is_admin === false) this.bus?.emit('permissions.changed', { userId: id, reason: 'user_demoted' });
    return this.find(id);
  }

  delete(id: number): boolean {
    const deleted = statement(this.db, 'DELETE FROM users WHERE id = ?').run(id).changes > 0;
    if (deleted) this.bus?.emit('permissions.changed', { userId: id, reason: 'user_deleted' });
    return deleted;
  }
}
