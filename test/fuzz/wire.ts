import { connect } from 'node:net';

/**
 * One request's bytes over a fresh TCP connection, ended one of three ways:
 *   whole  every byte sent, the connection left open: the first answer is read to its end
 *   cut    the first `at` bytes sent, then FIN (the client has nothing more to say)
 *   abort  the first `at` bytes sent, then RST once the server had ABORT_AFTER_MS to act on them
 * and what came back: a status (the first answer's, and every status line seen), `closed`
 * (the server closed without a byte of answer), `timeout` (neither answer nor close in time)
 * or `aborted` (the client reset the connection before any answer came).
 */
export type Ending = { kind: 'whole' } | { kind: 'cut'; at: number } | { kind: 'abort'; at: number };

export type Outcome = {
  readonly label: string;
  /** Every status line in what came back (a pipelined leftover may get its own answer). */
  readonly statuses: number[];
  /** The first answer's head and the start of its body, for a report. */
  readonly head: string;
  /** A task the answer accepted (202 with task_id), to be waited for. */
  readonly taskId: string | null;
};

/** How long an abort waits after its last byte before the reset: the server has read them and started on them. */
export const ABORT_AFTER_MS = 15;

export async function exchange(port: number, bytes: Buffer, ending: Ending, timeoutMs: number): Promise<Outcome> {
  const socket = connect({ port, host: '127.0.0.1', noDelay: true });
  const chunks: Buffer[] = [];
  let closed = false;
  let onProgress: () => void = () => undefined;
  socket.on('data', (d: Buffer) => {
    chunks.push(d);
    onProgress();
  });
  socket.on('error', () => {
    /* a reset by the server is an outcome, read from what came */
  });
  const closedP = new Promise<void>((resolve) =>
    socket.once('close', () => {
      closed = true;
      onProgress();
      resolve();
    }),
  );
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
  } catch (error) {
    return { label: `connect failed: ${(error as Error).message}`, statuses: [], head: '', taskId: null };
  }
  const sent = ending.kind === 'whole' ? bytes : bytes.subarray(0, ending.at);
  // Handed to the kernel: an abort resets only after its bytes went out (a reset drops what is still queued here).
  const flushed = new Promise<void>((resolve) => (sent.length > 0 ? socket.write(sent, () => resolve()) : resolve()));

  let timedOut = false;
  const deadline = setTimeout(() => {
    timedOut = true;
    onProgress();
  }, timeoutMs);
  const until = (done: () => boolean) =>
    new Promise<void>((resolve) => {
      onProgress = () => {
        if (done() || closed || timedOut) resolve();
      };
      onProgress();
    });
  if (ending.kind === 'cut') {
    socket.end();
    await until(() => false); // the server answers and closes, or only closes
  } else if (ending.kind === 'whole') {
    await until(() => firstAnswerComplete(Buffer.concat(chunks)));
  } else {
    // An answer or a close ends the wait early: the server acted on the bytes already.
    const answered = until(() => chunks.length > 0);
    await Promise.race([flushed, answered]);
    await Promise.race([answered, closedP, new Promise((r) => setTimeout(r, ABORT_AFTER_MS))]);
  }
  clearTimeout(deadline);
  const answered = chunks.length > 0;
  const wasClosed = closed;
  socket.resetAndDestroy();
  return describe(Buffer.concat(chunks), answered ? 'status' : wasClosed ? 'closed' : ending.kind === 'abort' ? 'aborted' : timedOut ? 'timeout' : 'closed');
}

function describe(raw: Buffer, kind: 'status' | 'closed' | 'aborted' | 'timeout'): Outcome {
  const text = raw.toString('latin1');
  const statuses = [...text.matchAll(/(?:^|\r\n)HTTP\/1\.[01] (\d{3}) /g)].map((m) => Number(m[1]));
  const taskId = /"task_id":"([0-9a-f-]{36})"/.exec(text)?.[1] ?? null;
  if (kind !== 'status') return { label: kind, statuses, head: '', taskId: null };
  // Bytes that are no HTTP answer at all are an outcome of their own.
  // An interim 100 Continue is not the answer: the status after it is.
  const final = statuses.find((s) => s >= 200) ?? statuses[0];
  const label = final !== undefined ? String(final) : 'garbage';
  const at = final === undefined ? 0 : Math.max(0, text.search(new RegExp(`(^|\\r\\n)HTTP/1\\.[01] ${final} `)));
  return { label, statuses, head: text.slice(at, at + 600).replace(/^\r\n/, ''), taskId: final === 202 ? taskId : null };
}

/** Whether the first answer in `raw` is complete: its head, and its body by Content-Length or chunked framing. */
function firstAnswerComplete(raw: Buffer): boolean {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) return false;
  const head = raw.subarray(0, end).toString('latin1');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
  if (status === 100) return firstAnswerComplete(raw.subarray(end + 4));
  if (status === 204 || status === 304) return true;
  const length = /\r\ncontent-length: *(\d+)/i.exec(head)?.[1];
  if (length !== undefined) return raw.length - (end + 4) >= Number(length);
  if (/\r\ntransfer-encoding: *chunked/i.test(head))
    return raw.subarray(end + 4).includes('\r\n0\r\n\r\n') || raw.subarray(end + 4, end + 9).toString() === '0\r\n\r\n';
  return false; // read to the close
}
