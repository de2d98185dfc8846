// Set-based statements over a batch of rows, with few distinct texts: each text is prepared once
// per connection and kept (statements.ts), so a statement over n rows is cut into a few sizes
// rather than written for every n. Both stores run the same text (docs/decisions.md: the cloud on
// PostgreSQL): a round trip per statement is what PostgreSQL charges, a batch pays it once.

/** The most rows one statement carries: a whole slice of an upload (sync/upload-apply.ts, 200
 * items) in one. 200 rows of 25 columns is 5,000 bound values, well under SQLite's (32,766) and
 * PostgreSQL's (65,535) limits. */
export const MAX_BATCH = 200;

/** `items` cut into runs of `max`, then of its halves (200 → 200; 150 → 100, 50; 7 → 6, 1): exact,
 * no padding (for inserts, where a repeated row would still cost its insert), a few lengths. */
export function halvingRuns<T>(items: readonly T[], max = MAX_BATCH): T[][] {
  const runs: T[][] = [];
  let at = 0;
  while (at < items.length) {
    let size = max;
    while (size > items.length - at) size >>= 1;
    runs.push(items.slice(at, at + size));
    at += size;
  }
  return runs;
}

/** `items` in runs of at most `max`, each padded to a power of two (at most 256) by repeating its last item
 * (for IN lists and lookups, where a repeat changes nothing). */
export function paddedRuns<T>(items: readonly T[], max = MAX_BATCH): T[][] {
  const runs: T[][] = [];
  for (let at = 0; at < items.length; at += max) {
    const run = items.slice(at, at + max);
    let size = 1;
    while (size < run.length) size <<= 1;
    while (run.length < size) run.push(run[run.length - 1]!);
    runs.push(run);
  }
  return runs;
}

/** `(?, ?, …)` with `n` places. */
export const places = (n: number): string => `(${Array.from({ length: n }, () => '?').join(', ')})`;

/** `n` rows of `row` (a VALUES list's body). */
export const rowsOf = (n: number, row: string): string => Array.from({ length: n }, () => row).join(', ');
