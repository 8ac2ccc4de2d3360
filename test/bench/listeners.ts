import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * The process listening on a local TCP port, found through /proc: the socket's inode in
 * /proc/net/tcp{,6} (state 0A, LISTEN), then the process holding that socket among its file
 * descriptors. The benches find the stack's Kafka, ClickHouse and MinIO by the ports of their
 * endpoints this way, whichever checkout started them (a pid file is only in that checkout's
 * .var, so a bench run from a worktree found none and left their CPU out of its figures).
 */
function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== '0A') continue;
      if (Number.parseInt(f[1]!.split(':').at(-1)!, 16) === port) inodes.add(f[9]!);
    }
  }
  return inodes;
}

/** The pid of the process listening on `port`, or undefined (none, or not this user's to read). */
export function listeningPid(port: number): number | undefined {
  const inodes = listeningInodes(port);
  if (inodes.size === 0) return undefined;
  const wanted = new Set([...inodes].map((i) => `socket:[${i}]`));
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (wanted.has(readlinkSync(`/proc/${entry}/fd/${fd}`))) return Number(entry);
      } catch {
        /* closed meanwhile */
      }
    }
  }
  return undefined;
}

/** A process's command line, its arguments split. */
export function commandLine(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return [];
  }
}

/** The port of an endpoint: `host:port` (a Kafka broker) or a URL. */
export function portOf(endpoint: string): number {
  const url = URL.canParse(endpoint) && /^[a-z]+:\/\//.test(endpoint) ? new URL(endpoint) : new URL(`tcp://${endpoint}`);
  return Number(url.port);
}
