/**
 * Gives the memory of large buffers back to the allocator now. A Buffer's bytes are freed only
 * once V8 collects the small object that holds them, and with few other objects allocated (a
 * push's bytes are almost all outside the heap) that can be many pushes later: bodies and
 * encoded batches that were done with piled up outside the heap until V8's external-memory
 * trigger collected them. Detaching the ArrayBuffer (a transfer to a new one of no bytes) frees
 * them at once.
 *
 * Only a buffer that is the whole of its own ArrayBuffer, larger than Node's pool (so never a
 * slice of the pool or of another buffer's memory), is released; the caller gives only what
 * nothing reads again: every view of it is empty afterwards.
 */
export function releaseNow(buffers: Iterable<ArrayBufferView>): void {
  for (const bytes of buffers) {
    const memory = bytes.buffer;
    if (!(memory instanceof ArrayBuffer) || memory.detached) continue;
    if (bytes.byteOffset !== 0 || bytes.byteLength !== memory.byteLength || memory.byteLength <= Buffer.poolSize) continue;
    memory.transfer(0);
  }
}
