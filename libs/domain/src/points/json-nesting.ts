/**
 * Tracks how deep the brackets of streamed JSON text nest, outside strings, so a document
 * that nests absurdly deep (50 MB of `[[[[...`) is refused as it arrives, before JSON.parse
 * would build millions of nested arrays. It checks nothing else: JSON.parse does that.
 */
const QUOTE = 34;
const BACKSLASH = 92;
const OPEN_ARRAY = 91;
const OPEN_OBJECT = 123;
const CLOSE_ARRAY = 93;
const CLOSE_OBJECT = 125;

export class JsonNestingMeter {
  private readonly maxDepth: number;
  private depth = 0;
  private inString = false;
  private escaped = false;

  constructor(maxDepth: number) {
    this.maxDepth = maxDepth;
  }

  /** False once the text has nested deeper than maxDepth. */
  feed(text: string): boolean {
    let depth = this.depth;
    let inString = this.inString;
    let escaped = this.escaped;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (inString) {
        if (escaped) escaped = false;
        else if (c === BACKSLASH) escaped = true;
        else if (c === QUOTE) inString = false;
      } else if (c === QUOTE) {
        inString = true;
      } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
        if (++depth > this.maxDepth) return false;
      } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
        depth--;
      }
    }
    this.depth = depth;
    this.inString = inString;
    this.escaped = escaped;
    return true;
  }
}
