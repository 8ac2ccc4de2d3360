// snappyjs ships no types: the function the decoders call, and the one the tests encode with.
declare module 'snappyjs' {
  /** Uncompresses a snappy block; throws past maxLength (the length the block declares) or on a bad stream. */
  export function uncompress<T extends Uint8Array | ArrayBuffer>(compressed: T, maxLength?: number): T;
  export function compress<T extends Uint8Array | ArrayBuffer>(uncompressed: T): T;
}
