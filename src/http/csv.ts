// CSV cells for the exports (attendees, access events): RFC 4180 quoting, and formula
// neutralisation (OWASP "CSV Injection", ASVS 5.0 1.2.10). Exported values
// come from outside (credential_value is whatever a QR code said), and a spreadsheet runs a cell
// that starts with = + - @ as a formula; it also strips a leading tab, CR or LF (and some a NUL)
// and then runs what follows. Such a cell is prefixed with an apostrophe, which spreadsheets show
// as text. The apostrophe stays in the value for any other reader of the file: the price of a
// file that is safe to double-click.

const FORMULA_START = /^[=+\-@\t\r\n\0]/;
/** Quoted: a quote, the separators of every locale (`,` and `;`), and line breaks or tabs. */
const NEEDS_QUOTES = /[",;\t\r\n]/;

export function csvCell(value: unknown): string {
  let text = value === null || value === undefined ? '' : String(value);
  if (FORMULA_START.test(text)) text = `'${text}`;
  return NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** A whole CSV document: a header row, then one line per row, CRLF line ends (RFC 4180). */
export function csvDocument(header: readonly string[], rows: Iterable<readonly unknown[]>): string {
  const lines = [header.map(csvCell).join(',')];
  for (const row of rows) lines.push(row.map(csvCell).join(','));
  return `${lines.join('\r\n')}\r\n`;
}
