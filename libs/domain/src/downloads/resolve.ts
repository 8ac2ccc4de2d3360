import { notFound } from '../errors.ts';
import type { Pattern } from './params.ts';

/**
 * Which metrics a download reads: the pattern applied to the metric catalog and the caller's
 * entitlements, before any point is read. `single` and `list` name metrics exactly; naming
 * one that does not exist or that the caller may not read gives the same 404 (existence is
 * never revealed). The substring patterns only ever see readable metrics, and may match none.
 */
export function resolveMetricNames(pattern: Pattern, text: string, catalog: Iterable<string>, canRead: (name: string) => boolean): string[] {
  const known = new Set(catalog);
  const pick = (test: (name: string) => boolean) => [...known].filter((n) => canRead(n) && test(n));
  let names: string[];
  switch (pattern) {
    case 'single':
    case 'list': {
      const wanted = pattern === 'single' ? [text] : text.split(',');
      for (const name of wanted) {
        if (name.length === 0 || !known.has(name) || !canRead(name)) throw notFound('no such metric, or not one you may read');
      }
      names = [...new Set(wanted)];
      break;
    }
    case 'contains':
      names = pick((n) => n.includes(text));
      break;
    case 'starts_with':
      names = pick((n) => n.startsWith(text));
      break;
    case 'ends_with':
      names = pick((n) => n.endsWith(text));
      break;
    default: {
      const never: never = pattern;
      return never;
    }
  }
  // ClickHouse orders strings by bytes: so do we, so the names and rows agree.
  return names.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}
