/**
 * ClickHouse expressions that print one download row, so ClickHouse writes every byte and
 * Node only pipes. They read the columns metric_name, ts, value and updated_at of `points`.
 * No formatDateTime (its %M changed meaning across versions) and no DateTime64 (missing on 18.16).
 */

/**
 * `YYYY-MM-DDTHH:MM:SS+0000` in UTC, with `.sss` only when the milliseconds are not zero.
 * toDateTime covers exactly the range uploads accept ([1970-01-01, 2106-01-01), see
 * @meridian/domain's timestamp.ts); 18.16 prints second 0 as `0000-00-00 00:00:00`, hence
 * the constant for the first second. The milliseconds are printed from 1000 + ms to keep
 * their zero padding.
 */
export function isoTimestampSql(column: 'ts' | 'updated_at'): string {
  const ms = `${column} % 1000`;
  const seconds = `if(${column} < 1000, '1970-01-01 00:00:00', toString(toDateTime(intDiv(${column}, 1000)), 'UTC'))`;
  return `concat(replaceOne(${seconds}, ' ', 'T'), if(${ms} = 0, '', concat('.', substring(toString(1000 + ${ms}), 2))), '+0000')`;
}

/**
 * The shortest decimal that reads back as the same double (18.16 and current releases print
 * Float64 this way; 18.16 writes exponents without `+`: 1e21, not JavaScript's 1e+21).
 * Values are finite: uploads reject NaN and infinities.
 */
const VALUE = 'toString(value)';

/**
 * RFC 4180: quoted, with doubled quotes, when the name holds a quote or a comma (names never
 * hold line breaks); also when it holds a semicolon, the separator of spreadsheets in many
 * locales, which would otherwise read the text after it as a cell of its own (a formula, say).
 */
const CSV_NAME = `if(position(metric_name, '"') > 0 OR position(metric_name, ',') > 0 OR position(metric_name, ';') > 0, concat('"', replaceAll(metric_name, '"', '""'), '"'), metric_name)`;

/** A JSON string body: backslash and quote escaped; names hold no control characters, any other character is valid JSON as is. */
const JSON_NAME = `replaceAll(replaceAll(metric_name, '\\\\', '\\\\\\\\'), '"', '\\\\"')`;

export const CSV_HEADER = 'metric_name,timestamp,metric_numeric_value,updated_at';

/** One CSV line without its line end (TabSeparatedRaw adds `\n`). */
export function csvLineSql(): string {
  return `concat(${CSV_NAME}, ',', ${isoTimestampSql('ts')}, ',', ${VALUE}, ',', ${isoTimestampSql('updated_at')})`;
}

/** One JSON object without separators. */
export function jsonObjectSql(): string {
  return (
    `concat('{"metric_name":"', ${JSON_NAME}, '","timestamp":"', ${isoTimestampSql('ts')}, ` +
    `'","metric_numeric_value":', ${VALUE}, ',"updated_at":"', ${isoTimestampSql('updated_at')}, '"}')`
  );
}
