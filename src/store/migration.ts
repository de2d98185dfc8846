// One schema migration (store/migrations.ts holds them in order; PRAGMA user_version records the
// last one applied). Apart from the lists so that each file of migrations imports only this.

export interface Migration {
  version: number;
  name: string;
  sql: string;
  /** The migration for PostgreSQL (a cloud's store), where translating `sql` cannot say it
   * (store/postgres/dialect.ts): its own statements in PostgreSQL's SQL. */
  postgres?: string;
}
