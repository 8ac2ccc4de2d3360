/**
 * What a table's definition (`create_table_query` of system.tables, as the server writes it)
 * says of its columns and settings: enough to tell whether a migration's codec or setting is in
 * place. Pure.
 */
export type ColumnDefinition = {
  /** The column's definition after its name: type, default, codec, settings. */
  readonly text: string;
  /** It has a CODEC(...) of its own. */
  readonly codec: boolean;
  /** The names of its own SETTINGS (...). */
  readonly settings: ReadonlySet<string>;
};

export type TableDefinition = {
  readonly columns: ReadonlyMap<string, ColumnDefinition>;
  /** The names of the table's SETTINGS. */
  readonly settings: ReadonlySet<string>;
};

/** The names of `a = 1, b = 'x'`. */
export function settingNames(list: string): Set<string> {
  return new Set([...list.matchAll(/(?:^|,)\s*(\w+)\s*=/g)].map((m) => m[1]!));
}

/** A CREATE TABLE's columns by name (from the list in its first parentheses) and its table settings (after that list). */
export function tableDefinition(createTableQuery: string): TableDefinition {
  const { items, tail } = columnList(createTableQuery);
  const columns = new Map<string, ColumnDefinition>();
  for (const item of items) {
    const m = /^\s*`?(\w+)`?\s+([\s\S]*?)\s*$/.exec(item);
    if (!m) continue;
    const text = m[2]!;
    columns.set(m[1]!, {
      text,
      codec: /\bCODEC\s*\(/.test(text),
      settings: settingNames(/\bSETTINGS\s*\(([^)]*)\)/.exec(text)?.[1] ?? ''),
    });
  }
  return { columns, settings: settingNames(/\bSETTINGS\b([\s\S]*)$/.exec(tail)?.[1] ?? '') };
}

/** The items of the first parenthesized list, split at its own commas (not those in parentheses or quotes), and the text after it. */
function columnList(query: string): { items: string[]; tail: string } {
  const open = query.indexOf('(');
  if (open < 0) return { items: [], tail: query };
  const items: string[] = [];
  let depth = 0;
  let quote: string | null = null;
  let start = open + 1;
  for (let i = open + 1; i < query.length; i++) {
    const c = query[i]!;
    if (quote !== null) {
      if (c === '\\') i++;
      else if (c === quote) quote = null;
    } else if (c === "'" || c === '`') quote = c;
    else if (c === '(') depth++;
    else if (c === ')' && depth > 0) depth--;
    else if ((c === ',' && depth === 0) || c === ')') {
      items.push(query.slice(start, i));
      start = i + 1;
      if (c === ')') return { items, tail: query.slice(i + 1) };
    }
  }
  return { items, tail: '' };
}
