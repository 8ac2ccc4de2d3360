import { readFileSync } from 'node:fs';
import { usage as adminUsage } from './commands.ts';
import { replayUsage } from './replay/commands.ts';

/**
 * `meridian --help`, `-h`, `help [COMMAND]`, `COMMAND --help` and `--version`: answered before
 * any setting is read or service reached, so they work anywhere, even with no api running.
 */

const CONNECTION = `Connection (every user command):
  --url URL          the api (else MERIDIAN_URL, else "url" in the config file)
  --api-key KEY      your API key (else MERIDIAN_API_KEY, else "api_key" in the config file)
  config file        $XDG_CONFIG_HOME/meridian/config.json (~/.config/meridian/config.json)
  --json             machine output on stdout`;

const TIMES = `Times: 2024-01-02, 2024-01-02T03:04:05Z (or +hh:mm), now, or relative to now: -1h, now-7d, -30m
  (units s, m, h, d, w).`;

const OUTPUT = `Output files: an existing file is refused unless --force. The bytes go to FILE.meridian-partial
  and replace FILE only once complete: a failed or interrupted command leaves FILE as it was.`;

type Help = {
  readonly usage: string;
  readonly brief: string;
  readonly about: string;
  readonly options?: string;
  readonly notes?: string;
  readonly examples: readonly string[];
};

/** Per command, by its words (`files get`). */
const COMMANDS: Record<string, Help> = {
  upload: {
    brief: 'upload metric files and wait until their points are queryable',
    usage: 'meridian upload FILE... [--metric NAME] [--on-error fail|skip] [--no-wait] [--json]',
    about: 'Upload metric points from files (CSV, NDJSON, JSON; .gz as it is), gzip on the wire, and wait until they are queryable.',
    options: `  --metric NAME      the metric every row belongs to (alias --metrics); needed unless the file names
                     each row's metric (the download layout metric_name,timestamp,...)
  --on-error MODE    fail (default): a bad row fails the file; skip: store the good rows
  --no-wait          print the task ids once the api has the files, do not wait for the tasks`,
    notes: `Uploading the same file the same way again is the same task: nothing is stored twice, and the CLI
says so. After Ctrl-C, run the same command again to resume: files the api already has are not sent
into a second task.`,
    examples: [
      'meridian upload cpu.csv --metric cpu:load',
      'meridian upload day-*.csv.gz --metric cpu:load --on-error skip',
      'meridian upload export.csv            # a download-layout file names its metrics',
    ],
  },
  download: {
    brief: 'download points into one file (or stdout)',
    usage:
      'meridian download --metric NAME [--pattern P] [--from T] [--to T] [--format csv|json] [--latest-only]\n                  [-o FILE] [--force] [--resume] [--page-rows N] [--json]',
    about: 'Download points, page by page, into one file (or stdout).',
    options: `  --metric TEXT      a metric name, a comma-separated list (--pattern list) or the text a pattern
                     applies to (alias --metrics)
  --pattern P        single (default), list, contains, starts_with, ends_with
  --from T, --to T   the time range, inclusive (see Times)
  --format F         csv (default) or json
  --latest-only      one point per timestamp: the latest update
  -o FILE            write to FILE (default: stdout); --force replaces an existing FILE
  --resume           go on from FILE.meridian-resume after an interruption
  --page-rows N      rows per request (MERIDIAN_CLI_DOWNLOAD_PAGE_ROWS)`,
    notes: `${TIMES}\n${OUTPUT}`,
    examples: [
      'meridian download --metric cpu:load --from -1h -o cpu.csv',
      'meridian download --metric cpu: --pattern starts_with --from now-7d --format json -o week.json',
      'meridian download --metric cpu: --pattern starts_with --from now-7d -o week.csv --resume   # after Ctrl-C',
    ],
  },
  delete: {
    brief: 'delete a range of points (rw access needed) and wait until they are gone',
    usage: 'meridian delete --metric TEXT [--pattern P] --from T --to T --reason TEXT [--no-wait] [--json]',
    about:
      'Delete the points of the selected metrics in a time range, as an event in the log (who, when, what, why), and wait until downloads, the catalog and the Prometheus API no longer show them. Points uploaded afterwards are kept, in the range or not.',
    options: `  --metric TEXT      a metric name, a comma-separated list (--pattern list) or the text a pattern
                     applies to, as in a download (alias --metrics); a pattern reaches the metrics you may write
  --pattern P        single (default), list, contains, starts_with, ends_with
  --from T, --to T   the time range, inclusive, both required (see Times)
  --reason TEXT      why; kept in the log
  --no-wait          return once the deletion is accepted`,
    notes: `${TIMES}
A deletion selects at most the api's MERIDIAN_DELETE_MAX_POINTS points; it is not sent again after a lost answer.`,
    examples: [
      "meridian delete --metric cpu:load --from 2024-01-02T13:00:00Z --to 2024-01-02T17:00:00Z --reason 'sensor sent garbage'",
      "meridian delete --metric lab. --pattern starts_with --from 2024-01-01 --to 2024-01-31 --reason 'uploaded twice'",
    ],
  },
  'retention ls': {
    brief: 'list the retention rules (admin)',
    usage: 'meridian retention ls [--json]',
    about: 'List the retention rules: which metrics keep their raw points how long.',
    examples: ['meridian retention ls'],
  },
  'retention set': {
    brief: 'keep the raw points of a prefix or a metric so long (admin)',
    usage: 'meridian retention set (--prefix P | --metric NAME) (--days N | --seconds N) [--json]',
    about:
      'Set how long raw points are kept; older ones are deleted by the ingest worker every MERIDIAN_POINTS_RETENTION_INTERVAL_MS, each time as a deletion in the log. A metric follows its exact rule, else its longest prefix.',
    examples: ['meridian retention set --prefix lab. --days 30', 'meridian retention set --metric cpu:load --days 365'],
  },
  'retention rm': {
    brief: 'remove a retention rule (admin)',
    usage: 'meridian retention rm (--prefix P | --metric NAME) [--json]',
    about: 'Remove a rule: its metrics keep their points from now on; deleted points stay deleted.',
    examples: ['meridian retention rm --prefix lab.'],
  },
  'metrics ls': {
    brief: 'list the metrics you may read',
    usage: 'meridian metrics ls [--metric TEXT] [--pattern P] [--json]',
    about: 'List the metrics you may read, with their point counts and first and last timestamps.',
    options: `  --metric TEXT      a name, a list or the text a pattern applies to, as in a download (alias --metrics)
  --pattern P        single (default with --metric), list, contains, starts_with, ends_with`,
    examples: ['meridian metrics ls', 'meridian metrics ls --metric cpu: --pattern starts_with --json'],
  },
  tasks: {
    brief: 'list your tasks, show one, or wait for one to end',
    usage: 'meridian tasks [TASK_ID] [--status S] [--kind K] [--limit N] [--watch | --wait] [--json]',
    about: 'Your tasks, newest first, or one task with its row errors.',
    options: `  --status S         queued, running, succeeded or failed
  --kind K           metrics_upload, file_definition, points_rebuild or points_deletion
  --limit N          at most N tasks (default 100)
  --watch            refresh until Ctrl-C (one task: until it has ended)
  --wait             with TASK_ID: wait until the task ends; exit 0 if it succeeded, 1 if it failed`,
    examples: ['meridian tasks --status failed', 'meridian tasks 6f1c…e2 --wait && echo stored', 'meridian tasks --watch'],
  },
  'files ls': {
    brief: 'list the files you may see',
    usage: 'meridian files ls [--name-contains TEXT] [--json]',
    about: 'The files you may see: your own and those shared with you.',
    examples: ['meridian files ls', 'meridian files ls --name-contains report --json'],
  },
  'files info': {
    brief: "show one file's size, hash, owner and grants",
    usage: 'meridian files info FILE_ID [--json]',
    about: "One file's entry: name, size, SHA-256, type, owner and (yours) who it is shared with.",
    examples: ['meridian files info 0b7d…41'],
  },
  'files get': {
    brief: 'download a file',
    usage: 'meridian files get FILE_ID [-o FILE|-] [--force] [--json]',
    about: 'Download a file, to its own name in the current directory unless -o FILE (- is stdout).',
    notes: OUTPUT,
    examples: ['meridian files get 0b7d…41', 'meridian files get 0b7d…41 -o report.pdf --force', 'meridian files get 0b7d…41 -o - | less'],
  },
  'files put': {
    brief: 'store a file',
    usage: 'meridian files put FILE [--description TEXT] [--json]',
    about: 'Store a file; prints its id.',
    examples: ['meridian files put report.pdf --description "Q3"'],
  },
  'files rm': {
    brief: 'delete files',
    usage: 'meridian files rm FILE_ID... [--json]',
    about: 'Delete files (yours, or any as an admin).',
    examples: ['meridian files rm 0b7d…41'],
  },
  'files share': {
    brief: "give or take a user's access to a file",
    usage: 'meridian files share FILE_ID USER (--access r|rw | --revoke)',
    about: 'Give a user read (r) or read-write (rw) access to a file, or take it away.',
    examples: ['meridian files share 0b7d…41 bob --access r', 'meridian files share 0b7d…41 bob --revoke'],
  },
};

/** Groups whose words alone show their subcommands. */
const GROUPS: Record<string, string> = {
  files: 'ls, info, get, put, rm, share',
  metrics: 'ls',
  retention: 'ls, set, rm',
};

const ADMIN_GROUPS = new Set(['users', 'keys', 'grant', 'quota']);

function render(h: Help): string {
  return [
    `usage: ${h.usage}`,
    '',
    h.about,
    ...(h.options ? ['', 'Options:', h.options] : []),
    ...(h.notes ? ['', h.notes] : []),
    '',
    'Examples:',
    ...h.examples.map((e) => `  ${e}`),
    '',
    CONNECTION,
    '',
    `All commands: meridian --help. The CLI's README (apps/cli/README.md) has the details.`,
  ].join('\n');
}

export function topHelp(): string {
  const width = 14;
  const line = (name: string) => `  ${name.padEnd(width)}${COMMANDS[name]!.brief}`;
  return [
    'usage: meridian COMMAND [ARGS] [--help]',
    '',
    "Meridian's command line: metrics and files over the api, with an API key.",
    '',
    'Commands:',
    ...Object.keys(COMMANDS).map(line),
    '',
    'Admin commands (talk to Kafka directly; MERIDIAN_* service settings):',
    '  users, keys, grant, quota, replay, events   see meridian help users, meridian help replay',
    '',
    'Examples:',
    '  export MERIDIAN_URL=http://127.0.0.1:8088 MERIDIAN_API_KEY=mrd_…',
    '  meridian upload cpu.csv --metric cpu:load',
    '  meridian download --metric cpu:load --from -1h -o cpu.csv',
    '  meridian tasks --status failed',
    '',
    CONNECTION,
    '',
    'Exit codes: 0 done; 1 a task failed, the api refused or an output file exists;',
    '  2 a usage error or the api could not be reached; 130 interrupted (Ctrl-C).',
    '',
    "meridian help COMMAND (or COMMAND --help) for a command's options and examples; meridian --version.",
  ].join('\n');
}

/** The help of `words` (a command, a group or an admin group); null when it names nothing known. */
export function helpFor(words: readonly string[]): string | null {
  const [first = '', second = ''] = words;
  const two = `${first} ${second}`;
  if (COMMANDS[two]) return render(COMMANDS[two]);
  if (COMMANDS[first]) return render(COMMANDS[first]);
  if (GROUPS[first] !== undefined) {
    const subs = Object.keys(COMMANDS).filter((k) => k.startsWith(`${first} `));
    return [
      `usage: meridian ${first} (${GROUPS[first]}) ...`,
      '',
      ...subs.map((k) => `  meridian ${COMMANDS[k]!.usage.slice('meridian '.length)}\n      ${COMMANDS[k]!.about}`),
      '',
      `meridian help ${first} SUBCOMMAND for options and examples.`,
    ].join('\n');
  }
  if (ADMIN_GROUPS.has(first))
    return `Admin commands (they talk to Kafka directly, with the services' MERIDIAN_* settings):\n${adminUsage}\n\nExamples:\n  meridian users add ada\n  meridian grant ada --prefix cpu: --access rw\n  meridian quota ada 50000000000`;
  if (first === 'replay' || first === 'events')
    return `usage:\n${replayUsage}\n\nExamples:\n  meridian replay list\n  meridian replay rebuild points --swap-if-verified\n  meridian events export --from -1h --format ndjson --out events.ndjson`;
  return null;
}

/** The CLI's version, from its package.json. */
export function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

export type HelpAnswer = { readonly text: string; readonly code: 0 | 2; readonly toStderr: boolean } | null;

/**
 * Whether argv asks for help or the version, and the answer: `--help`/`-h` anywhere before `--`,
 * `help [COMMAND]`, `--version`/`-V` first, or no command at all (the overview, exit 2).
 */
export function helpRequest(argv: readonly string[]): HelpAnswer {
  const end = argv.indexOf('--');
  const args = end < 0 ? argv : argv.slice(0, end);
  if (args[0] === '--version' || args[0] === '-V' || args[0] === 'version') return { text: `meridian ${version()}`, code: 0, toStderr: false };
  if (args.length === 0) return { text: topHelp(), code: 2, toStderr: true };
  const asked = args[0] === 'help' ? args.slice(1) : args.includes('--help') || args.includes('-h') ? args.filter((a) => !a.startsWith('-')) : null;
  if (asked === null) return null;
  if (asked.length === 0) return { text: topHelp(), code: 0, toStderr: false };
  const text = helpFor(asked);
  return text === null ? { text: `meridian: no command ${asked.join(' ')}\n\n${topHelp()}`, code: 2, toStderr: true } : { text, code: 0, toStderr: false };
}
