import { createRequire } from 'node:module';

// libpq through the pg-native package: loading it, and ending a connection safely.

/** pg-native's client, as far as the store uses it. */
export interface Native {
  connectSync(connection: string): void;
  querySync(text: string, values?: unknown[]): Record<string, unknown>[];
  prepareSync(name: string, text: string, count: number): void;
  executeSync(name: string, values: unknown[]): Record<string, unknown>[];
  end(cb?: () => void): void;
  pq: { cmdTuples(): string; resultErrorFields(): { sqlState?: string } | null };
}
export type NativeClass = new (options: {
  types: { getTypeParser(oid: number, format?: string): (v: string) => unknown };
}) => Native;

let nativeClass: NativeClass | null = null;
export function native(): NativeClass {
  if (!nativeClass) {
    try {
      nativeClass = createRequire(import.meta.url)('pg-native') as NativeClass;
    } catch (err) {
      throw new Error(
        `PostgreSQL needs the pg-native package and libpq (Debian: libpq5; to build it, libpq-dev): ${(err as Error).message}`,
      );
    }
  }
  return nativeClass;
}

/** Connections ended, held until libuv has finished closing their socket's poll handle. */
const closing = new Set<Native>();

/**
 * Ends a connection. libpq's addon closes its socket's poll handle with uv_close, which libuv
 * completes on a later turn of the loop, and that handle lives inside the connection's object:
 * were the object collected before then, libuv would finish closing freed memory and abort the
 * process (`uv__finish_close: Assertion … UV_HANDLE_CLOSING`). So the object is held a while.
 */
export function endConnection(client: Native): void {
  closing.add(client);
  client.end();
  setTimeout(() => closing.delete(client), 1000).unref();
}
