/**
 * Gives the memory of large buffers back to the allocator now. A Buffer's bytes are freed only
 * once V8 collects the small object that holds them, and with few other objects allocated (a
 * push's bytes are almost all outside the heap) that can be many pushes later: bodies and
 * encoded batches that were done with piled up outside the heap until V8's external-memory
 * trigger collected them. Detaching the ArrayBuffer (a transfer to a new one of no bytes) frees
 * them at once.
 *
 * Only a buffer that is the whole of its own ArrayBuffer, of at least `smallest` bytes (larger
 * than Node's pool unless asked) and never of the pool's size (a whole view of the pool's memory,
 * which other buffers share), is released: never a slice of the pool or of another buffer's
 * memory. Memory Node does not let go (its pool, a string's bytes) is left to V8. The caller
 * gives only what nothing reads again: every view of it is empty afterwards.
 */
export function releaseNow(buffers: Iterable<ArrayBufferView>, smallest = Buffer.poolSize + 1): void {
  for (const bytes of buffers) {
    const memory = bytes.buffer;
    if (!(memory instanceof ArrayBuffer) || memory.detached) continue;
    if (bytes.byteOffset !== 0 || bytes.byteLength !== memory.byteLength) continue;
    if (memory.byteLength < smallest || memory.byteLength === Buffer.poolSize) continue;
    try {
      memory.transfer(0);
    } catch {
      // Not detachable (Node marks its pool so): V8 frees it when it collects.
    }
  }
}

/**
 * The chunks of a response read from ClickHouse (and buffers joined from them), done with: Node's
 * HTTP parser copies each read (up to 64 KB) into memory of its own, smaller than Node 24's pool
 * (64 KB), so releaseNow's default would keep them all.
 */
export const releaseReadChunks = (buffers: Iterable<ArrayBufferView>): void => releaseNow(buffers, 4096);
