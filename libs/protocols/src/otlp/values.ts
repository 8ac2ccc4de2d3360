import { formatFloat } from './metric-name.ts';

/**
 * An OTLP AnyValue as both decoders read it, and its text as a label value, as the
 * OpenTelemetry-to-Prometheus mapping writes it (pcommon's AsString): a string as is, a bool
 * as true/false, an int in decimal, a double without an exponent, bytes in base64, arrays and
 * maps as JSON.
 */
export type AnyValue =
  | { readonly string: string }
  | { readonly bool: boolean }
  | { readonly int: string }
  | { readonly double: number }
  | { readonly bytes: Uint8Array }
  | { readonly array: AnyValue[] }
  | { readonly map: Array<readonly [string, AnyValue]> }
  | null;

/** How deep arrays and maps may nest in an attribute value. */
export const MAX_VALUE_DEPTH = 8;

function json(v: AnyValue): unknown {
  if (v === null) return null;
  if ('string' in v) return v.string;
  if ('bool' in v) return v.bool;
  if ('int' in v) return Number(v.int);
  if ('double' in v) return Number.isFinite(v.double) ? v.double : formatFloat(v.double);
  if ('bytes' in v) return Buffer.from(v.bytes).toString('base64');
  if ('array' in v) return v.array.map(json);
  return Object.fromEntries(v.map.map(([k, x]) => [k, json(x)]));
}

export function anyValueText(v: AnyValue): string {
  if (v === null) return '';
  if ('string' in v) return v.string;
  if ('bool' in v) return v.bool ? 'true' : 'false';
  if ('int' in v) return v.int;
  if ('double' in v) return formatFloat(v.double);
  if ('bytes' in v) return Buffer.from(v.bytes).toString('base64');
  return JSON.stringify(json(v));
}
