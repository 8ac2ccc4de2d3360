import { describe, expect, it } from 'vitest';
import { ApiError } from './api-client.ts';
import { inFlags, withFlagNames } from './api-fields.ts';
import { joinDashValues, parseCommand, UserUsageError } from './args.ts';

describe('parseCommand', () => {
  const options = { from: { type: 'string' }, output: { type: 'string', short: 'o' }, force: { type: 'boolean' }, metric: { type: 'string' } } as const;

  it("takes a value that starts with a dash and a digit (-1h) as the option's value", () => {
    expect(joinDashValues(['--from', '-1h', '-o', '-5', '--force', '-x'], options)).toEqual(['--from=-1h', '-o-5', '--force', '-x']);
    expect(parseCommand('download', ['--from', '-1h', '--force'], options).values).toMatchObject({ from: '-1h', force: true });
  });

  it('accepts an alias spelling, and refuses both spellings at once', () => {
    expect(parseCommand('download', ['--metrics', 'cpu'], options, { metrics: 'metric' }).values).toMatchObject({ metric: 'cpu' });
    expect(() => parseCommand('download', ['--metrics', 'a', '--metric', 'b'], options, { metrics: 'metric' })).toThrow('give --metric or --metrics, not both');
  });

  it("says parseArgs' mistakes in the CLI's words, naming the command", () => {
    const mistake = (args: string[]) => {
      try {
        parseCommand('download', args, options);
      } catch (error) {
        expect(error).toBeInstanceOf(UserUsageError);
        return [(error as UserUsageError).message, (error as UserUsageError).command];
      }
      return null;
    };
    expect(mistake(['--bogus'])).toEqual(['unknown option --bogus', 'download']);
    expect(mistake(['--metric'])).toEqual(['--metric needs a value', 'download']);
    expect(mistake(['--force=yes'])).toEqual(['--force takes no value', 'download']);
  });
});

describe("the api's field names in the CLI's flags", () => {
  it('turns parameter names into flags, in fields and in prose, leaving ordinary words alone', () => {
    expect(inFlags('start_date is after end_date')).toBe('--from is after --to');
    expect(inFlags('names more than 100 metrics')).toBe('names more than 100 metrics');
    const error = withFlagNames(
      new ApiError(
        400,
        {
          title: 'invalid request',
          detail: 'start_date: not a time',
          errors: [
            { field: 'query.start_date', reason: 'expected YYYY-MM-DD' },
            { field: 'metrics', reason: 'required' },
          ],
        },
        '',
      ),
    ) as ApiError;
    expect(error.message).toBe('400 invalid request: --from: not a time');
    expect(error.problem?.errors).toEqual([
      { field: '--from', reason: 'expected YYYY-MM-DD' },
      { field: '--metric', reason: 'required' },
    ]);
  });
});
