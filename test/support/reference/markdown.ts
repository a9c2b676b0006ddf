/**
 * Markdown for the generated reference: tables, cells, and the splice of a generated section
 * between `<!-- generated:begin NAME -->` and `<!-- generated:end -->` in a hand-written page.
 */

/** A table cell: one line, pipes escaped (also inside code spans, as GitHub's tables need). */
export function cell(text: string): string {
  return text.replace(/\s+/g, ' ').trim().replace(/\|/g, '\\|');
}

/** Code in a cell: backticks that survive a backtick inside. */
export function code(text: string): string {
  const fence = text.includes('`') ? '``' : '`';
  const pad = text.includes('`') ? ' ' : '';
  return cell(`${fence}${pad}${text}${pad}${fence}`);
}

export function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}

export const begin = (name: string) => `<!-- generated:begin ${name} -->`;
export const END = '<!-- generated:end -->';

/**
 * `page` with section `name` replaced by `body`. Throws when the page lacks the markers, naming
 * the page and the section.
 */
export function splice(page: string, pageName: string, name: string, body: string): string {
  const start = page.indexOf(begin(name));
  if (start < 0) throw new Error(`${pageName}: no "${begin(name)}" marker`);
  const from = start + begin(name).length;
  const end = page.indexOf(END, from);
  if (end < 0) throw new Error(`${pageName}: section ${name} has no "${END}" marker`);
  return `${page.slice(0, from)}\n${body}\n${page.slice(end)}`;
}

/** The text of section `name` in `page` (between its markers), or undefined. */
export function section(page: string, name: string): string | undefined {
  const start = page.indexOf(begin(name));
  if (start < 0) return undefined;
  const from = start + begin(name).length;
  const end = page.indexOf(END, from);
  return end < 0 ? undefined : page.slice(from, end).replace(/^\n|\n$/g, '');
}
