// SQLite's SQL as PostgreSQL reads it (docs/decisions.md: the cloud on PostgreSQL). The services
// keep one SQL, written for SQLite; the few places the two dialects differ are rewritten here,
// once per statement (the result is cached with the prepared statement):
// - parameters: `?` in order, and `@name` / `:name` / `$name` by name, become `$1…$n`;
// - `INSERT OR IGNORE` → `INSERT … ON CONFLICT DO NOTHING`; `INSERT OR REPLACE` → an upsert on
//   the table's primary key (given by the caller, which knows the schema);
// - `MAX(a, b)` / `MIN(a, b)` of two values → `GREATEST` / `LEAST` (SQLite's scalar forms);
// - `a IS b` / `a IS NOT b` of two values → `IS NOT DISTINCT FROM` / `IS DISTINCT FROM`;
// - a column named `offset` (a word PostgreSQL reserves) quoted;
// - `COLLATE NOCASE` → the `nocase` collation the store creates (ICU, case-insensitive);
// and in the schema (migrations): integer types as 64-bit, REAL, BLOB, `WITHOUT ROWID`, and the
// tables whose `INTEGER PRIMARY KEY` SQLite numbers itself (postgres/schema.ts numbers them so).
// Text in quotes and comments is never touched.

export interface Translated {
  text: string;
  /** The parameter names in `$n` order when the SQL names them, else null (positional). */
  names: string[] | null;
  count: number;
}

type Piece = { code: boolean; text: string };

/** The SQL split into code and what is not code (quoted text, identifiers in quotes, comments). */
function pieces(sql: string): Piece[] {
  const out: Piece[] = [];
  let code = '';
  let i = 0;
  const flush = () => {
    if (code) out.push({ code: true, text: code });
    code = '';
  };
  while (i < sql.length) {
    const c = sql[i]!;
    if (c === "'" || c === '"') {
      let j = i + 1;
      for (;;) {
        if (j >= sql.length) break;
        if (sql[j] === c) {
          if (sql[j + 1] === c) j += 2;
          else break;
        } else j++;
      }
      flush();
      out.push({ code: false, text: sql.slice(i, j + 1) });
      i = j + 1;
    } else if (c === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      const j = end === -1 ? sql.length : end;
      flush();
      out.push({ code: false, text: sql.slice(i, j) });
      i = j;
    } else if (c === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      const j = end === -1 ? sql.length : end + 2;
      flush();
      out.push({ code: false, text: sql.slice(i, j) });
      i = j;
    } else {
      code += c;
      i++;
    }
  }
  flush();
  return out;
}

const mapCode = (sql: string, fn: (code: string) => string): string =>
  pieces(sql)
    .map((p) => (p.code ? fn(p.text) : p.text))
    .join('');

/** A statement of the services, for PostgreSQL. `primaryKeys`: table → its key columns (INSERT OR REPLACE). */
export function translate(sql: string, primaryKeys: (table: string) => readonly string[] | undefined): Translated {
  let names: string[] | null = null;
  let count = 0;
  let text = mapCode(sql, (code) =>
    code.replace(
      /\?(\d*)|([@:$])([A-Za-z_][A-Za-z0-9_]*)/g,
      (whole, _n, sigil: string, name: string, offset: number) => {
        if (sigil) {
          // `::type` casts are PostgreSQL's own: a `:` next to another is not a parameter.
          if (sigil === ':' && (code[offset - 1] === ':' || code[offset + 1] === ':')) return whole;
          names ??= [];
          let at = names.indexOf(name);
          if (at === -1) {
            names.push(name);
            at = names.length - 1;
          }
          count = Math.max(count, at + 1);
          return `$${at + 1}`;
        }
        count++;
        return `$${count}`;
      },
    ),
  );
  text = mapCode(text, (code) =>
    quoteReserved(code)
      // SQLite's IS / IS NOT compare any two values, null included: PostgreSQL's IS [NOT] DISTINCT FROM.
      .replace(/\bIS\s+NOT\s+(?!NULL\b|TRUE\b|FALSE\b|DISTINCT\b)/gi, 'IS DISTINCT FROM ')
      .replace(/\bIS\s+(?!NOT\b|NULL\b|TRUE\b|FALSE\b|DISTINCT\b)/gi, 'IS NOT DISTINCT FROM ')
      .replace(/\bCOLLATE\s+NOCASE\b/gi, 'COLLATE nocase'),
  );
  text = mapCode(text, scalarMinMax);
  const ignore = /^\s*INSERT\s+OR\s+IGNORE\s+INTO\b/i;
  const replace = /^\s*INSERT\s+OR\s+REPLACE\s+INTO\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(([^)]*)\)/i;
  if (ignore.test(text)) {
    text = `${text.replace(/^\s*INSERT\s+OR\s+IGNORE\s+INTO\b/i, 'INSERT INTO')} ON CONFLICT DO NOTHING`;
    text = moveReturningLast(text);
  } else {
    const m = replace.exec(text);
    if (m) {
      const table = m[1]!;
      const columns = m[2]!.split(',').map((c) => c.trim());
      const key = primaryKeys(table);
      if (!key) throw new Error(`a replacing insert into ${table}: the table's primary key is not known`);
      const set = columns.filter((c) => !key.includes(c)).map((c) => `${c} = excluded.${c}`);
      text = `${text.replace(/^\s*INSERT\s+OR\s+REPLACE\s+INTO\b/i, 'INSERT INTO')} ON CONFLICT (${key.join(', ')}) DO ${set.length ? `UPDATE SET ${set.join(', ')}` : 'NOTHING'}`;
      text = moveReturningLast(text);
    }
  }
  return { text, names, count };
}

/** A column named with a word PostgreSQL reserves (and SQLite does not): `offset` (the journal's
 * position), quoted where it is a name, not LIMIT's OFFSET (written in capitals, before a value). */
function quoteReserved(code: string): string {
  return code.replace(/\boffset\b(?!\s*[?\d@:$])/g, '"offset"');
}

/** SQLite's MAX(a, b, …) and MIN(a, b, …) of several arguments (not the aggregates of one): GREATEST / LEAST. */
function scalarMinMax(code: string): string {
  let out = '';
  let i = 0;
  const re = /\b(MAX|MIN)\s*\(/gi;
  for (let m = re.exec(code); m; m = re.exec(code)) {
    // The arguments up to the matching parenthesis, counted at the top level.
    let depth = 1;
    let commas = 0;
    let j = m.index + m[0].length;
    for (; j < code.length && depth > 0; j++) {
      if (code[j] === '(') depth++;
      else if (code[j] === ')') depth--;
      else if (code[j] === ',' && depth === 1) commas++;
    }
    if (commas === 0) continue;
    out += `${code.slice(i, m.index)}${m[1]!.toUpperCase() === 'MAX' ? 'GREATEST' : 'LEAST'}(`;
    i = m.index + m[0].length;
  }
  return out + code.slice(i);
}

/** `… RETURNING x ON CONFLICT …` (a clause added after RETURNING) put back in PostgreSQL's order. */
function moveReturningLast(text: string): string {
  const m = /\sRETURNING\s([\s\S]*?)(\sON CONFLICT [\s\S]*)$/i.exec(text);
  if (!m) return text;
  return `${text.slice(0, m.index)}${m[2]} RETURNING ${m[1]}`;
}

export interface SchemaTranslation {
  text: string;
  /** Tables with a column SQLite numbers itself (INTEGER PRIMARY KEY): table → column. */
  rowids: Map<string, string>;
}

/** A migration's schema statements, for PostgreSQL. */
export function translateSchema(sql: string): SchemaTranslation {
  const rowids = new Map<string, string>();
  const text = mapCode(sql, (code) => {
    let out = code;
    for (const m of out.matchAll(/CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*\(([^;]*)/gi)) {
      const column = /(?:^|[(,])\s*([A-Za-z_][A-Za-z0-9_]*)\s+INTEGER\s+PRIMARY\s+KEY\b/i.exec(m[2]!);
      if (column) rowids.set(m[1]!, column[1]!);
    }
    // A table made again under a new name and renamed (SQLite's way to change a table): its numbering follows it.
    for (const m of out.matchAll(
      /ALTER\s+TABLE\s+([A-Za-z_][A-Za-z0-9_]*)\s+RENAME\s+TO\s+([A-Za-z_][A-Za-z0-9_]*)/gi,
    )) {
      const column = rowids.get(m[1]!);
      if (column === undefined) continue;
      rowids.delete(m[1]!);
      rowids.set(m[2]!, column);
    }
    out = quoteReserved(out)
      .replace(/\bPRAGMA\b[^;]*;?/gi, '')
      .replace(/\)\s*WITHOUT\s+ROWID/gi, ')')
      .replace(/\bINTEGER\b/gi, 'BIGINT')
      .replace(/\bREAL\b/gi, 'DOUBLE PRECISION')
      .replace(/\bBLOB\b/gi, 'BYTEA')
      .replace(/\bCOLLATE\s+NOCASE\b/gi, 'COLLATE nocase')
      .replace(/\bDROP\s+TABLE\s+(IF\s+EXISTS\s+)?([A-Za-z_][A-Za-z0-9_]*)/gi, 'DROP TABLE $1$2 CASCADE');
    return out;
  });
  return { text, rowids };
}
