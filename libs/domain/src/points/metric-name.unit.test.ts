import { describe, expect, it } from 'vitest';
import { MAX_METRIC_NAME_LENGTH, metricNameProblem } from './metric-name.ts';

describe('metricNameProblem', () => {
  it('has a limit of 256', () => {
    expect(MAX_METRIC_NAME_LENGTH).toBe(256);
  });

  it.each<[string, string]>([
    ['a', 'one character'],
    ['cpu.load:1m', 'dots and colons'],
    ['a"b\'c', 'quotes'],
    ['a\\b', 'a backslash'],
    ['50%_done', 'percent and underscore'],
    ['with inner spaces', 'inner spaces'],
    [' leading and trailing ', 'outer spaces (kept as written)'],
    ['température', 'a Latin letter with an accent'],
    ['指标', 'CJK letters'],
    ['😀', 'an astral code point'],
    ['a\u00a0b', 'a no-break space (not a control character)'],
    ['a=b+c-d@e', 'formula characters after the first'],
    ['x'.repeat(256), '256 characters'],
    ['😀'.repeat(256), '256 astral code points (512 UTF-16 units)'],
  ])('accepts %j (%s)', (name) => {
    expect(metricNameProblem(name)).toBeNull();
  });

  it.each<[string, string]>([
    ['', 'must not be empty'],
    ['x'.repeat(257), 'must be at most 256 characters (has 257)'],
    ['😀'.repeat(257), 'must be at most 256 characters (has 257)'],
    ['a\u0000b', 'must not contain control characters (U+0000 at character 2)'],
    ['a\tb', 'must not contain control characters (U+0009 at character 2)'],
    ['ab\n', 'must not contain control characters (U+000A at character 3)'],
    ['a\rb', 'must not contain control characters (U+000D at character 2)'],
    ['a\u001fb', 'must not contain control characters (U+001F at character 2)'],
    ['a\u007fb', 'must not contain control characters (U+007F at character 2)'],
    ['a\u0080b', 'must not contain control characters (U+0080 at character 2)'],
    ['😀\u009f', 'must not contain control characters (U+009F at character 2)'],
    ['\tx', 'must not contain control characters (U+0009 at character 1)'],
    ['=SUM(A1:A9)', 'must not start with "=" (spreadsheet formula injection)'],
    ['+1', 'must not start with "+" (spreadsheet formula injection)'],
    ['-cpu', 'must not start with "-" (spreadsheet formula injection)'],
    ['@cpu', 'must not start with "@" (spreadsheet formula injection)'],
    ['a\ud800', 'must be valid Unicode (unpaired surrogate U+D800 at character 2)'],
    ['\ud800a', 'must be valid Unicode (unpaired surrogate U+D800 at character 1)'],
    ['a\udc00b', 'must be valid Unicode (unpaired surrogate U+DC00 at character 2)'],
  ])('rejects %j', (name, problem) => {
    expect(metricNameProblem(name)).toBe(problem);
  });
});
