/**
 * CSV export (RFC 4180): fields with a comma, quote, CR or LF are quoted, quotes doubled. A field
 * that starts with = + - @ (or tab / CR) is prefixed with a quote character so that a spreadsheet
 * opening the export never evaluates a key as a formula (keys come from untrusted callers). Fields
 * with `;` or `=` are quoted too: a spreadsheet in a locale whose list separator is `;` splits an
 * unquoted `a;=cmd()` into a second cell that starts with `=`.
 */
export type CsvValue = string | number | boolean | null | undefined;

const FORMULA_START = /^[=+\-@\t\r]/;

export function csvField(value: CsvValue): string {
  if (value === null || value === undefined) return '';
  let text = String(value);
  if (typeof value === 'string' && FORMULA_START.test(text)) text = `'${text}`;
  return /[",;=\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** A CSV document: header line, then one line per row, CRLF line ends. */
export function toCsv(header: readonly string[], rows: Iterable<readonly CsvValue[]>): string {
  const lines = [header.map(csvField).join(',')];
  for (const row of rows) lines.push(row.map(csvField).join(','));
  return `${lines.join('\r\n')}\r\n`;
}
