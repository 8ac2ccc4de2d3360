import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { helpFor, helpRequest, topHelp } from './help.ts';

describe('help and version', () => {
  it('--help, -h and help print the overview on stdout, exit 0; no command prints it on stderr, exit 2', () => {
    for (const argv of [['--help'], ['-h'], ['help']]) expect(helpRequest(argv)).toEqual({ text: topHelp(), code: 0, toStderr: false });
    expect(helpRequest([])).toMatchObject({ code: 2, toStderr: true });
  });

  it('every command and subcommand has help with usage and examples, by --help anywhere or help COMMAND', () => {
    const commands = ['upload', 'download', 'metrics ls', 'tasks', 'files ls', 'files info', 'files get', 'files put', 'files rm', 'files share'];
    for (const command of commands) {
      const text = helpFor(command.split(' '))!;
      expect(text, command).toContain(`usage: meridian ${command}`);
      expect(text, command).toMatch(/Examples:\n {2}meridian /);
      expect(helpRequest([...command.split(' '), '--help'])?.text).toBe(text);
      expect(helpRequest(['help', ...command.split(' ')])?.text).toBe(text);
      expect(topHelp()).toContain(`  ${command}`);
    }
    expect(helpRequest(['download', '--metric', 'cpu', '-h'])?.text).toBe(helpFor(['download']));
    for (const group of ['files', 'metrics', 'users', 'replay']) expect(helpFor([group]), group).not.toBeNull();
    expect(helpRequest(['help', 'nothing'])).toMatchObject({ code: 2, toStderr: true });
    // After --, -h is an argument, not a request for help.
    expect(helpRequest(['upload', '--', '-h'])).toBeNull();
  });

  it("--version prints the version of the CLI's package.json", () => {
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(helpRequest(['--version'])).toEqual({ text: `meridian ${version}`, code: 0, toStderr: false });
  });
});
