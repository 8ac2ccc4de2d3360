/**
 * A tiny multi-line progress renderer for stderr: one line per file or download, redrawn in
 * place at most ten times a second. On anything but a TTY it draws nothing (scripts and logs
 * get only the final report). Our own rather than a library: it needs ANSI cursor-up and
 * erase-line only, and several concurrent lines that some libraries handle only in a separate mode.
 */
export class Progress {
  private readonly lines: string[] = [];
  private drawn = 0;
  private timer: NodeJS.Timeout | null = null;

  private readonly tty: NodeJS.WriteStream | null;

  constructor(tty: NodeJS.WriteStream | null) {
    this.tty = tty;
  }

  /** A line of its own; set() replaces its text. */
  line(initial = ''): { set(text: string): void } {
    const index = this.lines.push(initial) - 1;
    this.schedule();
    return {
      set: (text: string) => {
        this.lines[index] = text;
        this.schedule();
      },
    };
  }

  /** Draws the last state and leaves the cursor below it. */
  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.draw();
  }

  private schedule(): void {
    if (!this.tty || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.draw();
    }, 100);
  }

  private draw(): void {
    if (!this.tty) return;
    const width = Math.max(20, (this.tty.columns || 80) - 1);
    let out = this.drawn > 0 ? `\x1b[${this.drawn}A` : '';
    for (const text of this.lines) out += `\r\x1b[2K${text.length > width ? text.slice(0, width) : text}\n`;
    this.drawn = this.lines.length;
    this.tty.write(out);
  }
}

/** `[#####-----]  50%` for a known total, `[   <=>    ]` when it is not known. */
export function bar(done: number, total: number | null, width = 24): string {
  if (total === null || total <= 0) return `[${' '.repeat(width)}]`;
  const fraction = Math.min(1, done / total);
  const full = Math.round(fraction * width);
  return `[${'#'.repeat(full)}${'-'.repeat(width - full)}] ${String(Math.floor(fraction * 100)).padStart(3)}%`;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}
