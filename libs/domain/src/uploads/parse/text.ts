/** Text helpers of the upload readers: JSON blanks, and the user's text quoted in a message. */
const SNIPPET_LENGTH = 64;

export const isJsonSpace = (c: number): boolean => c === 32 || c === 10 || c === 13 || c === 9;

export function isJsonBlank(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (!isJsonSpace(text.charCodeAt(i))) return false;
  return true;
}

/** The user's text in a message: JSON-quoted (control characters escaped), shortened. */
export function snippet(text: string): string {
  return JSON.stringify(text.length > SNIPPET_LENGTH ? `${text.slice(0, SNIPPET_LENGTH)}…` : text);
}

export const withText = (reason: string, text: string): string => (text === '' ? reason : `${reason}; got ${snippet(text)}`);

export const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e));
