import type { Migration } from './migration.js';

// Accounts after the core schema (migrations.ts), in version order.

export const accountMigrations: readonly Migration[] = [
  {
    version: 18,
    name: 'read-only accounts',
    sql: `
      -- A read-only account (docs/auth.md): its sessions act with the read scopes only, and
      -- its tokens are capped to their read scopes (src/auth/abilities.ts effectiveAbilities).
      ALTER TABLE users ADD COLUMN read_only INTEGER NOT NULL DEFAULT 0;
    `,
  },
];
