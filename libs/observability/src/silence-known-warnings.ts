/**
 * kafkajs 2.2.4 sometimes schedules a timer with a negative delay; Node 22+ then prints a
 * TimeoutNegativeWarning (the timer still fires at once, which is what kafkajs meant).
 * The warning is noise on stderr of every process and of the CLI, so exactly that one is
 * dropped; every other warning still prints.
 */
export function silenceKnownWarnings(): void {
  const emit = process.emitWarning.bind(process);
  process.emitWarning = (warning: string | Error, ...rest: unknown[]) => {
    const type = typeof rest[0] === 'string' ? rest[0] : (rest[0] as { type?: string } | undefined)?.type;
    if (type === 'TimeoutNegativeWarning') return;
    (emit as (w: string | Error, ...r: unknown[]) => void)(warning, ...rest);
  };
}
