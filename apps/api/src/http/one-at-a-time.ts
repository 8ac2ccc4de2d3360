/**
 * Runs the calls made under one key one after the other, in the order they came (calls under
 * other keys run at once). Holds an entry only while a key has calls running or waiting.
 */
export class OneAtATime {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(key: string, call: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key) ?? Promise.resolve();
    let done!: () => void;
    const mine = new Promise<void>((resolve) => (done = resolve));
    const tail = before.then(() => mine);
    this.tails.set(key, tail);
    try {
      await before;
      return await call();
    } finally {
      done();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
